"""A simulated run as the pictures draw it: its trace turned into event rows
(:func:`~absnb.sim.event_rows.cached_trace_rows`: a stepper's trace
once, and only the steps added after), the tasks in graph order, the steps shown.

The one place the diagram's modules meet the simulator's trace: everything they draw is
read from :class:`~absnb.core.events.EventRow` s, the vocabulary a real run's log uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core.events import EventRow
from absnb.i18n import gettext as _
from absnb.sim.event_rows import cached_trace_rows
from absnb.sim.events import Event
from absnb.sim.world import World
from absnb.views.drawn_run import DrawnRun


def simulated(trace: Sequence[Event], world: World) -> DrawnRun:
    """``trace`` (which ended in ``world``, a stepper's ``trace`` and ``world``, or a slice
    of the trace) as a run to draw: from the trace's first step to the world's clock."""
    return DrawnRun(
        tuple(cached_trace_rows(trace, world)),
        tuple(world.graph.tasks),
        float(trace[0].step) if trace else float(world.clock),
        float(max(world.clock, trace[-1].step + 1 if trace else 0)),
        _("{job} under {protocol}").format(job=world.graph.name, protocol=world.protocol.name),
    )


def rows_of(trace: Sequence[Event]) -> list[EventRow]:
    """The rows of ``trace`` alone: no snapshot counts, no channel state put back."""
    return cached_trace_rows(trace, None)
