"""The graph view's colours, borders and label size, shared by the graph and its legend."""

from __future__ import annotations

from absnb.i18n import get_language

STATUS_COLOURS: dict[str, str] = {
    "idle": "#ffffff",
    "aligning": "#f7e98e",
    "taken": "#a6d2f0",
    "halted": "#d0d0d0",
    "restoring": "#fcd3a1",
    "failed": "#e69f87",
}
"""Fill colour of a task node per status kind (see
:func:`~absnb.views.graph_text.task_status`): light tints of the Okabe-Ito palette, told apart
by colour-blind viewers and on a washed-out projector. A colour never stands alone: every node
also says its status in words and has a border of its own (:data:`STATUS_BORDERS`)."""

STATUS_BORDERS: dict[str, str] = {
    "idle": 'style="rounded,filled"',
    "aligning": 'style="rounded,filled,dashed" penwidth=2.5',
    "taken": 'style="rounded,filled" peripheries=2',
    "halted": 'style="rounded,filled,dotted" penwidth=2.5',
    "restoring": 'style="rounded,filled,dashed" penwidth=2.5',
    "failed": 'style="rounded,filled,bold" penwidth=4',
}
"""Node attributes per status kind: the shape of the border says what the fill says."""

EDGE_COLOUR = "#555555"
BLOCKED_COLOUR = "#c03c00"
RECORDING_COLOUR = "#0062a0"
BARRIER_COLOUR = "#b35c00"
MARKER_COLOUR = "#7b3294"
FONT_SIZE = 18
"""Point size of labels: drawn at one pixel per point (:mod:`absnb.views.pictures`), 18 px."""

FONTS: dict[str, str] = {
    "en": "Helvetica",
    "ko": '"Noto Sans CJK KR"',
    "zh": '"Noto Sans CJK SC"',
}
"""The graph's font per language, as a DOT value: Graphviz sizes each box from the font's
metrics, so Korean and Chinese labels need a font with their glyphs (Debian's
``fonts-noto-cjk``), and the browser draws the SVG with the same one."""


def font() -> str:
    """The DOT ``fontname`` for the language set (:func:`absnb.set_language`)."""
    return FONTS[get_language()]
