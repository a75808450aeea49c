"""The execution graph's in-graph legend: what each node fill and border and each channel
mark means (:func:`absnb.views.graph.to_dot` draws it under the title)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from absnb.core.messages import Marker
from absnb.i18n import gettext as _
from absnb.views.palette import (
    BARRIER_COLOUR,
    BLOCKED_COLOUR,
    FONT_SIZE,
    MARKER_COLOUR,
    RECORDING_COLOUR,
    STATUS_COLOURS,
)

if TYPE_CHECKING:
    from absnb.sim.world import World


def status_word(kind: str) -> str:
    """The legend's word for a status kind, in the language set."""
    words = {
        "idle": _("not in a snapshot"),
        "aligning": _("aligning"),
        "taken": _("state taken"),
        "halted": _("halted"),
        "restoring": _("restoring"),
        "failed": _("failed"),
    }
    return words[kind]


def legend(world: World) -> str:
    """The in-graph legend: one cell per node status this protocol can show (its fill and
    word), then the channel marks it can draw, all asked of the protocol's capabilities."""
    can = world.protocol.capabilities
    if can.max_concurrent == 0:  # takes no checkpoints
        kinds = ["idle"]
    elif can.halts_sources:
        kinds = ["idle", "aligning", "halted"]
    elif can.records_channel_state and not can.blocks_inputs:
        kinds = ["idle", "taken"]  # the state is taken at the first marker or barrier
    else:
        kinds = ["idle", "aligning", "taken"]
    kinds += ["restoring", "failed"]
    size = FONT_SIZE - 2
    cells = [
        f'<TD BGCOLOR="{STATUS_COLOURS[k]}" BORDER="1"><FONT POINT-SIZE="{size}">'
        f"{status_word(k)}</FONT></TD>"
        for k in kinds
    ]
    marks = []
    if can.blocks_inputs:
        blocked = _("blocked")
        marks.append(f'<FONT COLOR="{BLOCKED_COLOUR}"><B>{blocked}</B></FONT>')
    if can.records_channel_state:
        recorded = _("recorded")
        marks.append(f'<FONT COLOR="{RECORDING_COLOUR}"><B>{recorded}</B></FONT>')
    if can.max_concurrent != 0 and can.message is Marker:
        marks.append(f'<FONT COLOR="{MARKER_COLOUR}"><B>◆marker</B></FONT>')
    elif can.max_concurrent != 0:
        marks.append(f'<FONT COLOR="{BARRIER_COLOUR}"><B>▌barrier</B></FONT>')
    rows = [f"<TR>{''.join(cells)}</TR>"]
    if marks:
        rows.append(
            f'<TR><TD COLSPAN="{len(cells)}"><FONT POINT-SIZE="{size}">{" · ".join(marks)}'
            "</FONT></TD></TR>"
        )
    return f'<TABLE BORDER="0" CELLSPACING="3" CELLPADDING="2">{"".join(rows)}</TABLE>'
