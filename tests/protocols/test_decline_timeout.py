"""Checkpoint timeout, decline and cancellation barriers, minimum pause, concurrency.

Flink's CheckpointCoordinator aborts a checkpoint that does not complete within its timeout
and one that a task declines; the declining task sends a ``CancelCheckpointMarker``
downstream so that channels blocked for the checkpoint are released. The next checkpoint
proceeds as usual.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import absnb
from absnb.core.errors import ProtocolSettingError
from absnb.core.messages import CancelCheckpointMarker
from absnb.protocols import CheckpointCoordinator, get_protocol
from absnb.sim.actions import DeclineCheckpoint
from absnb.task import Out

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def blocked_world() -> tuple[absnb.Stepper, absnb.ExecutionGraph]:
    """Word count under ABS with count[0] aligning checkpoint 1 (one input blocked)."""
    world = absnb.World(absnb.word_count(), "abs")
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=0))
    g = world.graph
    stepper.step(absnb.Emit(g.task("source[0]")))
    stepper.step(absnb.TriggerCheckpoint())
    while not stepper.world.blocked:
        stepper.step(absnb.Deliver(g.channel("source[0]->count[0]")))
    return stepper, g


def test_a_decline_aborts_releases_blocked_channels_and_sends_a_cancellation_barrier():
    stepper, g = blocked_world()
    assert stepper.world.blocked == {g.channel("source[0]->count[0]")}
    event = stepper.step(DeclineCheckpoint(g.task("count[1]"), "restoring"))
    assert event.aborted == (1,)
    assert g.channel("source[0]->count[0]") in event.unblocked
    assert not stepper.world.blocked
    assert stepper.world.coordinator.declined == [(1, g.task("count[1]"), "restoring")]
    assert (g.channel("count[1]->sink[1]"), CancelCheckpointMarker(1)) in event.sent
    # The sink sends the marker on once (it has no outputs) and the run goes on: the next
    # checkpoint completes and the output is exactly once.
    stepper.step(absnb.TriggerCheckpoint())
    stepper.run()
    world = stepper.world
    assert [s.checkpoint_id for s in world.snapshots] == [2]
    assert absnb.exactly_once(world)


def test_a_task_that_acknowledged_cannot_decline():
    stepper, g = blocked_world()
    with pytest.raises(absnb.ActionNotEnabledError, match="no pending checkpoint waits for"):
        stepper.step(DeclineCheckpoint(g.task("source[0]")))


def test_chandy_lamport_snapshots_cannot_be_declined():
    world = absnb.World(absnb.word_count(), "chandy-lamport")
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=0))
    stepper.step(absnb.TriggerCheckpoint())
    with pytest.raises(absnb.ActionNotEnabledError, match="cannot be declined"):
        stepper.step(DeclineCheckpoint(world.graph.task("sink[0]")))


def test_a_cancellation_barrier_is_sent_on_once():
    stepper, g = blocked_world()
    stepper.step(DeclineCheckpoint(g.task("count[1]")))
    count1 = stepper.world.tasks[g.task("count[1]")]
    out = Out()
    count1.cancel(CancelCheckpointMarker(1), out)
    assert out.sends == []
    assert out.controls == []


@settings(max_examples=150, **SETTINGS)
@given(
    st.integers(0, 10_000),
    st.sampled_from(["abs", "unaligned", "at-least-once", "abs-cyclic"]),
    st.integers(0, 6),
    st.integers(1, 4),
)
def test_timed_out_checkpoints_abort_and_the_run_stays_exactly_once(seed, protocol, timeout, every):
    world = absnb.World(
        absnb.word_count(), protocol, checkpoint_interval=every, checkpoint_timeout=timeout
    )
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=seed), history=False)
    stepper.run()
    world = stepper.world
    coordinator = world.coordinator
    assert world.is_finished()
    assert not world.blocked
    for done in coordinator.completed:
        # expiry is checked after each step: a checkpoint may still complete in the step
        # that would have expired it
        assert done.completed_at - done.triggered_at <= timeout + 1
    for n in coordinator.expired:
        assert n in coordinator.aborted
        assert n not in [c.checkpoint_id for c in coordinator.completed]
    assert absnb.exactly_once(world)


def test_a_short_timeout_aborts_and_a_long_one_does_not():
    def run(timeout):
        world = absnb.World(
            absnb.word_count(), "abs", checkpoint_interval=2, checkpoint_timeout=timeout
        )
        stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=4), history=False)
        stepper.run()
        return stepper.world.coordinator

    short, long = run(1), run(1_000)
    assert short.expired
    assert not long.expired
    assert long.completed


def test_max_concurrent_lets_two_checkpoints_be_pending():
    world = absnb.World(absnb.word_count(), "abs", max_concurrent=2)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=0))
    stepper.step(absnb.TriggerCheckpoint())
    stepper.step(absnb.Emit(world.graph.task("source[0]")))
    stepper.step(absnb.TriggerCheckpoint())
    assert sorted(stepper.world.coordinator.pending) == [1, 2]
    assert not stepper.world.can_trigger()
    stepper.run()
    assert [s.checkpoint_id for s in stepper.world.snapshots] == [1, 2]
    assert absnb.exactly_once(stepper.world)


@pytest.mark.parametrize("pause", [0, 3, 10])
def test_min_pause_spaces_periodic_triggers_after_a_completion(pause):
    job = absnb.word_count([["a b c"] * 10, ["d e"] * 10])
    world = absnb.World(job, "abs", checkpoint_interval=1, min_pause=pause)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=2), history=False)
    stepper.run()
    coordinator = stepper.world.coordinator
    triggers = [e.step for e in stepper.trace if isinstance(e.action, absnb.TriggerCheckpoint)]
    assert len(triggers) >= 2
    for done in coordinator.completed:
        later = [t for t in triggers if t > done.completed_at]
        if later:
            assert later[0] - done.completed_at > pause


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"timeout": -1}, "timeout must be a number >= 0"),
        ({"min_pause": "1"}, "min_pause must be a number >= 0"),
        ({"interval": True}, "interval must be a number"),
        ({"max_concurrent": 1.5}, "max_concurrent must be a whole number"),
    ],
)
def test_bad_coordinator_settings_name_the_value(kwargs, match):
    with pytest.raises(ProtocolSettingError, match=match):
        CheckpointCoordinator((), "job", "f", "abs", **kwargs)


def test_bad_alignment_timeouts_name_the_value():
    with pytest.raises(ProtocolSettingError, match="not -2"):
        get_protocol("abs", alignment_timeout=-2)
    with pytest.raises(ProtocolSettingError, match="does not align"):
        get_protocol("chandy-lamport", alignment_timeout=3)
