"""Bar charts of a table with one row per checkpointing mode, as a static SVG picture.

Each panel is one column of the table (checkpoint duration, alignment, in-flight data,
duplicates after a failure), with one bar per mode, its value written beside it. The
picture is an ``<img>`` with a ``data:`` URL (:func:`charts_html`), so a notebook shows it
even when it is not trusted, and it needs no plotting library.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from absnb.i18n import gettext as _
from absnb.views.pictures import img_html

if TYPE_CHECKING:
    import pandas as pd

COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")
"""One color per row (mode), the same in every panel."""

_PANEL_W, _BAR_H, _GAP, _LABEL_W, _TOP = 330, 18, 6, 120, 34


def _number(value: float) -> str:
    if value.is_integer() or abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _values(table: pd.DataFrame, column: str) -> list[float]:
    out = []
    for v in table[column]:
        f = float(v) if v is not None else math.nan
        out.append(0.0 if math.isnan(f) else f)
    return out


def _panel(table: pd.DataFrame, column: str, caption: str, x: int, labels: list[str]) -> str:
    values = _values(table, column)
    top = max(values) or 1.0
    width = _PANEL_W - _LABEL_W - 60
    parts = [
        f'<text x="{x}" y="18" font-size="13" font-weight="bold">{html.escape(_(caption))}</text>'
    ]
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = _TOP + i * (_BAR_H + _GAP)
        w = max(1.0, width * value / top) if value else 0.0
        parts += [
            f'<text x="{x + _LABEL_W - 6}" y="{y + 13}" font-size="12" '
            f'text-anchor="end">{html.escape(label)}</text>',
            f'<rect x="{x + _LABEL_W}" y="{y}" width="{w:.1f}" height="{_BAR_H}" '
            f'fill="{COLORS[i % len(COLORS)]}"/>',
            f'<text x="{x + _LABEL_W + w + 4:.1f}" y="{y + 13}" font-size="12">'
            f"{_number(value)}</text>",
        ]
    return "\n".join(parts)


def charts_svg(
    table: pd.DataFrame,
    panels: Sequence[tuple[str, str]],
    *,
    label: str = "mode",
    columns: int = 2,
) -> str:
    """An SVG of ``panels`` (``(column, caption)`` pairs), ``columns`` panels a row.

    Raises:
        KeyError: a panel names a column the table does not have; the message lists them.
    """
    for column, _caption in (*panels, (label, "")):
        if column not in table.columns:
            raise KeyError(
                f"the table has no column {column!r}: it has {', '.join(map(str, table.columns))}"
            )
    labels = [str(v) for v in table[label]]
    panel_h = _TOP + len(labels) * (_BAR_H + _GAP) + 10
    rows = -(-len(panels) // columns)
    width, height = columns * _PANEL_W, rows * panel_h
    body = []
    for k, (column, caption) in enumerate(panels):
        r, c = divmod(k, columns)
        body.append(
            f'<g transform="translate(0,{r * panel_h})">'
            f"{_panel(table, column, caption, c * _PANEL_W + 4, labels)}</g>"
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">'
        f'<rect width="{width}" height="{height}" fill="white"/>' + "\n".join(body) + "</svg>"
    )


def charts_html(
    table: pd.DataFrame,
    panels: Sequence[tuple[str, str]],
    alt: str,
    *,
    label: str = "mode",
    columns: int = 2,
) -> str:
    """:func:`charts_svg` as an ``<img>`` with a ``data:`` URL (shown in untrusted notebooks);
    the captions and ``alt`` in the language set."""
    return img_html(charts_svg(table, panels, label=label, columns=columns), _(alt))
