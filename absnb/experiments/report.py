"""Printing benchmark results."""

from __future__ import annotations

from collections.abc import Sequence


def print_table(
    rows: Sequence[tuple[str, str]], header: tuple[str, str] = ("measure", "value")
) -> None:
    """Print two left-aligned columns."""
    width = max(len(k) for k, _ in [header, *rows])
    for k, v in [header, *rows]:
        print(f"{k:<{width}}  {v}")
