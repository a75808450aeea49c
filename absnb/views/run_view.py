"""``show_run``: a real run drawn from its own event log, in a notebook.

The space-time diagram (:mod:`absnb.views.diagram`) and the execution graph at one moment
(:mod:`absnb.views.graph_frame`), each drawn as the simulator's is, both as ``<img>``
pictures with ``data:`` URLs, so an untrusted notebook shows them too. Given a simulated run of the
same job and protocol, the two diagrams stand side by side in two columns, drawn by the
same code in the same colours: the real run's seconds on the left, the simulator's steps
(every message an arrow) on the right.
Each column is :data:`COLUMN` pixels wide, drawn at one pixel per unit when the page
gives it that (a 1280 px screen does), so its smallest labels are 14 px.
:meth:`RunView.widget <absnb.views.RunView.widget>` puts the graph under a time slider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from absnb.core.events import EventRow
from absnb.core.job import Job
from absnb.i18n import gettext as _
from absnb.views.diagram import layout_run
from absnb.views.drawn_run import DrawnRun, real_run
from absnb.views.graph import render_svg as dot_svg
from absnb.views.graph_frame import frame_dot
from absnb.views.pictures import img_html
from absnb.views.run_counterpart import simulate_like
from absnb.views.run_state import run_frame
from absnb.views.simulated import simulated as simulated_run
from absnb.views.timeline_static import render_svg

if TYPE_CHECKING:
    import ipywidgets as w

    from absnb.sim.events import Event
    from absnb.sim.world import World


class _TimeChange(TypedDict):
    """traitlets' change of the time slider's value (seconds)."""

    new: float


COLUMN = 560
"""The width of each column when the real and the simulated run stand side by side."""


class RunView:
    """A real run's pictures: its diagram, its graph at time ``at``, and beside the
    diagram, given its rows, the simulated run's."""

    def __init__(
        self,
        rows: Sequence[EventRow],
        title: str,
        at: float | None = None,
        simulated: DrawnRun | None = None,
        window: tuple[float, float] | None = None,
    ) -> None:
        self.rows = list(rows)
        self.title = title
        self.run = real_run(self.rows, title, window)
        self.window = window
        if at is None:  # a moment in the stretch drawn, if there is one
            shown = [r for r in self.rows if window is None or window[0] <= r.time <= window[1]]
            at = interesting_time(shown or self.rows)
        self.at = at
        self.simulated = simulated

    @property
    def svg(self) -> str:
        """The space-time diagram as an SVG document (a column's width beside a
        simulated run)."""
        width = 1024 if self.simulated is None else COLUMN
        return render_svg(layout_run(self.run, width=width))

    @property
    def simulated_svg(self) -> str | None:
        """The simulated run's space-time diagram, None without one."""
        if self.simulated is None:
            return None
        return render_svg(layout_run(self.simulated, title=_("the same, simulated"), width=COLUMN))

    def diagrams_html(self) -> str:
        """The diagram, or the real and the simulated run's side by side, as ``<img>``."""
        real = img_html(self.svg, self.title)
        sim = self.simulated_svg
        if sim is None:
            return real
        cell = '<div style="flex:1 1 0;min-width:0">'
        return (
            '<div class="absnb-run-beside" style="display:flex;gap:12px;align-items:flex-start">'
            f"{cell}{real}</div>{cell}{img_html(sim, _('the same job and protocol, simulated'))}"
            "</div></div>"
        )

    def graph_svg(self, t: float | None = None) -> str:
        """The execution graph at ``t`` seconds (default: ``at``)."""
        return dot_svg(frame_dot(run_frame(self.rows, self.at if t is None else t)))

    def _repr_html_(self) -> str:
        parts = [self.diagrams_html(), img_html(self.graph_svg(), _("execution graph"))]
        return "<div>" + "<br/>".join(parts) + "</div>"

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, object]:
        return {"text/html": self._repr_html_(), "text/plain": f"<real run: {self.title}>"}

    def widget(self) -> w.VBox:
        """The diagram with the execution graph under a time slider (ipywidgets)."""
        import ipywidgets as w

        times = [r.time for r in self.rows]
        slider = w.FloatSlider(
            value=self.at,
            min=min(times, default=0.0),
            max=max(times, default=1.0),
            step=0.01,
            description=_("time (s)"),
            continuous_update=False,
            layout=w.Layout(width="900px"),
        )
        graph = w.HTML(img_html(self.graph_svg(), _("execution graph")))

        def redraw(change: _TimeChange) -> None:
            graph.value = img_html(self.graph_svg(change["new"]), _("execution graph"))

        slider.observe(redraw, names="value")
        return w.VBox([w.HTML(self.diagrams_html()), slider, graph])


def interesting_time(rows: Sequence[EventRow]) -> float:
    """A moment worth showing: inside the first alignment that blocked a channel, else at
    the first snapshot, else the start."""
    for r in rows:
        if r.kind == "block":
            return r.time + 1e-6
    return next((r.time for r in rows if r.kind == "snapshot"), rows[0].time if rows else 0.0)


def show_run(
    run: object,
    *,
    at: float | None = None,
    simulated: tuple[Sequence[Event], World] | Job | bool | None = None,
    title: str | None = None,
    window: tuple[float, float] | None = None,
) -> RunView:
    """The real run ``run`` (a :class:`~absnb.runtime.SparkRun`, or a log read by
    :func:`absnb.runtime.load_events`) drawn from its own event log: the space-time
    diagram, and the execution graph at ``at`` seconds (default: inside the first
    alignment that blocked, in ``window`` if given). ``simulated`` puts the simulator's
    diagram of the same job and protocol beside it, for comparison: a trace and the world
    it ended in (a :class:`~absnb.sim.stepper.Stepper`'s ``trace`` and ``world``), or
    ``True`` (or a :class:`~absnb.core.job.Job` to simulate) for one made by
    :func:`~absnb.views.run_counterpart.simulate_like` (seed 0). ``window`` (seconds
    from, to) draws only that stretch of the real run: a checkpoint close up, say."""
    log = getattr(run, "log", run)
    rows = getattr(log, "rows", None)
    if rows is None:
        raise TypeError(
            f"show_run needs a SparkRun or absnb.runtime.load_events(path), not {run!r:.80}"
        )
    protocol = getattr(run, "protocol", "")
    name = getattr(getattr(run, "graph", None), "name", "")
    heading = title or (
        _("{job} with {protocol} on Spark").format(job=name, protocol=protocol)
        if name and protocol
        else _("the real run")
    )
    return RunView(rows, heading, at, _simulated_rows(run, simulated), window)


def _simulated_rows(
    run: object, simulated: tuple[Sequence[Event], World] | Job | bool | None
) -> DrawnRun | None:
    """``show_run``'s ``simulated`` as a run to draw, made by :func:`simulate_like` if asked."""
    if simulated is None or simulated is False:
        return None
    if isinstance(simulated, Job) or simulated is True:
        simulated = simulate_like(run, job=simulated if isinstance(simulated, Job) else None)
    if not (isinstance(simulated, tuple) and len(simulated) == 2):
        raise TypeError(
            "show_run's simulated is (stepper.trace, stepper.world), a Job, or True for "
            f"the same job simulated; got {simulated!r:.60}"
        )
    return simulated_run(*simulated)
