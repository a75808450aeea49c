"""The widgets' buttons and the texts they show: the instructor's controls.

Shared by the stepper widget and the side-by-side comparison (:mod:`absnb.views.widgets`):
Step / Back / Play / go-to-step slider / Reset, checkpoint and failure buttons, keyboard
shortcuts, what a crash means for what comes next, and the chooser's labels.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TypedDict

import ipywidgets as w

from absnb.core.format import show_message, show_value
from absnb.i18n import gettext as _
from absnb.sim.actions import Action, Deliver, Emit
from absnb.sim.world import World

KEYS = {"step": ("ArrowRight", "PageDown", "."), "back": ("ArrowLeft", "PageUp", ",")}
"""Keyboard shortcuts while the widget has the focus (click it once): a presenter's
clicker sends PageDown / PageUp."""

GOTO_AHEAD = 20
"""How far past the last step taken the go-to slider reaches (the scheduler takes them)."""


def button(description: str, tooltip: str, style: str = "", *, big: bool = False) -> w.Button:
    b = w.Button(
        description=description,
        tooltip=tooltip,
        button_style=style,
        layout=w.Layout(width="auto", height="44px" if big else "auto"),
    )
    if big:
        b.style.font_size = "20px"
        b.style.font_weight = "bold"
    return b


def keyboard_html(root_class: str) -> str:
    """An invisible image whose load error installs the keyboard shortcuts (:data:`KEYS`)
    on the widget's root element (the one with CSS class ``root_class``): keys pressed
    while focus is inside the widget click its Step or Back button. Inputs (the slider,
    text boxes) keep their own keys. Runs only in a live, trusted notebook."""
    step = ",".join(f"'{k}'" for k in KEYS["step"])
    back = ",".join(f"'{k}'" for k in KEYS["back"])
    script = (
        f"var r=this.closest('.{root_class}');if(!r||r.dataset.absnbKeys)return;"
        "r.dataset.absnbKeys='1';r.tabIndex=0;"
        "r.addEventListener('keydown',function(e){"
        "if(e.target.closest('input,textarea,select'))return;"
        f"var b=[{step}].includes(e.key)?'absnb-step':[{back}].includes(e.key)?'absnb-back':'';"
        "var n=b&&r.querySelector('.'+b);"
        "if(n&&!n.disabled){n.click();e.preventDefault();e.stopPropagation();}},true);"
    )
    run = f"(function(){{{script}}}).call(this)"
    return f'<img src="data:," alt="" style="display:none" onerror="{run}">'


class IntChange(TypedDict):
    """What an observer of an integer trait (Play's or the go-to slider's value) is
    handed, of traitlets' change: the value before and after."""

    old: int
    new: int


Bundle = dict[str, object] | tuple[dict[str, object], dict[str, object]]
"""A ``_repr_mimebundle_``: the data by MIME type, or the data and its metadata."""


class Controls:
    """Step / Back / Play / go-to / Reset, the speed, the checkpoint and failure buttons.

    ``big`` (presentation) makes the buttons larger.
    """

    def __init__(self, tasks: Sequence[str], *, big: bool = False) -> None:
        self.step = button(
            _("Step ▶"), _("apply the next action (key: → or PageDown)"), "primary", big=big
        )
        self.back = button(_("◀ Back"), _("undo the last step (key: ← or PageUp)"), big=big)
        self.step.add_class("absnb-step")
        self.back.add_class("absnb-back")
        self.reset = button(_("Reset"), _("back to the start"), big=big)
        self.play = w.Play(
            value=0, min=0, max=1_000_000, step=1, interval=700, description=_("Play")
        )
        self.goto = w.IntSlider(
            value=0,
            min=0,
            max=GOTO_AHEAD,
            description=_("go to step"),
            continuous_update=False,
            style={"description_width": "initial"},
            layout=w.Layout(width="280px"),
        )
        self.speed = w.IntSlider(
            value=700,
            min=100,
            max=2000,
            step=100,
            description=_("ms / step"),
            continuous_update=False,
            layout=w.Layout(width="260px"),
        )
        w.jslink((self.speed, "value"), (self.play, "interval"))
        self.trigger = button(
            _("Trigger checkpoint"), _("the coordinator starts a checkpoint"), "info"
        )
        self.crash_task = w.Dropdown(
            options=list(tasks), description=_("task"), layout=w.Layout(width="170px")
        )
        self.crash = button(_("Crash"), _("the chosen task fails"), "danger")
        self.recover_full = button(
            _("Recover (full)"), _("restart every task from the latest completed checkpoint")
        )
        self.recover_partial = button(
            _("Recover (partial)"), _("restart the failed task and its upstream tasks only")
        )
        self.message = w.HTML()

    def rows(self) -> list[w.Widget]:
        wrap = w.Layout(flex_flow="row wrap", align_items="center")
        return [
            w.HBox([self.step, self.back, self.play, self.goto, self.reset], layout=wrap),
            w.HBox(
                [
                    self.trigger,
                    self.crash_task,
                    self.crash,
                    self.recover_full,
                    self.recover_partial,
                    self.speed,
                ],
                layout=wrap,
            ),
            self.message,
        ]


def choice_label(world: World, action: Action) -> str:
    """The chooser's text for ``action``: a delivery names the message at the head of its
    channel (``deliver source[0]->count[0]: barrier 1``), an emit the line it reads."""
    if isinstance(action, Deliver):
        q = world.channels[action.channel]
        more = _(" (+{n} behind)").format(n=len(q) - 1) if len(q) > 1 else ""
        if not q:
            return str(action)
        return (
            _("deliver {channel}: {message}").format(
                channel=action.channel, message=show_message(q[0])
            )
            + more
        )
    if isinstance(action, Emit):
        t = action.task
        offset, lines = world.tasks[t].offset, world.inputs[t]
        if offset < len(lines):
            return _("{task} emits {line!r}").format(task=t, line=show_value(lines[offset]))
    return str(action)


def crash_note(world: World) -> str:
    """What happens next after a crash (HTML): nothing moves until a recovery; which
    checkpoint each recovery restores and which tasks restart; Step does not choose."""
    failed = world.failed
    if failed is None:
        return ""
    latest = world.coordinator.latest()
    source = (
        _("checkpoint {n} (the latest completed one)").format(n=latest.checkpoint_id)
        if latest
        else _("the start: no checkpoint has completed yet, so the run begins again")
    )
    upstream = sorted(str(t) for t in world.graph.upstream(failed) if t != failed)
    others = ", ".join(upstream) if upstream else _("no upstream task")
    text = _(
        "<b>{name} has failed.</b> Nothing moves until a recovery; "
        "<b>Step does not recover on its own</b>: choose one. "
        "<b>Recover (full)</b> restarts every task from {source}: each "
        "task loads its recorded state, each channel is emptied and refilled with its "
        "recorded state, sources rewind to their recorded offsets. "
        "<b>Recover (partial)</b> restarts only {name} and its upstream tasks "
        "({others}) from the same checkpoint; they replay their inputs in "
        "the order they first consumed them and downstream tasks drop what they have "
        "already seen."
    ).format(name=html.escape(str(failed)), source=html.escape(source), others=html.escape(others))
    return f"<div class='absnb-crash'>{text}</div>"
