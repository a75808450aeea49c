"""What every static picture of a run is drawn with: the space-time diagram's colours
(the Okabe-Ito palette, safe for colour-blind readers), its font, coordinates printed the
same way every time, and its labels."""

from __future__ import annotations

import html

from absnb.views.labels import LABEL_PX

__all__ = [
    "BY_HAND",
    "CONTROL",
    "CUT",
    "FONT",
    "LANE",
    "LOST",
    "OFFENDING",
    "RECORD",
    "RECOVERY",
    "num",
    "text",
]

RECORD = "#0072B2"
CONTROL = "#E69F00"
OFFENDING = "#D55E00"
CUT = "#5E2B97"
BY_HAND = "#000000"
RECOVERY = "#009E73"
LOST = "#8C8C8C"
LANE = "#333333"
FONT = "DejaVu Sans, Verdana, Arial, sans-serif"


def num(v: float) -> str:
    """A coordinate with one decimal, without a trailing ``.0``: deterministic text."""
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def text(x: float, y: float, words: str, *, size: int = LABEL_PX, fill: str = "#111111",
          anchor: str = "middle", weight: str = "normal") -> str:  # fmt: skip
    return (
        f'<text x="{num(x)}" y="{num(y)}" font-size="{size}" fill="{fill}" text-anchor="{anchor}" '
        f'dominant-baseline="central" font-weight="{weight}" stroke="#ffffff" '
        f'stroke-width="5" stroke-linejoin="round" paint-order="stroke">{html.escape(words)}</text>'
    )
