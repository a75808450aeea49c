"""The space-time diagram of a run: one line per task, one arrow per message, one line per cut.

The marks are read from the trace by :mod:`absnb.views.arrows` (re-exported here), laid out
by :mod:`absnb.views.diagram` and drawn either as a plotly figure (:func:`space_time`, by
:mod:`absnb.views.timeline_figure`) or as a static SVG document
(:mod:`absnb.views.timeline_static`). plotly is imported only when a figure is drawn;
nothing changes the trace or the world.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from absnb.views import timeline_static as svg
from absnb.views.arrows import (
    Arrow,
    CrashPoint,
    MessageKind,
    RecoveryPoint,
    SnapshotPoint,
    checkpoint_cuts,
    completion_steps,
    crash_steps,
    message_kind,
    recovery_steps,
    run_arrows,
    snapshot_points,
)
from absnb.views.cut import Cut
from absnb.views.diagram import WIDTH, Diagram, layout_run
from absnb.views.pictures import img_html
from absnb.views.simulated import simulated
from absnb.views.timeline_figure import WEBGL_ARROWS, figure_of

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from absnb.sim.events import Event
    from absnb.sim.world import World

__all__ = [
    "WEBGL_ARROWS",
    "Arrow",
    "CrashPoint",
    "MessageKind",
    "RecoveryPoint",
    "SnapshotPoint",
    "checkpoint_cuts",
    "completion_steps",
    "crash_steps",
    "figure_of",
    "layout",
    "message_arrows",
    "message_kind",
    "recovery_steps",
    "snapshot_points",
    "space_time",
]


def layout(
    trace: Sequence[Event],
    world: World,
    *,
    cuts: Sequence[Cut] | None = None,
    title: str | None = None,
    width: float = WIDTH,
) -> Diagram:
    """The geometry of ``trace`` (ending in ``world``) with ``cuts`` (default: the cut of
    every completed or pending checkpoint of the run), laid out ``width`` pixels wide."""
    return layout_run(simulated(trace, world), cuts=cuts, title=title, width=width)


def message_arrows(trace: Sequence[Event], world: World) -> list[Arrow]:
    """Every message of ``trace``, matched send to delivery, in the order sent.

    Channels are FIFO, so a delivery takes the oldest message still on its channel. A
    recovery discards the messages on every channel into a restarted task and puts the
    snapshot's channel state back in transit there (``restored``). ``world`` is the world
    the trace ended in (``stepper.world``): it holds the completed snapshots.

    Raises:
        ValueError: the trace restores a checkpoint that ``world`` has not completed.
    """
    return run_arrows(simulated(trace, world))


def space_time(
    trace: Sequence[Event],
    world: World,
    *,
    title: str | None = None,
    cuts: Sequence[Cut] | None = None,
) -> go.Figure:
    """The space-time diagram of ``trace`` (ending in ``world``) as a plotly figure.

    One horizontal line per task (in graph order, top to bottom; x is the step). Records
    and barriers (or markers) are arrows told apart by colour and dash; a message still in
    flight is dashed and ends at the current step half way to its receiver; messages
    discarded by a recovery end grey. Each cut (default: every completed or pending
    checkpoint's) is a line through every task's point: channel state crosses it forward,
    an offending message (a cut composed by hand) is drawn thick in vermillion. Crashes,
    recoveries, dropped duplicates and replayed messages are marked. The geometry is
    :func:`absnb.views.diagram.layout_run`'s, the same as the SVG's; the output is
    deterministic.
    """
    return figure_of(layout(trace, world, cuts=cuts, title=title))


class Timeline:
    """A space-time diagram for a notebook: the plotly figure where it can run, the SVG
    picture everywhere else (an untrusted notebook, GitHub, nbviewer)."""

    def __init__(self, diagram: Diagram) -> None:
        self.diagram = diagram

    @property
    def svg(self) -> str:
        """The SVG document."""
        return svg.render_svg(self.diagram)

    def figure(self) -> go.Figure:
        """The interactive plotly figure of the same geometry."""
        return figure_of(self.diagram)

    def _repr_html_(self) -> str:
        return img_html(self.svg, self.diagram.title)

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, object]:
        import json

        fig = self.figure()
        return {
            "application/vnd.plotly.v1+json": {**json.loads(fig.to_json()), "config": {}},
            "text/html": self._repr_html_(),
            "text/plain": f"<space-time diagram: {self.diagram.title}>",
        }


def show_timeline(
    trace: Sequence[Event],
    world: World,
    *,
    cuts: Sequence[Cut] | None = None,
    title: str | None = None,
    width: float = WIDTH,
) -> Timeline:
    """The space-time diagram of ``trace`` for display in a notebook (see
    :class:`~absnb.views.timeline.Timeline`); arguments as for
    :func:`~absnb.views.timeline_static.timeline_svg`."""
    return Timeline(layout(trace, world, cuts=cuts, title=title, width=width))
