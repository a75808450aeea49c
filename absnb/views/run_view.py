"""``show_run``: a real run drawn from its own event log, in a notebook.

The space-time diagram (:mod:`absnb.views.run_diagram`) and the execution graph at one
moment (:mod:`absnb.views.run_graph`), both as ``<img>`` pictures with ``data:`` URLs, so
an untrusted notebook shows them too, and beside them, if given, the simulator's
diagram of the same job and protocol (:func:`~absnb.views.timeline_static.timeline_svg`).
:meth:`RunView.widget` puts the graph under a time slider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from absnb.core.events import EventRow
from absnb.sim.events import Event
from absnb.sim.world import World
from absnb.views.pictures import img_html
from absnb.views.run_diagram import run_svg
from absnb.views.run_graph import graph_svg


class RunView:
    """A real run's pictures: its diagram, its graph at time ``at``, the simulated run's."""

    def __init__(
        self,
        rows: Sequence[EventRow],
        title: str,
        at: float | None = None,
        simulated: str | None = None,
        window: tuple[float, float] | None = None,
    ) -> None:
        self.rows = list(rows)
        self.title = title
        self.at = interesting_time(self.rows) if at is None else at
        self.simulated = simulated
        self.window = window

    @property
    def svg(self) -> str:
        """The space-time diagram as an SVG document."""
        return run_svg(self.rows, self.title, window=self.window)

    def graph_svg(self, t: float | None = None) -> str:
        """The execution graph at ``t`` seconds (default: :attr:`at`)."""
        return graph_svg(self.rows, self.at if t is None else t)

    def _repr_html_(self) -> str:
        parts = [img_html(self.svg, self.title), img_html(self.graph_svg(), "execution graph")]
        if self.simulated is not None:
            parts.append(img_html(self.simulated, "the same job and protocol, simulated"))
        return "<div>" + "<br/>".join(parts) + "</div>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return {"text/html": self._repr_html_(), "text/plain": f"<real run: {self.title}>"}

    def widget(self) -> Any:
        """The diagram with the execution graph under a time slider (ipywidgets)."""
        import ipywidgets as w

        times = [r.time for r in self.rows]
        slider = w.FloatSlider(
            value=self.at,
            min=min(times, default=0.0),
            max=max(times, default=1.0),
            step=0.01,
            description="time (s)",
            continuous_update=False,
            layout=w.Layout(width="900px"),
        )
        graph = w.HTML(img_html(self.graph_svg(), "execution graph"))

        def redraw(change: dict[str, Any]) -> None:
            graph.value = img_html(self.graph_svg(change["new"]), "execution graph")

        slider.observe(redraw, names="value")
        return w.VBox([w.HTML(img_html(self.svg, self.title)), slider, graph])


def interesting_time(rows: Sequence[EventRow]) -> float:
    """A moment worth showing: inside the first alignment that blocked a channel, else at
    the first snapshot, else the start."""
    for r in rows:
        if r.kind == "block":
            return r.time + 1e-6
    return next((r.time for r in rows if r.kind == "snapshot"), rows[0].time if rows else 0.0)


def show_run(
    run: Any,
    *,
    at: float | None = None,
    simulated: tuple[Sequence[Event], World] | None = None,
    title: str | None = None,
    window: tuple[float, float] | None = None,
) -> RunView:
    """The real run ``run`` (a :class:`~absnb.runtime.spark.SparkRun`, or a log read by
    :func:`absnb.runtime.load_events`) drawn from its own event log: the space-time
    diagram, and the execution graph at ``at`` seconds (default: inside the first
    alignment that blocked). ``simulated`` (a trace and the world it ended in, e.g. a
    :class:`~absnb.sim.stepper.Stepper`'s ``trace`` and ``world``) adds the simulator's
    diagram of the same job and protocol beneath, for comparison. ``window`` (seconds
    from, to) draws only that stretch of the run: a checkpoint close up, say."""
    from absnb.views.timeline_static import timeline_svg

    log = getattr(run, "log", run)
    rows = getattr(log, "rows", None)
    if rows is None:
        raise TypeError(
            f"show_run needs a SparkRun or absnb.runtime.load_events(path), not {run!r:.80}"
        )
    protocol = getattr(run, "protocol", "")
    name = getattr(getattr(run, "graph", None), "name", "")
    heading = title or " ".join(x for x in (name, "with", protocol, "on Spark") if x).strip()
    if heading in ("with on Spark", "on Spark"):
        heading = "the real run"
    sim = None
    if simulated is not None:
        trace, world = simulated
        sim = timeline_svg(trace, world, title="the same, simulated (x: steps)")
    return RunView(rows, heading, at, sim, window)
