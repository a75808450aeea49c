"""What Flink's own tests expect where absnb claims Flink's behaviour, at one task.

Modelled on Flink's ``AlignedCheckpointsTest`` (testMultiChannelJumpingOverCheckpoint,
testMultiChannelAbortCheckpoint), ``CheckpointBarrierTracker.processBarrier`` /
``processCancellationBarrier`` and ``TwoPhaseCommitSinkFunctionTest``
(testIgnoreCommitExceptionDuringRecovery).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absnb.core.ids import TaskId
from absnb.core.messages import CancelCheckpointMarker as C
from absnb.core.messages import CheckpointBarrier as B
from absnb.harness import TaskHarness
from absnb.operators.base import Operator
from absnb.protocols.two_phase_commit import TransactionTimeoutWarning
from absnb.sinks.memory import MemorySink, TransactionStore
from tests.protocols.test_transaction_timeout import Clock

ALIGNING = ["abs", "abs-cyclic", "synchronous", "unaligned", "abs-timeout"]
"""Protocols with one checkpoint in progress at a task (Flink's SingleCheckpointBarrierHandler)."""


# -- a newer barrier replaces an alignment in progress ------------------------------------------
@pytest.mark.parametrize("protocol", ALIGNING)
def test_a_newer_barrier_reports_the_overtaken_checkpoint_aborted(protocol):
    """testMultiChannelJumpingOverCheckpoint: the barrier of 2 reaches the task while 1 is
    aligned (or recorded): 1 is declined as subsumed and cancelled downstream, not dropped."""
    h = TaskHarness(protocol, inputs=2)
    h.barrier("in0", 1)
    assert h.aligning == 1
    h.barrier("in1", 2)
    assert h.aborted == [1]
    assert [(n, "subsumed" in why) for n, why in h.declined] == [(1, True)]
    assert C(1) in h.events
    assert h.aligning == 2
    assert h.latest_checkpoint_id == 2
    h.barrier("in0", 2)
    assert [c.checkpoint_id for c in h.checkpoints] == [2]
    assert h.blocked == []


@pytest.mark.parametrize("protocol", ["abs", "unaligned"])
def test_jumping_over_two_checkpoints_aborts_both(protocol):
    """testMultiChannelJumpingOverCheckpoint: 2 and 3 are each overtaken by the next one's
    barrier; 4 completes."""
    h = TaskHarness(protocol, inputs=3)
    h.barrier("in0", 2)
    h.barrier("in1", 3)
    h.barrier("in2", 4)
    for c in ("in0", "in1"):
        h.barrier(c, 4)
    assert h.aborted == [2, 3]
    assert [c.checkpoint_id for c in h.checkpoints] == [4]
    assert [e for e in h.events if isinstance(e, C)] == [C(2), C(3)]


def test_a_late_barrier_of_the_overtaken_checkpoint_is_ignored():
    h = TaskHarness("abs", inputs=2)
    h.barrier("in0", 1)
    h.barrier("in1", 2)
    h.barrier("in1", 1)  # the overtaken checkpoint's barrier, late: stale
    assert h.blocked == ["in1"]
    assert h.aligning == 2


# -- stale cancellation markers -----------------------------------------------------------------
@pytest.mark.parametrize("protocol", [*ALIGNING, "at-least-once"])
def test_a_cancellation_of_a_checkpoint_subsumed_by_a_newer_one_is_not_forwarded(protocol):
    h = TaskHarness(protocol, inputs=2)
    h.barrier("in0", 2)
    h.barrier("in1", 2)
    assert [c.checkpoint_id for c in h.checkpoints] == [2]
    h.cancel("in0", 1)  # older than the checkpoint taken
    h.cancel("in1", 2)  # the checkpoint taken itself
    assert h.events == [B(2)]
    assert h.aborted == []


@pytest.mark.parametrize("protocol", ["abs", "unaligned"])
def test_a_cancellation_older_than_the_alignment_in_progress_is_ignored(protocol):
    """SingleCheckpointBarrierHandler.processCancellationBarrier: currentCheckpointId >
    cancelledId returns early; the alignment of the newer checkpoint goes on."""
    h = TaskHarness(protocol, inputs=2)
    h.barrier("in0", 3)
    h.cancel("in1", 2)
    assert h.aligning == 3
    assert h.aborted == []
    assert C(2) not in h.events


def test_multiple_cancellations_and_a_barrier_after_them():
    """testMultiChannelAbortCheckpoint, items 32-35: cancellations of 6 on two inputs, then
    the barrier of 6 on the third: 6 is cancelled once, nothing stays blocked."""
    h = TaskHarness("abs", inputs=3)
    h.cancel("in1", 6)
    h.cancel("in2", 6)
    h.barrier("in0", 6)
    h.push("in0", "after")
    assert h.emitted == [C(6), "after"]
    assert h.blocked == []
    assert h.aborted == [6]
    assert h.checkpoints == []


def test_the_tracker_ignores_a_trailing_cancellation():
    """CheckpointBarrierTracker: "trailing cancellation barrier which was already cancelled"."""
    h = TaskHarness("at-least-once", inputs=2)
    h.barrier("in0", 3)
    h.cancel("in1", 2)
    assert h.aligning == 3
    assert h.aborted == []
    assert h.events == []


# -- the at-least-once tracker starts only above its newest pending checkpoint ------------------
def test_the_tracker_starts_no_checkpoint_older_than_its_newest_pending_one():
    """CheckpointBarrierTracker.processBarrier: a first barrier is tracked "only if it is
    newer than the latest checkpoint"."""
    h = TaskHarness("at-least-once", inputs=2)
    h.barrier("in0", 3)
    h.barrier("in1", 2)
    h.barrier("in0", 2)
    assert h.checkpoints == []
    h.barrier("in1", 3)
    assert [c.checkpoint_id for c in h.checkpoints] == [3]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["in0", "in1"]), st.integers(1, 5)), max_size=12))
def test_the_tracker_takes_checkpoints_in_increasing_order(arrivals):
    """Whatever the order of barriers, the tracker never takes a checkpoint at or below one
    it took or started tracking before."""
    h = TaskHarness("at-least-once", inputs=2)
    for name, n in arrivals:
        h.barrier(name, n)
    taken = [c.checkpoint_id for c in h.checkpoints]
    assert taken == sorted(set(taken))
    started = [n for i, (_, n) in enumerate(arrivals) if all(m < n for _, m in arrivals[:i])]
    assert set(taken) <= set(started)


# -- a cancellation marker tells the operator ---------------------------------------------------
class AbortLog(Operator):
    """Keeps the ids it was told were aborted."""

    def initial_state(self) -> Any:
        return ()

    def process(self, state: Any, value: Any) -> tuple[Any, list[Any]]:
        return state, [value]

    def notify_checkpoint_aborted(self, state: Any, checkpoint_id: int) -> Any:
        return (*state, checkpoint_id)


def test_a_cancellation_marker_notifies_the_operator_like_a_coordinator_abort():
    by_marker = TaskHarness("abs", inputs=2, operator=AbortLog())
    by_marker.barrier("in0", 1)
    by_marker.cancel("in1", 1)
    by_marker.cancel("in0", 1)  # the second marker of 1: already cancelled
    by_coordinator = TaskHarness("abs", inputs=2, operator=AbortLog())
    by_coordinator.barrier("in0", 1)
    by_coordinator.abort(1)
    assert by_marker.state == by_coordinator.state == (1,)
    assert by_marker.aborted == by_coordinator.aborted == [1]


# -- the harness as a test tool -----------------------------------------------------------------
def test_a_record_that_reads_like_a_barrier_is_a_record():
    h = TaskHarness("abs", inputs=1)
    h.push("in0", "barrier 1")
    h.barrier("in0", 1)
    assert h.emitted == ["barrier 1", B(1)]
    assert h.records == ["barrier 1"]
    assert h.events == [B(1)]
    assert h.emitted[0] != h.emitted[1]


def test_an_end_of_input_counts_once_the_task_consumed_it():
    h = TaskHarness("abs", inputs=2)
    h.barrier("in0", 1)
    h.end("in0")  # queued behind the block
    assert h.ended == []
    assert h.queued == {"in0": [h.queued["in0"][0]]}
    with pytest.raises(Exception, match="has ended"):
        h.push("in0", "late")
    h.barrier("in1", 1)
    assert h.ended == ["in0"]


def test_the_aligned_checkpoint_is_visible():
    h = TaskHarness("abs", inputs=2)
    assert h.aligning is None
    assert h.latest_checkpoint_id == 0
    h.barrier("in0", 1)
    assert h.aligning == 1
    h.barrier("in1", 1)
    assert h.aligning is None
    assert h.latest_checkpoint_id == 1


# -- the two-phase-commit sink ages every transaction -------------------------------------------
TASK = TaskId("sink", 0, 1)


def test_a_sink_restored_with_a_timeout_skips_a_failed_commit_begun_without_one():
    """testIgnoreCommitExceptionDuringRecovery: the instance that began the transaction had
    no timeout; the one restored with a timeout (and ignoring failures after it) skips the
    failed commit of the old transaction instead of failing the job."""
    clock, store = Clock(), TransactionStore()
    first = MemorySink(store)
    first.clock = clock  # the external system's clock; no timeout set
    state = first.initialize_state(TASK, first.initial_state(), False)
    state, _ = first.process(state, "42")
    state = first.snapshot_state(state, 1)
    ((_, txn),) = state.pending
    store.abort(txn)  # the external system timed it out
    clock.now += 1001  # past the timeout the restored sink is given
    restored = MemorySink(store).with_transaction_timeout(
        1000, clock=clock, ignore_failures_after_timeout=True
    )
    with pytest.warns(TransactionTimeoutWarning, match="failure is ignored"):
        after = restored.initialize_state(TASK, state, True)
    assert after.pending == ()


def test_start_times_are_not_part_of_the_state_compared():
    clock = Clock()
    sink = MemorySink(TransactionStore())
    sink.clock = clock
    a, _ = sink.process(sink.initialize_state(TASK, sink.initial_state(), False), "x")
    assert a.begun  # recorded without a timeout
    b = type(a)(a.task, a.current, a.written, a.pending, ((a.current, 123.0),))
    assert a == b
    assert hash(a) == hash(b)
