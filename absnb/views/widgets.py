"""The stepper widget: step through a run in a notebook, and compare protocols.

Views observe and never mutate: the widget calls the :class:`~absnb.sim.stepper.Stepper`
(step, back, reset, apply an action) and redraws the graph view, the latest snapshot,
a short trace log and the space-time diagram.

Laid out for a projector (issue 11): controls, then the graph at the width of the cell
(never wider), then the side panels below it; ``present=True`` puts the graph first and
enlarges everything. The go-to-step slider moves through the run in constant time per
step (Back pops the stepper's history; forward replays the steps undone, then asks the
scheduler). Every frame is also a static picture in the widget's output, so a notebook
saved with it shows the graph before anything runs, even untrusted.
"""

from __future__ import annotations

import html
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypedDict

import ipywidgets as w

from absnb.core.errors import AbsnbError
from absnb.core.job import Job
from absnb.i18n import checked, in_own_language, speaking
from absnb.i18n import gettext as _
from absnb.sim.actions import Action, Crash, Recover, TriggerCheckpoint
from absnb.sim.events import Event
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.trace import load_trace, save_trace
from absnb.sim.world import World
from absnb.views.controls import (
    GOTO_AHEAD,
    Bundle,
    Controls,
    IntChange,
    button,
    choice_label,
    crash_note,
)
from absnb.views.controls import keyboard_html as _keyboard_html
from absnb.views.graph import DotOptions, render_svg_fast, to_dot
from absnb.views.pictures import data_url, fit_svg, img_html
from absnb.views.tables import snapshot_tables
from absnb.views.transactions import stores_of, transactions_html

STICKY_CSS = (
    "<style>.absnb-stepper{overflow:visible!important}"
    ".absnb-stepper .absnb-controls{position:sticky;top:0;z-index:10;"
    "background:var(--jp-layout-color0,#ffffff);border-bottom:1px solid #d0d0d0}"
    ".absnb-stepper.absnb-present .absnb-controls{top:auto;bottom:0;border-bottom:none;"
    "border-top:1px solid #d0d0d0}"
    ".jp-OutputArea:has(.absnb-controls),.jp-OutputArea-child:has(.absnb-controls),"
    ".jp-OutputArea-output:has(.absnb-controls){overflow:visible}</style>"
)
"""The first row of controls (Step, Back, Play, go to step) stays at the top of the
notebook's view while a tall graph scrolls under it (at the bottom in the presentation
layout, where the graph comes first), so on a 720-pixel projector Step and Back are never
scrolled away; one row, so it hides little of the graph."""

PANEL_FONT = {False: "15px", True: "20px"}
"""Font size of the snapshot, trace and transactions panels (normal, presentation)."""


def diagram_svg(trace: Sequence[Event], world: World) -> str:
    """The space-time diagram the widget shows, as SVG text (one place to switch how it is
    drawn; the static SVG redraws in a few milliseconds, plotly in a few hundred)."""
    from absnb.views.timeline_static import timeline_svg

    return timeline_svg(trace, world)


def _status(world: World) -> str:
    parts = [
        _("step {n}").format(n=world.clock),
        _("protocol {name}").format(name=world.protocol.name),
    ]
    done = ", ".join(str(c.checkpoint_id) for c in world.coordinator.completed)
    parts.append(_("checkpoints completed: {ids}").format(ids=done or _("none")))
    if world.coordinator.pending:
        pending = ", ".join(map(str, world.coordinator.pending))
        parts.append(_("pending: {ids}").format(ids=pending))
    if world.failed is not None:
        failed = _("{task} has failed").format(task=world.failed)
        parts.append(f"<b style='color:#c03c00'>✖ {failed}</b>")
    elif world.is_finished():
        finished = _("finished")
        parts.append(f"<b>{finished}</b>")
    return " · ".join(parts)


COMPACT: DotOptions = {
    "with_legend": False,
    "max_messages": 2,
    "max_state_items": 2,
    "short": True,
}
""":func:`~absnb.views.graph.to_dot` options for a compact graph: no legend, two messages
per edge, two state items per node, short labels."""


def panel(title: str, body: w.Widget, min_width: str = "260px") -> w.VBox:
    """A titled box for the row of panels under the graph (``min_width="0"``: as narrow as
    its container, its text wrapping and a wide table scrolling instead of being cut)."""
    body.layout = w.Layout(overflow="auto")
    box = w.VBox(
        [w.HTML(f"<b>{html.escape(title)}</b>"), body],
        layout=w.Layout(margin="0 24px 8px 0", min_width=min_width),
    )
    box.add_class("absnb-panel")
    return box


class UploadedFile(TypedDict):
    """A file of ipywidgets' FileUpload value (the keys read here)."""

    name: str
    content: memoryview


class UploadChange(TypedDict):
    """traitlets' change of a FileUpload's value: the files chosen."""

    new: tuple[UploadedFile, ...]


class StepperWidget:
    """Step through a simulated run: controls, graph, latest snapshot, trace, diagram.

    Args:
        stepper: the stepper to drive (a world and its scheduler).
        timeline: show the space-time diagram (redrawn after every step).
        log_lines: how many of the latest events the trace log shows.
        present: presentation layout: the graph first, bigger buttons and panels.
        lang: the widget's language (``"en"``, ``"ko"``, ``"zh"``) whatever
            :func:`absnb.set_language` sets; None speaks the language set.

    The chooser lists the actions enabled now, each delivery with the message at the head
    of its channel; "Do it" applies the chosen one, "Step" lets the scheduler choose.
    """

    _count = 0

    def __init__(
        self,
        stepper: Stepper,
        *,
        timeline: bool = True,
        log_lines: int = 12,
        present: bool = False,
        compact: bool = False,
        lang: str | None = None,
    ) -> None:
        self.lang = None if lang is None else checked(lang)
        with speaking(self.lang):
            self._build(stepper, timeline, log_lines, present, compact)

    def _build(
        self, stepper: Stepper, timeline: bool, log_lines: int, present: bool, compact: bool
    ) -> None:
        self.stepper = stepper
        self.log_lines = log_lines
        self.present = present
        self.compact = compact
        """Draw the graph without its legend and with fewer messages per edge (the panes
        of :func:`~absnb.views.side_by_side.compare`, which sit side by side)."""
        self.redo: list[Action] = []
        """Actions undone by Back or the slider, latest last: Step and the slider take
        them again before asking the scheduler."""
        self.svg = ""
        """The graph as SVG text, as last drawn."""
        self._syncing = False
        StepperWidget._count += 1
        root_class = f"absnb-stepper-{StepperWidget._count}"
        c = self.controls = Controls([str(t) for t in stepper.world.graph.tasks], big=present)
        self.chooser = w.Dropdown(description=_("next"), layout=w.Layout(width="460px"))
        self.do = button(_("Do it"), _("apply the action chosen on the left"), "success")
        self.status = w.HTML()
        self.graph = w.HTML()
        self.graph.add_class("absnb-graph")
        self.snapshot = w.HTML()
        self.log = w.HTML()
        self.transactions = w.HTML() if stores_of(stepper.world) else None
        self.timeline: w.HTML | None = None
        if timeline:
            self.timeline = w.HTML()
        self.files = self._file_tools()
        c.step.on_click(lambda _: self.step())
        c.back.on_click(lambda _: self.back())
        c.reset.on_click(lambda _: self.reset())
        c.play.observe(self._on_play, names="value")
        c.goto.observe(self._on_goto, names="value")
        c.trigger.on_click(lambda _: self.apply(TriggerCheckpoint()))
        c.crash.on_click(lambda _: self.apply(Crash(self.world.graph.task(c.crash_task.value))))
        c.recover_full.on_click(lambda _: self.apply(Recover("full")))
        c.recover_partial.on_click(lambda _: self.apply(Recover("partial")))
        self.do.on_click(lambda _: self._do_chosen())
        panels = [
            panel(_("Latest completed snapshot"), self.snapshot),
            *([panel(_("Transactions"), self.transactions)] if self.transactions else []),
            panel(_("Trace (latest last)"), self.log),
        ]
        below = w.HBox(panels, layout=w.Layout(flex_flow="row wrap"))
        keys = w.HTML(_keyboard_html(root_class) + STICKY_CSS)
        rows = c.rows()
        rows[0].add_class("absnb-controls")  # Step, Back, Play, go to: always in view
        controls = [*rows, w.HBox([self.chooser, self.do]), self.status]
        graph = [self.graph]
        body = [*graph, *controls] if present else [*controls, *graph]
        body += [below, self.files, keys]
        if self.timeline is not None:
            body.append(self.timeline)
        self.widget = w.VBox(body, layout=w.Layout(width="100%"))
        self.widget.add_class("absnb-stepper")
        self.widget.add_class(root_class)
        if present:
            self.widget.add_class("absnb-present")
        self._font = PANEL_FONT[present]
        self.redraw()

    @property
    def world(self) -> World:
        return self.stepper.world

    # -- actions -------------------------------------------------------------------------------
    def step(self) -> None:
        """Take the next step: one undone by Back, else the scheduler's choice. After a
        crash Step does not recover: it says so, and the Recover buttons decide."""
        if self.redo:
            self._run(lambda: self.stepper.step(self.redo.pop()))
        elif self.world.failed is not None:
            self.controls.message.value = crash_note(self.world)
        else:
            self._run(self.stepper.step, nothing_left=_("Nothing left to do: the run is over."))

    def back(self) -> None:
        """Undo the last step (Step takes it again)."""
        self._run(self._back_one)

    def _back_one(self) -> Event | None:
        event = self.stepper.back()
        if event is not None:
            self.redo.append(event.action)
        return event

    def reset(self) -> None:
        """Back to the first world, forgetting the run."""
        self.controls.play.value = 0
        self.redo.clear()
        self._run(self.stepper.reset)

    def apply(self, action: Action) -> None:
        """Apply ``action`` (it must be enabled); the steps undone before are forgotten."""
        self.redo.clear()
        self._run(lambda: self.stepper.step(action))

    def goto(self, n: int) -> None:
        """Go to step ``n`` of the run: back (a constant-time pop a step) or forward (the
        undone steps again, then the scheduler's choices), redrawing once at the end."""
        if n < 0:
            raise ValueError(f"step must be 0 or more, not {n}")

        def move() -> str:
            while len(self.stepper.trace) > n:
                self._back_one()
            while len(self.stepper.trace) < n:
                if self.redo:
                    self.stepper.step(self.redo.pop())
                elif self.world.failed is not None:
                    return crash_note(self.world)
                elif self.stepper.step() is None:
                    return _("The run is over after step {n}.").format(n=len(self.stepper.trace))
            return ""

        self._run(move)

    def _do_chosen(self) -> None:
        if self.chooser.value is not None:
            self.apply(self.chooser.value)

    def _on_play(self, change: IntChange) -> None:
        if change["new"] and change["new"] > change["old"]:
            before = len(self.stepper.trace)
            self.step()
            if len(self.stepper.trace) == before:  # nothing left to do, or a crash
                self.controls.play.playing = False

    def _on_goto(self, change: IntChange) -> None:
        if not self._syncing and change["new"] != len(self.stepper.trace):
            self.goto(change["new"])

    @in_own_language
    def _run(self, fn: Callable[[], object], nothing_left: str = "") -> None:
        try:
            result = fn()
        except AbsnbError as e:
            self.controls.message.value = (
                f"<span style='color:#c03c00'>{html.escape(str(e))}</span>"
            )
            return
        if isinstance(result, str):
            self.controls.message.value = result
        elif result is None and nothing_left:
            self.controls.message.value = nothing_left
        elif self.world.failed is not None:
            self.controls.message.value = crash_note(self.world)
        else:
            self.controls.message.value = ""
        self.redraw()

    # -- files -----------------------------------------------------------------------------
    def _file_tools(self) -> w.Widget:
        self.path = w.Text(
            value=f"{self.world.graph.name}-{self.world.protocol.name}.trace.jsonl",
            description=_("trace file"),
            layout=w.Layout(width="360px"),
        )
        save = button(_("Save trace"), _("write the run so far to the trace file"))
        load = button(_("Load trace"), _("read the trace file: Step and the slider replay it"))
        export = button(_("Export SVG"), _("links to the graph (and diagram) as SVG files"))
        self.upload = w.FileUpload(accept=".jsonl,.json", description=_("Upload trace"))
        self.links = w.HTML()
        save.on_click(lambda _: self._file_action(lambda: self.save_trace(self.path.value)))
        load.on_click(lambda _: self._file_action(lambda: self.load_trace(self.path.value)))
        export.on_click(lambda _: self._export_links())
        self.upload.observe(self._on_upload, names="value")
        return w.VBox(
            [
                w.HBox(
                    [self.path, save, load, self.upload, export],
                    layout=w.Layout(flex_flow="row wrap"),
                ),
                self.links,
            ]
        )

    @in_own_language
    def _file_action(self, fn: Callable[[], str]) -> None:
        try:
            self.links.value = html.escape(fn())
        except (AbsnbError, OSError) as e:
            self.links.value = f"<span style='color:#c03c00'>{html.escape(str(e))}</span>"

    def save_trace(self, path: str | Path) -> str:
        """Write the run so far as a trace file (``absnb replay`` and :meth:`load_trace`
        read it); returns what was done."""
        s = self.stepper
        save_trace(path, s.initial, s.actions, s.trace, info={"scheduler": repr(s.scheduler)})
        return _("saved {n} steps to {path}").format(n=len(s.trace), path=path)

    def load_trace(self, path: str | Path) -> str:
        """Start over on a trace file's world, with its actions to be replayed by Step and
        the slider (then the scheduler goes on); returns what was done.

        Raises:
            TraceFormatError: the file is not a valid trace.
        """
        trace = load_trace(path)
        self.stepper = Stepper(trace.world, self.stepper.scheduler)
        self.redo = list(reversed(trace.actions))
        self.controls.crash_task.options = [str(t) for t in trace.world.graph.tasks]
        self.redraw()
        return _("loaded {n} steps from {path}: Step or the slider replays them").format(
            n=len(trace.actions), path=path
        )

    def _on_upload(self, change: UploadChange) -> None:
        files = change["new"]
        if not files:
            return
        item = files[0]
        with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as f:
            f.write(bytes(item["content"]))
        self._file_action(lambda: self.load_trace(f.name).replace(f.name, item["name"]))

    def export_svg(self, directory: str | Path = ".") -> list[Path]:
        """Write the graph and the space-time diagram of the current step as SVG files in
        ``directory``; returns their paths."""
        folder = Path(directory)
        stem = f"{self.world.graph.name}-{self.world.protocol.name}-step{self.world.clock}"
        paths = [folder / f"{stem}-graph.svg"]
        paths[0].write_text(self.svg, encoding="utf-8")
        paths.append(folder / f"{stem}-diagram.svg")
        paths[1].write_text(diagram_svg(self.stepper.trace, self.world), encoding="utf-8")
        return paths

    def _export_links(self) -> None:
        stem = f"{self.world.graph.name}-{self.world.protocol.name}-step{self.world.clock}"
        links = [f'<a download="{stem}-graph.svg" href="{data_url(self.svg)}">graph (SVG)</a>']
        svg = diagram_svg(self.stepper.trace, self.world)
        links.append(f'<a download="{stem}-diagram.svg" href="{data_url(svg)}">diagram (SVG)</a>')
        self.links.value = "Download: " + " · ".join(links)

    # -- drawing ---------------------------------------------------------------------------------
    @in_own_language
    def redraw(self) -> None:
        """Redraw every view from the stepper's current world and trace."""
        world, trace = self.world, self.stepper.trace
        c = self.controls
        enabled = world.enabled_actions()
        self.chooser.options = [(choice_label(world, a), a) for a in enabled]
        self.chooser.value = enabled[0] if enabled else None
        c.back.disabled = not self.stepper.history
        failed = world.failed is not None
        c.step.disabled = failed and not self.redo
        c.crash.disabled = failed
        c.recover_full.disabled = not failed
        c.recover_partial.disabled = not failed
        c.trigger.disabled = not world.can_trigger()
        self._syncing = True
        try:
            known = len(trace) + len(self.redo)
            c.goto.max = max(known, len(trace) + GOTO_AHEAD)
            c.goto.value = len(trace)
        finally:
            self._syncing = False
        self.status.value = _status(world)
        self.svg = render_svg_fast(to_dot(world, **(COMPACT if self.compact else {})))
        self.graph.value = fit_svg(self.svg)
        latest = world.latest_snapshot()
        font = f"font-size:{self._font}"
        none_yet = _("none yet")
        self.snapshot.value = (
            f"<div style='{font}'>"
            + (
                snapshot_tables(latest, world.graph)._repr_html_()
                if latest
                else f"<i>{none_yet}</i>"
            )
            + "</div>"
        )
        if self.transactions is not None:
            self.transactions.value = f"<div style='{font}'>{transactions_html(world)}</div>"
        lines = [html.escape(e.describe()) for e in trace[-self.log_lines :]]
        no_steps = _("no steps yet")
        self.log.value = (
            f"<pre style='{font};line-height:1.3;white-space:pre-wrap'>"
            + "\n".join(lines)
            + "</pre>"
            if lines
            else f"<i>{no_steps}</i>"
        )
        if self.timeline is not None:
            self.timeline.value = fit_svg(diagram_svg(trace, world))

    @in_own_language
    def describe(self) -> str:
        """One line for a text-only front end: what the widget shows now."""
        w_ = self.world
        return _(
            "stepper widget: {graph}, protocol {protocol}, step {n} "
            "(run the notebook to step through it)"
        ).format(graph=w_.graph.name, protocol=w_.protocol.name, n=w_.clock)

    @in_own_language
    def _repr_mimebundle_(self, **kwargs: object) -> Bundle:
        bundle: Bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["text/plain"] = self.describe()
        data["text/html"] = img_html(self.svg, self.describe())
        return bundle


def stepper_widget(
    job: Job,
    protocol: str = "abs",
    *,
    seed: int = 1,
    checkpoint_interval: int | None = None,
    timeline: bool = True,
    allow_deadlock: bool = False,
    present: bool = False,
    lang: str | None = None,
) -> StepperWidget:
    """A :class:`StepperWidget` on a new world of ``job``, seeded random scheduling;
    ``present=True`` for the presentation layout (graph first, bigger); ``lang`` its
    language (None: the one :func:`absnb.set_language` sets)."""
    world = World(
        job, protocol, checkpoint_interval=checkpoint_interval, allow_deadlock=allow_deadlock
    )
    return StepperWidget(
        Stepper(world, RandomScheduler(seed=seed)), timeline=timeline, present=present, lang=lang
    )
