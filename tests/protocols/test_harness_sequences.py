"""Flink-style sequence tests of every protocol at one task, with the public harness.

Modelled on Flink's AlignedCheckpointsTest, CheckpointBarrierTrackerTest and
UnalignedCheckpointsTest: a fixed sequence of records, barriers, cancellation markers and
ends of input on named channels, and what the task emitted, blocked and checkpointed.
"""

from __future__ import annotations

import pytest

from absnb.core.errors import ProtocolSettingError
from absnb.core.messages import CancelCheckpointMarker as C
from absnb.core.messages import CheckpointBarrier, RecordBatch, as_records
from absnb.core.messages import CheckpointBarrier as B
from absnb.core.snapshot import TaskSnapshot
from absnb.harness import TaskHarness
from absnb.operators.library import KeyedCount
from absnb.protocols import PROTOCOLS
from absnb.task import Out

BARRIER_PROTOCOLS = [
    "abs",
    "abs-cyclic",
    "synchronous",
    "at-least-once",
    "unaligned",
    "abs-timeout",
]


@pytest.mark.parametrize("protocol", [*BARRIER_PROTOCOLS, "chandy-lamport", "none"])
def test_records_without_barriers_pass_through_in_order(protocol):
    h = TaskHarness(protocol, inputs=3)
    h.push("in0", 1, 2)
    h.push("in2", 3)
    h.push("in1", 4)
    assert h.emitted == [1, 2, 3, 4]
    assert h.blocked == []
    assert h.checkpoints == []


@pytest.mark.parametrize("protocol", BARRIER_PROTOCOLS)
def test_single_channel_barriers_snapshot_at_once(protocol):
    h = TaskHarness(protocol, inputs=1)
    h.push("in0", "a")
    h.barrier("in0", 1)
    h.push("in0", "b")
    h.barrier("in0", 2)
    assert h.emitted == ["a", B(1), "b", B(2)]
    assert [c.checkpoint_id for c in h.checkpoints] == [1, 2]
    assert h.checkpoints[0].received == {h.channel("in0"): 1}


def test_aligned_blocks_until_every_barrier_and_trailing_data_waits():
    """AlignedCheckpointsTest.testMultiChannelTrailingBlockedData."""
    h = TaskHarness("abs", inputs=3)
    h.push("in0", "a")
    h.barrier("in0", 1)
    h.push("in0", "after-0")
    h.push("in1", "b")
    h.barrier("in1", 1)
    h.push("in1", "after-1")
    assert h.blocked == ["in0", "in1"]
    assert h.queued == {"in0": ["after-0"], "in1": ["after-1"]}
    h.push("in2", "c")
    assert h.emitted == ["a", "b", "c"]
    h.barrier("in2", 1)
    assert h.blocked == []
    assert h.emitted == ["a", "b", "c", B(1), "after-0", "after-1"]
    (snap,) = h.checkpoints
    assert snap.channel_states == {}
    assert snap.received == {h.channel("in0"): 1, h.channel("in1"): 1, h.channel("in2"): 1}


def test_at_least_once_never_blocks_and_snapshots_on_the_last_barrier():
    """CheckpointBarrierTrackerTest.testMultiChannelWithBarriers."""
    h = TaskHarness("at-least-once", inputs=2)
    h.barrier("in0", 1)
    h.push("in0", "after")  # processed at once: it will be replayed after a failure
    assert h.blocked == []
    assert h.checkpoints == []
    h.barrier("in1", 1)
    assert h.emitted == ["after", B(1)]
    (snap,) = h.checkpoints
    assert snap.received == {h.channel("in0"): 1, h.channel("in1"): 0}


def test_at_least_once_a_newer_checkpoint_drops_older_ones():
    """CheckpointBarrierTrackerTest.testCompleteCheckpointsOnLateBarriers: 2 completes, 1 is
    dropped."""
    h = TaskHarness("at-least-once", inputs=2)
    h.barrier("in0", 1)
    h.barrier("in0", 2)
    h.barrier("in1", 2)
    h.barrier("in1", 1)  # late: ignored
    assert [c.checkpoint_id for c in h.checkpoints] == [2]
    assert h.emitted == [B(2)]


def test_unaligned_snapshots_on_the_first_barrier_and_records_in_flight_data():
    h = TaskHarness("unaligned", inputs=2, operator=KeyedCount(key=str), autoprocess=False)
    h.push("in0", "a", "b")
    h.barrier("in0", 1)  # overtakes a and b
    h.push("in1", "c")
    h.process()
    # The barrier overtook a and b: the snapshot is taken before them and goes out first.
    assert h.emitted[0] == B(1)
    assert h.checkpoints == []  # in1's barrier is still missing
    assert h.describe().startswith("checkpoint 1 recording in-flight data of in1")
    h.push("in1", "d")
    h.barrier("in1", 1)
    h.process()
    (snap,) = h.checkpoints
    assert snap.state == {}
    assert h.in_flight(1) == {"in0": ["a", "b"], "in1": ["c", "d"]}
    assert h.state == {"a": 1, "b": 1, "c": 1, "d": 1}
    assert h.blocked == []


def test_alignment_timeout_switches_to_unaligned():
    h = TaskHarness("abs-timeout", inputs=2)
    h.barrier("in0", 1)
    h.push("in0", "blocked")
    h.push("in1", "x")
    assert h.blocked == ["in0"]
    assert h.checkpoints == []
    h.timeout()
    assert h.blocked == []
    assert h.emitted == ["x", B(1), "blocked"]
    h.push("in1", "y")
    h.barrier("in1", 1)
    assert h.in_flight(1) == {"in1": ["y"]}
    assert h.task.handler.switched == (1,)


def test_alignment_in_time_records_no_channel():
    h = TaskHarness("abs", inputs=2, alignment_timeout=5)
    h.barrier("in0", 1)
    h.barrier("in1", 1)
    assert h.in_flight(1) == {}
    h.timeout()  # nothing to switch
    assert [c.checkpoint_id for c in h.checkpoints] == [1]


@pytest.mark.parametrize("protocol", ["abs", "abs-timeout", "abs-cyclic", "synchronous"])
def test_a_cancellation_barrier_releases_blocked_channels_and_is_sent_on_once(protocol):
    """AlignedCheckpointsTest.testAbortViaQueuedBarrier and
    testIgnoreCancelBarrierIfCheckpointSubsumed."""
    h = TaskHarness(protocol, inputs=3)
    h.barrier("in0", 1)
    h.push("in0", "waiting")
    assert h.blocked == ["in0"]
    h.cancel("in1", 1)
    assert h.blocked == []
    assert h.emitted == [C(1), "waiting"]
    h.cancel("in2", 1)
    assert h.emitted == [C(1), "waiting"]
    h.barrier("in1", 1)  # late barrier of the cancelled checkpoint: ignored
    assert h.blocked == []
    for name in ("in0", "in1", "in2"):
        h.barrier(name, 2)
    assert [c.checkpoint_id for c in h.checkpoints] == [2]


def test_unaligned_cancellation_drops_the_recording():
    h = TaskHarness("unaligned", inputs=2)
    h.barrier("in0", 1)
    h.push("in1", "recorded")
    h.cancel("in1", 1)
    assert h.task.handler.recorded_channels() == ()
    h.barrier("in1", 1)
    assert h.checkpoints == []


@pytest.mark.parametrize("protocol", ["abs", "abs-timeout", "at-least-once", "unaligned"])
def test_decline_sends_a_cancellation_barrier_and_drops_progress(protocol):
    h = TaskHarness(protocol, inputs=2)
    h.barrier("in0", 1)
    h.decline(1, "restoring")
    assert h.declined == [(1, "restoring")]
    assert C(1) in h.emitted
    assert h.blocked == []
    h.barrier("in1", 1)
    assert h.checkpoints == []


@pytest.mark.parametrize("protocol", ["abs", "abs-timeout", "at-least-once", "unaligned"])
def test_an_ended_channel_counts_as_aligned(protocol):
    """FLIP-147: barriers are considered received on finished channels, pending or future."""
    h = TaskHarness(protocol, inputs=3)
    h.barrier("in0", 1)
    h.end("in1")
    h.barrier("in2", 1)  # in1 ended: checkpoint 1 is complete
    assert [c.checkpoint_id for c in h.checkpoints] == [1]
    h.barrier("in0", 2)
    h.end("in2")  # the pending checkpoint 2 completes when in2 ends
    assert [c.checkpoint_id for c in h.checkpoints] == [1, 2]
    assert h.blocked == []
    with pytest.raises(ProtocolSettingError, match="has ended"):
        h.push("in1", "late")


@pytest.mark.parametrize("protocol", ["abs", "abs-timeout", "at-least-once", "unaligned"])
def test_a_task_whose_inputs_have_all_ended_joins_checkpoints_when_triggered(protocol):
    """FLIP-147: a task no barrier can reach any more still takes part in checkpoints."""
    h = TaskHarness(protocol, inputs=2)
    h.push("in0", "a")
    h.end("in0")
    h.push("in1", "b")
    h.end("in1")
    h.trigger(1)  # before its inputs ended, a trigger at a non-source did nothing
    assert [c.checkpoint_id for c in h.checkpoints] == [1]
    assert h.in_flight(1) == {}
    assert h.emitted == ["a", "b", B(1)]


def test_an_unaligned_barrier_overtakes_records_but_not_the_end():
    """The end of input overtakes nothing, and records queued before a barrier are its
    channel state even when the channel ends behind them."""
    h = TaskHarness("unaligned", inputs=2, autoprocess=False)
    h.push("in0", "x", "y")
    h.barrier("in0", 1)
    h.end("in0")
    h.barrier("in1", 1)
    h.process()
    assert [c.checkpoint_id for c in h.checkpoints] == [1]
    assert h.in_flight(1) == {"in0": ["x", "y"]}
    assert h.emitted == [B(1), "x", "y"]


def test_unknown_inputs_and_bad_sizes_say_what_is_allowed():
    h = TaskHarness("abs", inputs=2)
    with pytest.raises(KeyError, match="use one of in0, in1"):
        h.push("in7", 1)
    with pytest.raises(ProtocolSettingError, match="not 0"):
        TaskHarness("abs", inputs=0)


def test_every_protocol_runs_in_the_harness():
    for name in PROTOCOLS:
        h = TaskHarness(name, inputs=2)
        h.push("in0", 1)
        assert h.emitted[-1] == 1


def test_an_overtaking_barrier_leaves_out_what_the_task_consumed_of_a_half_consumed_batch():
    """An announced barrier overtakes what was in front of it when it was announced; the
    records consumed since are in the state, so only the rest of a batch is in flight."""
    h = TaskHarness("abs-timeout", inputs=1, alignment_timeout=0)
    c = h.channel("in0")
    out = Out()
    h.task.deliver_batch(c, RecordBatch(["a", "b"], 1), out)  # 1, 2 consumed
    announced = (RecordBatch(["a", "b", "c"], 1), RecordBatch(["d"], 4))
    h.task.deliver_overtaking(c, CheckpointBarrier(1), announced, out)
    (snapshot,) = [x for x in out.controls if type(x) is TaskSnapshot]
    in_flight = [r.value for rs in snapshot.channel_states.values() for r in as_records(rs)]
    assert in_flight == ["c", "d"]
    assert snapshot.received[c] == 2


def test_a_cancellation_marker_waits_behind_records_then_cancels_and_is_forwarded():
    # Flink broadcasts a CancelCheckpointMarker as a non-priority event (not FLIP-76's
    # priority lane): under unaligned checkpoints too it is processed after the records
    # queued before it. It cancels its checkpoint (forwarded once); it starts no snapshot.
    from absnb.core.messages import CancelCheckpointMarker

    h = TaskHarness("unaligned", inputs=2, autoprocess=False)
    h.push("in0", "a")
    h.push("in0", "b")
    h.cancel("in0", 1)
    h.process()
    assert h.emitted == ["a", "b", CancelCheckpointMarker(1)]
    assert 1 not in h.task.parts
    assert h.task.cancelled == 1
    h.barrier("in1", 1)  # a late barrier of the cancelled checkpoint starts nothing
    h.process()
    assert h.checkpoints == []
