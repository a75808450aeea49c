"""The stepper widget: step through a run in a notebook, and compare protocols side by side.

Views observe and never mutate: the widget calls the :class:`~absnb.sim.stepper.Stepper`
(step, back, reset, apply an action) and redraws the graph view, the latest snapshot,
a short trace log and the space-time diagram.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

import ipywidgets as w

from absnb.core.errors import AbsnbError
from absnb.jobs.base import Job
from absnb.sim.actions import Action, Crash, Recover, TriggerCheckpoint
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.views.graph import graph_svg
from absnb.views.tables import snapshot_tables
from absnb.views.timeline import space_time
from absnb.views.transactions import stores_of, transactions_html


def _button(description: str, tooltip: str, style: str = "") -> w.Button:
    return w.Button(
        description=description,
        tooltip=tooltip,
        button_style=style,
        layout=w.Layout(width="auto"),
    )


class _Controls:
    """Step / Back / Play / Reset, the speed slider, and the checkpoint and failure buttons."""

    def __init__(self, tasks: Sequence[str]) -> None:
        self.step = _button("Step", "apply the scheduler's next action", "primary")
        self.back = _button("Back", "undo the last step")
        self.reset = _button("Reset", "back to the start")
        self.play = w.Play(value=0, min=0, max=1_000_000, step=1, interval=700, description="Play")
        self.speed = w.IntSlider(
            value=700, min=100, max=2000, step=100, description="ms / step", continuous_update=False
        )
        w.jslink((self.speed, "value"), (self.play, "interval"))
        self.trigger = _button("Trigger checkpoint", "the coordinator starts a checkpoint", "info")
        self.crash_task = w.Dropdown(
            options=list(tasks), description="task", layout=w.Layout(width="180px")
        )
        self.crash = _button("Crash", "the chosen task fails", "danger")
        self.recover_full = _button(
            "Recover (full)", "restart every task from the latest checkpoint"
        )
        self.recover_partial = _button(
            "Recover (partial)", "restart the failed task and its upstream tasks only"
        )
        self.message = w.HTML()

    def rows(self) -> list[w.Widget]:
        return [
            w.HBox([self.step, self.back, self.play, self.speed, self.reset]),
            w.HBox(
                [self.trigger, self.crash_task, self.crash, self.recover_full, self.recover_partial]
            ),
            self.message,
        ]


class StepperWidget:
    """Step through a simulated run: controls, graph, latest snapshot, trace log, diagram.

    Args:
        stepper: the stepper to drive (a world and its scheduler).
        timeline: show the space-time diagram (redrawn after every step).
        log_lines: how many of the latest events the trace log shows.

    The chooser lists the actions enabled now, so the class can decide which channel
    delivers next; "Do it" applies the chosen one, "Step" lets the scheduler choose.
    """

    def __init__(self, stepper: Stepper, *, timeline: bool = True, log_lines: int = 12) -> None:
        self.stepper = stepper
        self.log_lines = log_lines
        self.controls = _Controls([str(t) for t in stepper.world.graph.tasks])
        self.chooser = w.Dropdown(description="next", layout=w.Layout(width="420px"))
        self.do = _button("Do it", "apply the action chosen on the left", "success")
        self.status = w.HTML()
        self.graph = w.HTML()
        self.snapshot = w.HTML()
        self.log = w.HTML()
        # the external systems' transactions (two-phase-commit sinks), when there are any
        self.transactions = w.HTML() if stores_of(stepper.world) else None
        self.timeline = w.Output() if timeline else None
        c = self.controls
        c.step.on_click(lambda _: self.step())
        c.back.on_click(lambda _: self.back())
        c.reset.on_click(lambda _: self.reset())
        c.play.observe(self._on_play, names="value")
        c.trigger.on_click(lambda _: self.apply(TriggerCheckpoint()))
        c.crash.on_click(lambda _: self.apply(Crash(self.world.graph.task(c.crash_task.value))))
        c.recover_full.on_click(lambda _: self.apply(Recover("full")))
        c.recover_partial.on_click(lambda _: self.apply(Recover("partial")))
        self.do.on_click(lambda _: self._do_chosen())
        panes = [w.VBox([w.HTML("<b>Execution graph</b>"), self.graph])]
        side = w.VBox(
            [
                w.HTML("<b>Latest completed snapshot</b>"),
                self.snapshot,
                *(
                    [w.HTML("<b>Transactions</b>"), self.transactions]
                    if self.transactions is not None
                    else []
                ),
                w.HTML("<b>Trace</b>"),
                self.log,
            ]
        )
        body: list[w.Widget] = [
            *c.rows(),
            w.HBox([self.chooser, self.do]),
            self.status,
            w.HBox([*panes, side]),
        ]
        if self.timeline is not None:
            body.append(self.timeline)
        self.widget = w.VBox(body)
        self.redraw()

    @property
    def world(self) -> World:
        return self.stepper.world

    # -- actions -------------------------------------------------------------------------------
    def step(self) -> None:
        """Let the scheduler choose and apply the next action."""
        self._run(self.stepper.step)

    def back(self) -> None:
        """Undo the last step."""
        self._run(self.stepper.back)

    def reset(self) -> None:
        """Back to the first world."""
        self.controls.play.value = 0
        self._run(self.stepper.reset)

    def apply(self, action: Action) -> None:
        """Apply ``action`` (it must be enabled)."""
        self._run(lambda: self.stepper.step(action))

    def _do_chosen(self) -> None:
        if self.chooser.value is not None:
            self.apply(self.chooser.value)

    def _on_play(self, change: dict[str, Any]) -> None:
        if change["new"] and change["new"] > change["old"]:
            before = len(self.stepper.trace)
            self.step()
            if len(self.stepper.trace) == before:  # nothing left to do: stop playing
                self.controls.play.playing = False

    def _run(self, fn: Any) -> None:
        try:
            result = fn()
        except AbsnbError as e:
            self.controls.message.value = f"<span style='color:#b00'>{html.escape(str(e))}</span>"
            return
        if result is None and fn == self.stepper.step:
            self.controls.message.value = "Nothing left to do: the run is over."
        else:
            self.controls.message.value = ""
        self.redraw()

    # -- drawing ---------------------------------------------------------------------------------
    def redraw(self) -> None:
        """Redraw every view from the stepper's current world and trace."""
        world, trace = self.world, self.stepper.trace
        enabled = world.enabled_actions()
        self.chooser.options = [(str(a), a) for a in enabled]
        self.chooser.value = enabled[0] if enabled else None
        self.controls.back.disabled = not self.stepper.history
        failed = world.failed is not None
        self.controls.crash.disabled = failed
        self.controls.recover_full.disabled = not failed
        self.controls.recover_partial.disabled = not failed
        self.controls.trigger.disabled = not world.can_trigger()
        self.status.value = _status(world)
        self.graph.value = graph_svg(world)
        latest = world.latest_snapshot()
        self.snapshot.value = (
            snapshot_tables(latest, world.graph)._repr_html_() if latest else "<i>none yet</i>"
        )
        if self.transactions is not None:
            self.transactions.value = transactions_html(world)
        lines = [html.escape(e.describe()) for e in trace[-self.log_lines :]]
        self.log.value = (
            "<pre style='font-size:11px;line-height:1.3'>" + "\n".join(lines) + "</pre>"
            if lines
            else "<i>no steps yet</i>"
        )
        if self.timeline is not None:
            self.timeline.outputs = (figure_output(space_time(trace, world)),)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


def figure_output(fig: Any) -> dict[str, Any]:
    """A display-data output for an Output widget holding a plotly figure (the mimetype
    JupyterLab renders offline), built without needing a running IPython shell."""
    return {
        "output_type": "display_data",
        "data": {
            "application/vnd.plotly.v1+json": {**json.loads(fig.to_json()), "config": {}},
            "text/plain": f"<{fig.layout.title.text or 'figure'}>",
        },
        "metadata": {},
    }


def _status(world: World) -> str:
    parts = [f"step {world.clock}", f"protocol {world.protocol.name}"]
    done = [c.checkpoint_id for c in world.coordinator.completed]
    parts.append(f"checkpoints completed: {', '.join(map(str, done)) or 'none'}")
    if world.coordinator.pending:
        parts.append(f"pending: {', '.join(map(str, world.coordinator.pending))}")
    if world.failed is not None:
        parts.append(f"<b style='color:#b00'>{world.failed} has failed</b>")
    elif world.is_finished():
        parts.append("<b>finished</b>")
    return " · ".join(parts)


def stepper_widget(
    job: Job,
    protocol: str = "abs",
    *,
    seed: int = 1,
    checkpoint_interval: int | None = None,
    timeline: bool = True,
    allow_deadlock: bool = False,
) -> StepperWidget:
    """A :class:`StepperWidget` on a new world of ``job``, seeded random scheduling."""
    world = World(
        job, protocol, checkpoint_interval=checkpoint_interval, allow_deadlock=allow_deadlock
    )
    return StepperWidget(Stepper(world, RandomScheduler(seed=seed)), timeline=timeline)


class SideBySide:
    """Several protocols on the same job and the same seeded schedule, stepped together.

    One set of controls steps, backs, resets and triggers every pane; each pane shows its
    protocol's graph, status and latest snapshot, so students see what each records.
    """

    def __init__(self, steppers: Sequence[Stepper]) -> None:
        self.panes = [StepperWidget(s, timeline=False, log_lines=6) for s in steppers]
        first = self.panes[0].world
        self.controls = _Controls([str(t) for t in first.graph.tasks])
        c = self.controls
        c.step.on_click(lambda _: self._each(lambda p: p.step()))
        c.back.on_click(lambda _: self._each(lambda p: p.back()))
        c.reset.on_click(lambda _: self._each(lambda p: p.reset()))
        c.play.observe(self._on_play, names="value")
        c.trigger.on_click(lambda _: self._each(lambda p: p.apply(TriggerCheckpoint())))
        c.crash.on_click(
            lambda _: self._each(lambda p: p.apply(Crash(p.world.graph.task(c.crash_task.value))))
        )
        c.recover_full.on_click(lambda _: self._each(lambda p: p.apply(Recover("full"))))
        c.recover_partial.on_click(lambda _: self._each(lambda p: p.apply(Recover("partial"))))
        columns = [
            w.VBox(
                [
                    w.HTML(f"<h4>{html.escape(p.world.protocol.title)}</h4>"),
                    p.status,
                    p.graph,
                    p.snapshot,
                    p.controls.message,
                ]
            )
            for p in self.panes
        ]
        self.widget = w.VBox([*c.rows(), w.HBox(columns)])

    def _each(self, fn: Any) -> None:
        for pane in self.panes:
            fn(pane)

    def _on_play(self, change: dict[str, Any]) -> None:
        if change["new"] and change["new"] > change["old"]:
            before = [len(p.stepper.trace) for p in self.panes]
            self._each(lambda p: p.step())
            if [len(p.stepper.trace) for p in self.panes] == before:
                self.controls.play.playing = False

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


def compare(
    job: Job,
    protocols: Sequence[str] = ("abs", "chandy-lamport", "synchronous"),
    *,
    seed: int = 1,
    checkpoint_interval: int | None = None,
) -> SideBySide:
    """Side-by-side panes, one per protocol, each with a random scheduler of the same seed."""
    steppers = [
        Stepper(World(job, p, checkpoint_interval=checkpoint_interval), RandomScheduler(seed=seed))
        for p in protocols
    ]
    return SideBySide(steppers)
