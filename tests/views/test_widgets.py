"""The stepper widget, driven headless: clicks and value changes as a class would make them."""

from __future__ import annotations

import base64
import re
import shutil

import ipywidgets
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import absnb
from absnb.core.format import show_message
from absnb.views.side_by_side import SideBySide, compare
from absnb.views.timeline import show_timeline
from absnb.views.widgets import (
    StepperWidget,
    stepper_widget,
)

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
    assert widget.timeline is not None
    assert "count[1] crashes" in widget.timeline.value
    assert "recover from" in widget.timeline.value


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


# -- the instructor's controls -------------------------------------------------------------
def fresh_run(steps: int, seed: int) -> absnb.World:
    """The world after ``steps`` steps of the seeded scheduler, without any widget."""
    stepper = absnb.Stepper(
        absnb.World(absnb.word_count(), "abs", checkpoint_interval=4),
        absnb.RandomScheduler(seed=seed),
    )
    stepper.run(steps)
    return stepper.world


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 50), targets=st.lists(st.integers(0, 30), min_size=1, max_size=5))
def test_go_to_step_reaches_the_world_of_that_many_steps(seed: int, targets: list[int]) -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=seed, checkpoint_interval=4)
    for n in targets:
        widget.controls.goto.value = n  # as the slider does
        reached = len(widget.stepper.trace)
        assert reached <= n  # a run may end before n
        assert widget.world.key() == fresh_run(reached, seed).key()
        assert widget.controls.goto.value == reached
        assert widget.status.value.startswith(f"step {widget.world.clock} ")


def test_back_then_step_takes_the_undone_step_even_if_another_was_chosen_before() -> None:
    widget = seed_001_widget()
    g = widget.world.graph
    widget.apply(absnb.Transfer(g.task("A"), g.task("B"), 1_000))
    widget.apply(absnb.TriggerCheckpoint(at=g.task("A")))
    widget.back()
    assert widget.redo == [absnb.TriggerCheckpoint(at=g.task("A"))]
    widget.step()  # the undone step, not the round robin scheduler's choice
    assert isinstance(widget.stepper.trace[-1].action, absnb.TriggerCheckpoint)
    assert widget.redo == []


def test_step_after_a_crash_does_not_recover_and_says_what_comes_next() -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=1, checkpoint_interval=3)
    while not widget.world.coordinator.completed:
        widget.step()
    done = widget.world.coordinator.latest().checkpoint_id
    widget.controls.crash_task.value = "count[1]"
    widget.controls.crash.click()
    steps = len(widget.stepper.trace)
    widget.controls.step.click()  # disabled in the page; a call must not recover either
    widget.step()
    assert len(widget.stepper.trace) == steps
    assert widget.world.failed == widget.world.graph.task("count[1]")
    note = widget.controls.message.value
    assert "Step does not recover" in note
    assert f"from checkpoint {done} " in note
    upstream = sorted(
        str(t) for t in widget.world.graph.upstream(widget.world.failed) if t != widget.world.failed
    )
    assert f"({', '.join(upstream)})" in note
    assert widget.controls.step.disabled


def test_crash_before_any_checkpoint_says_the_run_begins_again() -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=1)
    widget.step()
    widget.controls.crash.click()
    assert "no checkpoint has completed yet" in widget.controls.message.value


def test_the_chooser_names_the_message_at_the_head_of_each_channel() -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=4, checkpoint_interval=2)
    for _ in range(6):
        widget.step()
    world = widget.world
    labels = {v: label for label, v in widget.chooser.options}
    deliveries = [a for a in labels if isinstance(a, absnb.Deliver)]
    assert deliveries
    for action in deliveries:
        head = world.channels[action.channel][0]
        assert labels[action].startswith(f"deliver {action.channel}: {show_message(head)}")


def test_a_saved_trace_loads_and_replays_to_the_same_world(tmp_path) -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=6, checkpoint_interval=3)
    widget.goto(9)
    key = widget.world.key()
    path = tmp_path / "run.jsonl"
    widget.path.value = str(path)
    widget.save_trace(path)
    other = stepper_widget(absnb.word_count(), "abs", seed=99)
    message = other.load_trace(path)
    assert message.startswith("loaded 9 steps")
    assert other.stepper.trace == []
    other.goto(9)
    assert other.world.key() == key


def test_a_bad_trace_file_is_reported_in_the_widget(tmp_path) -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=6)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    widget.path.value = str(bad)
    widget._file_action(lambda: widget.load_trace(widget.path.value))
    assert "not valid JSON" in widget.links.value
    assert widget.stepper.trace == []


def test_export_writes_the_graph_of_the_current_step(tmp_path) -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=2, checkpoint_interval=3)
    widget.goto(5)
    (graph, *_) = widget.export_svg(tmp_path)
    assert graph.name == "word_count-abs-step5-graph.svg"
    assert graph.read_text() == widget.svg
    assert "step 5" in graph.read_text()


def test_the_widget_output_carries_a_picture_not_a_widget_repr() -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=2)
    widget.goto(3)
    bundle = widget._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"].startswith("stepper widget: word_count, protocol abs, step 3")
    assert "VBox(" not in data["text/plain"]
    src = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', data["text/html"])
    assert src is not None
    assert base64.b64decode(src[1]).decode() == widget.svg


def test_the_graph_scales_to_the_cell_and_never_past_one_pixel_a_point() -> None:
    widget = stepper_widget(absnb.word_count(), "abs", seed=2)
    head = widget.graph.value[: widget.graph.value.index(">")]
    width = float(re.search(r'viewBox="[\d.-]+ [\d.-]+ ([\d.]+)', widget.svg)[1])
    assert 'width="100%"' in head
    assert f"max-width:{width:.0f}px" in head
    assert "viewBox=" in head


def test_presentation_puts_the_graph_first() -> None:
    normal = stepper_widget(absnb.word_count(), "abs")
    present = stepper_widget(absnb.word_count(), "abs", present=True)
    assert present.widget.children[0] is present.graph
    assert normal.widget.children[0] is not normal.graph
    assert present.controls.step.layout.height == "44px"
    assert "20px" in present.log.value or "no steps yet" in present.log.value


def test_keyboard_shortcuts_click_the_widgets_own_buttons() -> None:
    widget = stepper_widget(absnb.word_count(), "abs")
    root = next(c for c in widget.widget._dom_classes if c.startswith("absnb-stepper-"))
    keys = next(
        c.value
        for c in widget.widget.children
        if isinstance(c, ipywidgets.HTML) and "onerror" in c.value
    )
    assert f"closest('.{root}')" in keys
    assert "'ArrowRight'" in keys
    assert "'ArrowLeft'" in keys
    assert "absnb-step" in widget.controls.step._dom_classes
    assert "absnb-back" in widget.controls.back._dom_classes


def test_compare_disables_what_a_pane_cannot_follow() -> None:
    short = absnb.Stepper(absnb.World(absnb.word_count([["a"], ["b"]]), "abs"))
    long = absnb.Stepper(absnb.World(absnb.word_count(), "abs"))
    side = SideBySide([short, long])
    c = side.controls
    assert c.back.disabled  # no pane has a step to undo
    assert c.recover_full.disabled
    assert c.recover_partial.disabled
    while not c.step.disabled:
        c.step.click()
    assert short.world.is_finished() or side.panes[0].world.is_finished()
    assert not side.panes[1].world.is_finished()  # the long pane could go on, but waits
    lengths = {len(p.stepper.trace) for p in side.panes}
    assert len(lengths) == 1  # never out of step
    c.crash_task.value = "count[0]"
    c.crash.click()
    assert all(p.world.failed is not None for p in side.panes)
    assert not c.recover_full.disabled
    assert c.crash.disabled


def test_compare_chooser_offers_only_actions_every_pane_can_take() -> None:
    side = compare(absnb.word_count(), ("abs", "chandy-lamport"), seed=3, checkpoint_interval=2)
    for _ in range(5):
        side.controls.step.click()
    offered = [v for _, v in side.chooser.options]
    for action in offered:
        assert all(action in p.world.enabled_actions() for p in side.panes)
    side.chooser.value = offered[-1]
    side.do.click()
    assert {p.stepper.trace[-1].action for p in side.panes} == {offered[-1]}
    data = side._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    assert data["text/html"].count("<img") == 2
    assert "HBox(" not in data["text/plain"]
    assert "VBox(" not in data["text/plain"]


def test_show_timeline_is_plotly_with_a_picture_and_a_text_line_not_a_repr() -> None:
    stepper = absnb.Stepper(absnb.World(absnb.word_count(), "abs", checkpoint_interval=3))
    stepper.run(10)
    data = show_timeline(stepper.trace, stepper.world, title="ten steps")._repr_mimebundle_()
    assert data["text/plain"] == "<space-time diagram: ten steps>"
    figure = data["application/vnd.plotly.v1+json"]
    assert figure["layout"]["title"]["text"] == "ten steps"
    assert data["text/html"].startswith('<img class="absnb-picture"')


def test_compare_puts_the_panes_side_by_side_at_one_scale() -> None:
    """One row of panes (not stacked), each a compact graph (no legend), each as wide as
    its graph's natural width in proportion, so that every graph is drawn at one scale;
    the untrusted picture is one row too."""
    import ipywidgets as w

    from absnb.views.graph import render_svg_fast, to_dot
    from absnb.views.pictures import svg_size
    from absnb.views.widgets import COMPACT

    side = compare(absnb.word_count(), seed=1, checkpoint_interval=4)
    for _ in range(12):
        side.controls.step.click()
    rows = [c for c in side.widget.children if isinstance(c, w.HBox)]
    assert [r.children for r in rows if r.children == tuple(side.columns)] == [tuple(side.columns)]
    for pane, column in zip(side.panes, side.columns, strict=True):
        assert pane.svg == render_svg_fast(to_dot(pane.world, **COMPACT))
        assert column.layout.flex == f"{svg_size(pane.svg)[0]:.0f} 1 0px"
    widths = {svg_size(p.svg)[0] for p in side.panes}
    assert len(widths) > 1  # the panes differ, so equal flex would draw them at two scales
    picture = side._repr_mimebundle_()
    data = picture[0] if isinstance(picture, tuple) else picture
    assert data["text/html"].startswith('<div style="display:flex')
    assert data["text/html"].count("<img") == 3
