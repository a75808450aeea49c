"""The stepper widget, driven headless: clicks and value changes as a class would make them."""

from __future__ import annotations

import shutil

import pytest

import absnb
from absnb.views.side_by_side import SideBySide, compare
from absnb.views.widgets import StepperWidget, stepper_widget

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot not installed")


def seed_001_widget() -> StepperWidget:
    job = absnb.bank_transfer()
    return StepperWidget(absnb.Stepper(absnb.World(job, "chandy-lamport")))


def test_step_and_back_follow_the_stepper() -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=3, checkpoint_interval=4)
    first_graph = widget.graph.value
    widget.controls.step.click()
    widget.controls.step.click()
    assert len(widget.stepper.trace) == 2
    assert widget.status.value.startswith("step 2 ")
    assert widget.graph.value != first_graph
    assert "1: " in widget.log.value
    widget.controls.back.click()
    assert len(widget.stepper.trace) == 1
    assert widget.status.value.startswith("step 1 ")
    widget.controls.reset.click()
    assert widget.stepper.trace == []
    assert widget.graph.value == first_graph
    assert widget.controls.back.disabled


def test_the_chooser_lists_enabled_actions_and_applies_the_chosen_one() -> None:
    widget = seed_001_widget()
    world = widget.world
    assert [v for _, v in widget.chooser.options] == world.enabled_actions()
    trigger = next(v for _, v in widget.chooser.options if isinstance(v, absnb.TriggerCheckpoint))
    widget.chooser.value = trigger
    widget.do.click()
    assert isinstance(widget.stepper.trace[-1].action, absnb.TriggerCheckpoint)
    # a marker now waits on A->B, so delivering it is among the choices
    deliver = absnb.Deliver(world.graph.channel("A->B"))
    assert deliver in [v for _, v in widget.chooser.options]


def test_seed_001_snapshot_appears_in_the_snapshot_pane() -> None:
    widget = seed_001_widget()
    g = widget.world.graph
    a, b = g.task("A"), g.task("B")
    ab, ba = g.channel("A->B"), g.channel("B->A")
    for action in [
        absnb.Transfer(a, b, 1_000),
        absnb.TriggerCheckpoint(at=a),
        absnb.Transfer(b, a, 1_000),
        absnb.Transfer(b, a, 2_000),
        absnb.Deliver(ab),
        absnb.Deliver(ab),
        absnb.Deliver(ba),
        absnb.Deliver(ba),
    ]:
        widget.apply(action)
    assert "none yet" in widget.snapshot.value
    widget.apply(absnb.Deliver(ba))
    html = widget.snapshot.value
    assert "9,000" in html
    assert "3,000" in html
    assert "B-&gt;A" in html or "B->A" in html
    assert "checkpoints completed: 1" in widget.status.value


def test_crash_and_recover_buttons() -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=1, checkpoint_interval=3)
    for _ in range(12):
        widget.controls.step.click()
    assert widget.controls.recover_full.disabled
    widget.controls.crash_task.value = "count[1]"
    widget.controls.crash.click()
    assert widget.world.failed == widget.world.graph.task("count[1]")
    assert not widget.controls.recover_full.disabled
    assert widget.controls.crash.disabled
    assert "has failed" in widget.status.value
    widget.controls.recover_partial.click()
    assert widget.world.failed is None
    assert widget.stepper.trace[-1].restored is not None
    # the crash and the recovery are drawn on the space-time diagram
    bundle = widget.timeline.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    names = {t.get("name") for t in bundle["data"]}
    assert any("crash" in (n or "").lower() for n in names)


def test_a_refused_action_shows_its_reason_and_changes_nothing() -> None:
    widget = seed_001_widget()
    widget.controls.recover_full.disabled = False  # a class can still call it by hand
    widget.apply(absnb.Recover("full"))
    assert "no task has failed" in widget.controls.message.value
    assert widget.stepper.trace == []


def test_play_steps_on_every_tick_and_stops_at_the_end() -> None:
    job = absnb.word_count([["a"], ["b"]])
    widget = stepper_widget(job, "abs", seed=1)
    play = widget.controls.play
    tick = 0
    while len(widget.stepper.trace) < 50:
        tick += 1
        play.playing = True
        before = len(widget.stepper.trace)
        play.value = tick
        if len(widget.stepper.trace) == before:
            break
    assert widget.world.is_finished()
    assert play.playing is False
    assert "run is over" in widget.controls.message.value


def test_side_by_side_steps_every_protocol_together() -> None:
    side = compare(absnb.word_count(), ("abs", "chandy-lamport"), seed=2, checkpoint_interval=3)
    assert isinstance(side, SideBySide)
    for _ in range(5):
        side.controls.step.click()
    assert [len(p.stepper.trace) for p in side.panes] == [5, 5]
    assert [p.world.protocol.name for p in side.panes] == ["abs", "chandy-lamport"]
    side.controls.back.click()
    assert [len(p.stepper.trace) for p in side.panes] == [4, 4]
    side.controls.trigger.click()
    kinds = {type(p.stepper.trace[-1].action) for p in side.panes}
    assert kinds == {absnb.TriggerCheckpoint}


def test_the_widget_only_observes() -> None:
    widget = stepper_widget(absnb.bank_transfer(transfers=4), "chandy-lamport", seed=5)
    for _ in range(6):
        widget.controls.step.click()
    key = widget.world.key()
    widget.redraw()
    widget.redraw()
    assert widget.world.key() == key
    assert len(widget.stepper.trace) == 6
