"""The views follow the production modes: overtaking barriers on the timeline, in-flight
data being recorded and cancellation barriers in the graph."""

from __future__ import annotations

import pytest

import absnb
from absnb.core.format import show_message
from absnb.sim.actions import DeclineCheckpoint
from absnb.views.graph import to_dot
from absnb.views.timeline import message_arrows


@pytest.mark.parametrize("seed", range(8))
def test_timeline_matches_each_delivery_when_barriers_overtake(seed):
    world = absnb.World(absnb.word_count(), "unaligned", checkpoint_interval=2)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=seed))
    trace = stepper.run()
    assert any(e.overtaken for e in trace)
    arrows = message_arrows(trace, stepper.world)
    by_step = {a.received_step: a for a in arrows if a.received_step is not None}
    for e in trace:
        if isinstance(e.action, absnb.Deliver):
            assert by_step[e.step].label == show_message(e.message)


def test_graph_shows_in_flight_recording_and_cancellation_barriers():
    world = absnb.World(absnb.word_count(), "unaligned")
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=0))
    g = world.graph
    stepper.step(absnb.TriggerCheckpoint())
    stepper.step(absnb.Deliver(g.channel("source[0]->count[0]")))
    assert "recording" in to_dot(stepper.world)
    stepper.step(DeclineCheckpoint(g.task("count[0]")))
    dot = to_dot(stepper.world)
    assert "✕cancel 1" in dot
    assert "declined: 1 by count[0]" in dot


def test_graph_title_names_timed_out_checkpoints():
    world = absnb.World(absnb.word_count(), "abs", checkpoint_interval=2, checkpoint_timeout=1)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=4), history=False)
    stepper.run()
    expired = stepper.world.coordinator.expired
    assert expired
    assert f"timed out: {', '.join(map(str, expired))}" in to_dot(stepper.world)
