"""The command line every generator here shares: an output folder and a seed."""

from __future__ import annotations

import argparse
from pathlib import Path

HERE = Path(__file__).resolve().parent


def arguments(doc: str, writes: str, seed: int, argv: list[str] | None) -> argparse.Namespace:
    """Parse ``[out_dir] [--seed N]``; ``writes`` names what the script writes there."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument(
        "out_dir",
        nargs="?",
        type=Path,
        default=HERE,
        help=f"folder to write {writes} into (default: the datasets/ folder)",
    )
    parser.add_argument("--seed", type=int, default=seed, help=f"the seed (default {seed})")
    return parser.parse_args(argv)
