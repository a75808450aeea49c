"""Several protocols on one job and one seeded schedule, stepped together.

The panes sit side by side under the shared controls, so that at 1280x720 every pane's
whole graph and the controls are in view at once, labels at least 12 px high with
JupyterLab's file browser open (issue 23): each pane is its protocol's compact graph (no
legend, short labels: ``to_dot(short=True)``; the title names the protocol), then its status,
latest snapshot and trace. Each pane's width follows its graph's natural width, so the
graphs are drawn at the same scale. One set of controls drives them all, and a
control is disabled when any pane cannot follow it, so the panes never fall out of step
(issue 11): Step when a pane's run is over or has crashed, Back when a pane is at its
start, Recover unless every pane has failed. The chooser lists the actions enabled in
every pane.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ipywidgets as w

from absnb.core.job import Job
from absnb.i18n import checked, in_own_language, speaking
from absnb.i18n import gettext as _
from absnb.sim.actions import Action, Crash, Recover, TriggerCheckpoint
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.views.controls import (
    GOTO_AHEAD,
    Bundle,
    Controls,
    IntChange,
    button,
    choice_label,
    keyboard_html,
)
from absnb.views.pictures import img_html, svg_size
from absnb.views.widgets import STICKY_CSS, StepperWidget, panel

PANE_CSS = "<style>.absnb-compare-pane .absnb-panel{overflow-wrap:anywhere}</style>"
"""A pane's text breaks inside a long word (``Checkpoint 1 (chandy-lamport)``) rather than
run past the pane's edge, where it would be cut off."""


class SideBySide:
    """Panes side by side, one per stepper, driven by one set of controls."""

    _count = 0

    def __init__(self, steppers: Sequence[Stepper], lang: str | None = None) -> None:
        if not steppers:
            raise ValueError("SideBySide needs at least one stepper, got none")
        self.lang = None if lang is None else checked(lang)
        with speaking(self.lang):
            self._build(steppers)

    def _build(self, steppers: Sequence[Stepper]) -> None:
        self.panes = [
            StepperWidget(s, timeline=False, log_lines=5, compact=True, lang=self.lang)
            for s in steppers
        ]
        first = self.panes[0].world
        self.controls = c = Controls([str(t) for t in first.graph.tasks])
        self.chooser = w.Dropdown(description=_("next"), layout=w.Layout(width="460px"))
        self.do = button(
            _("Do it in every pane"), _("apply the chosen action in every pane"), "success"
        )
        self._syncing = False
        c.step.on_click(lambda _: self._each(lambda p: p.step()))
        c.back.on_click(lambda _: self._each(lambda p: p.back()))
        c.reset.on_click(lambda _: self._each(lambda p: p.reset()))
        c.play.observe(self._on_play, names="value")
        c.goto.observe(self._on_goto, names="value")
        c.trigger.on_click(lambda _: self._each(lambda p: p.apply(TriggerCheckpoint())))
        c.crash.on_click(
            lambda _: self._each(lambda p: p.apply(Crash(p.world.graph.task(c.crash_task.value))))
        )
        c.recover_full.on_click(lambda _: self._each(lambda p: p.apply(Recover("full"))))
        c.recover_partial.on_click(lambda _: self._each(lambda p: p.apply(Recover("partial"))))
        self.do.on_click(lambda _: self._do_chosen())
        SideBySide._count += 1
        root_class = f"absnb-compare-{SideBySide._count}"
        self.columns = [
            w.VBox(
                [
                    p.graph,
                    p.status,
                    p.controls.message,
                    panel(_("Latest completed snapshot"), p.snapshot, min_width="0"),
                    panel(_("Trace"), p.log, min_width="0"),
                ],
                layout=w.Layout(min_width="0", overflow="hidden", padding="0 8px 0 0"),
            )
            for p in self.panes
        ]
        for column in self.columns:
            column.add_class("absnb-compare-pane")
        side = w.HBox(self.columns, layout=w.Layout(width="100%", align_items="flex-start"))
        rows = c.rows()
        rows[0].add_class("absnb-controls")  # Step, Back, Play, go to: always in view
        self.widget = w.VBox(
            [
                *rows,
                w.HBox([self.chooser, self.do]),
                side,
                w.HTML(keyboard_html(root_class) + STICKY_CSS + PANE_CSS),
            ],
            layout=w.Layout(width="100%"),
        )
        self.widget.add_class("absnb-stepper")
        self.widget.add_class(root_class)
        self._sync()

    def _each(self, fn: Callable[[StepperWidget], None]) -> None:
        for pane in self.panes:
            fn(pane)
        self._sync()

    def _can_step(self, pane: StepperWidget) -> bool:
        if pane.redo:
            return True
        return pane.world.failed is None and pane.stepper.next_action() is not None

    def _common_actions(self) -> list[Action]:
        first, *others = (p.world.enabled_actions() for p in self.panes)
        return [a for a in first if all(a in o for o in others)]

    @in_own_language
    def _sync(self) -> None:
        """Enable a control only when every pane can follow it; size the panes."""
        c, panes = self.controls, self.panes
        for column, pane in zip(self.columns, panes, strict=True):
            # widths in proportion to the graphs' natural widths: one scale for all
            column.layout.flex = f"{svg_size(pane.svg)[0]:.0f} 1 0px"
        failed = [p.world.failed is not None for p in panes]
        c.step.disabled = not all(self._can_step(p) for p in panes)
        c.back.disabled = not all(p.stepper.history for p in panes)
        c.trigger.disabled = not all(p.world.can_trigger() for p in panes)
        c.crash.disabled = any(failed)
        c.recover_full.disabled = c.recover_partial.disabled = not all(failed)
        common = self._common_actions()
        world = panes[0].world
        self.chooser.options = [(choice_label(world, a), a) for a in common]
        self.chooser.value = common[0] if common else None
        self.do.disabled = not common
        self._syncing = True
        try:
            n = len(panes[0].stepper.trace)
            c.goto.max = max(n + len(panes[0].redo), n + GOTO_AHEAD)
            c.goto.value = n
        finally:
            self._syncing = False
        if any(failed) and not all(failed):
            c.message.value = _("A pane has failed and another has not: Reset or Back.")
        elif all(failed):
            c.message.value = panes[0].controls.message.value
        else:
            c.message.value = ""

    def _do_chosen(self) -> None:
        action = self.chooser.value
        if action is not None:
            self._each(lambda p: p.apply(action))

    def _on_play(self, change: IntChange) -> None:
        if change["new"] and change["new"] > change["old"]:
            if self.controls.step.disabled:
                self.controls.play.playing = False
                return
            self._each(lambda p: p.step())

    def _on_goto(self, change: IntChange) -> None:
        if not self._syncing:
            self._each(lambda p: p.goto(change["new"]))

    @in_own_language
    def describe(self) -> str:
        names = ", ".join(p.world.protocol.name for p in self.panes)
        world = self.panes[0].world
        return _(
            "side-by-side panes of {job} ({protocols}) at step {n} "
            "(run the notebook to step through them)"
        ).format(job=world.graph.name, protocols=names, n=world.clock)

    @in_own_language
    def _repr_mimebundle_(self, **kwargs: object) -> Bundle:
        bundle: Bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["text/plain"] = self.describe()
        data["text/html"] = (
            '<div style="display:flex;align-items:flex-start;gap:8px">'
            + "".join(
                f'<div style="flex:{svg_size(p.svg)[0]:.0f} 1 0px;min-width:0">'
                + img_html(p.svg, f"{p.world.protocol.name}: {p.world.graph.name}")
                + "</div>"
                for p in self.panes
            )
            + "</div>"
        )
        return bundle


def compare(
    job: Job,
    protocols: Sequence[str] = ("abs", "chandy-lamport", "synchronous"),
    *,
    seed: int = 1,
    checkpoint_interval: int | None = None,
    lang: str | None = None,
) -> SideBySide:
    """Panes side by side, one per protocol, each with a random scheduler of the same
    seed, under one set of controls; ``lang`` their language (None: the language set)."""
    steppers = [
        Stepper(World(job, p, checkpoint_interval=checkpoint_interval), RandomScheduler(seed=seed))
        for p in protocols
    ]
    return SideBySide(steppers, lang=lang)
