"""The execution graph's in-graph legend: what each node fill and border and each channel
mark means (:func:`absnb.views.graph.to_dot` draws it under the title)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from absnb.views.graph import (
    BARRIER_COLOUR,
    BLOCKED_COLOUR,
    FONT_SIZE,
    MARKER_COLOUR,
    RECORDING_COLOUR,
    STATUS_COLOURS,
)

if TYPE_CHECKING:
    from absnb.sim.world import World

STATUS_WORDS: dict[str, str] = {
    "idle": "not in a snapshot",
    "aligning": "aligning",
    "taken": "state taken",
    "halted": "halted",
    "restoring": "restoring",
    "failed": "failed",
}
"""The legend's word per status kind."""


def legend(world: World) -> str:
    """The in-graph legend: one cell per node status this protocol can show (its fill and
    word), then the channel marks. An HTML-like table."""
    kinds = ["idle", "aligning", "taken"]
    if world.protocol.name == "synchronous":
        kinds = ["idle", "halted"]
    elif world.protocol.name == "chandy-lamport":
        kinds = ["idle", "taken"]
    kinds += ["restoring", "failed"]
    size = FONT_SIZE - 2
    cells = [
        f'<TD BGCOLOR="{STATUS_COLOURS[k]}" BORDER="1"><FONT POINT-SIZE="{size}">'
        f"{STATUS_WORDS[k]}</FONT></TD>"
        for k in kinds
    ]
    marks = (
        f'<FONT COLOR="{BLOCKED_COLOUR}"><B>blocked</B></FONT> · '
        f'<FONT COLOR="{RECORDING_COLOUR}"><B>recorded</B></FONT> · '
        f'<FONT COLOR="{BARRIER_COLOUR}"><B>▌barrier</B></FONT> · '
        f'<FONT COLOR="{MARKER_COLOUR}"><B>◆marker</B></FONT>'
    )
    return (
        '<TABLE BORDER="0" CELLSPACING="3" CELLPADDING="2">'
        f"<TR>{''.join(cells)}</TR>"
        f'<TR><TD COLSPAN="{len(cells)}"><FONT POINT-SIZE="{size}">{marks}</FONT></TD></TR>'
        "</TABLE>"
    )
