"""ABS Algorithm 1 (aligned checkpoints), script by script.

Each test feeds one task's handler an interleaving of records and barriers per input
channel and checks the effects after every step: the input a barrier came on is blocked
(Alg. 1, line 9); once barriers have arrived on every input the task broadcasts the
barrier, snapshots and unblocks the others (lines 10-13). Expected effects are written out
by hand from the paper, not computed.
"""

from __future__ import annotations

from itertools import permutations

import pytest

from absnb import CheckpointBarrier
from absnb.core.effects import Acknowledge, BroadcastEvent, SnapshotState
from absnb.protocols.base import Waiting, abort_subsumed
from tests.protocols.script import Script, fan_in, processes


def done(n: int) -> list:
    """What a task does when the last barrier of checkpoint ``n`` arrives, before unblocking."""
    return [BroadcastEvent(CheckpointBarrier(n)), SnapshotState(n), Acknowledge(n)]


@pytest.fixture
def two() -> Script:
    """Task t with inputs a->t and b->t."""
    return Script("abs", fan_in("a", "b"), "t")


@pytest.fixture
def three() -> Script:
    """Task t with inputs a->t, b->t and c->t."""
    return Script("abs", fan_in("a", "b", "c"), "t")


def test_source_snapshots_on_trigger_alone() -> None:
    s = Script("abs", fan_in("a", "b"), "a")
    assert s.handler.initiator
    assert s.trigger(1) == done(1)
    assert s.trigger(2) == done(2)


def test_two_inputs_align_and_records_on_open_inputs_pass() -> None:
    s = Script("abs", fan_in("a", "b"), "t")
    assert s.rec("a->t", "x1") == []
    assert s.rec("b->t", "y1") == []
    assert s.barrier("a->t", 1) == s.block("a->t")
    # b has not delivered its barrier: its records are still pre-barrier and flow.
    assert s.rec("b->t", "y2") == []
    assert s.rec("b->t", "y3") == []
    assert s.barrier("b->t", 1) == [*done(1), *s.unblock("a->t")]
    # Aligned again: records on either input produce nothing.
    assert s.rec("a->t", "x2") == []
    assert s.rec("b->t", "y4") == []


def test_two_inputs_other_order(two: Script) -> None:
    assert two.barrier("b->t", 1) == two.block("b->t")
    assert two.rec("a->t", "x") == []
    assert two.barrier("a->t", 1) == [*done(1), *two.unblock("b->t")]
    # The next checkpoint starts from scratch, in yet another order.
    assert two.barrier("a->t", 2) == two.block("a->t")
    assert two.barrier("b->t", 2) == [*done(2), *two.unblock("a->t")]


@pytest.mark.parametrize("order", list(permutations(["a", "b", "c"])))
def test_three_inputs_align_in_any_order(three: Script, order: tuple[str, str, str]) -> None:
    first, second, last = (f"{x}->t" for x in order)
    assert three.barrier(first, 1) == three.block(first)
    assert three.rec(last, "pre") == []
    assert three.barrier(second, 1) == three.block(second)
    assert three.rec(last, "pre") == []
    blocked = sorted([first, second])  # unblocked in input order: a, b, c
    assert three.barrier(last, 1) == [*done(1), *three.unblock(*blocked)]
    assert three.handler.waiting() == []


def test_waiting_reports_missing_and_blocked_inputs(three: Script) -> None:
    assert three.handler.waiting() == []
    three.barrier("c->t", 4)
    three.barrier("a->t", 4)
    t = three.graph.task("t")
    assert three.handler.waiting() == [
        Waiting(t, 4, (three.ch("b->t"),), (three.ch("a->t"), three.ch("c->t")))
    ]
    assert "2/3" in three.handler.describe()


def test_stale_barrier_after_completion_is_ignored(two: Script) -> None:
    two.barrier("a->t", 1)
    assert two.barrier("b->t", 1) == [*done(1), *two.unblock("a->t")]
    # A barrier of a finished checkpoint (or older) must not block anything.
    assert two.barrier("a->t", 1) == []
    assert two.barrier("b->t", 0) == []
    assert two.handler.waiting() == []
    assert two.barrier("b->t", 2) == two.block("b->t")


def test_abort_during_alignment_unblocks(three: Script) -> None:
    assert three.barrier("a->t", 1) == three.block("a->t")
    assert three.barrier("c->t", 1) == three.block("c->t")
    assert three.abort(1) == three.unblock("a->t", "c->t")
    assert three.handler.waiting() == []
    # The aborted checkpoint's last barrier arrives late: stale, ignored, nothing blocked.
    assert three.barrier("b->t", 1) == []
    # The next checkpoint aligns normally.
    assert three.barrier("b->t", 2) == three.block("b->t")
    assert three.barrier("a->t", 2) == three.block("a->t")
    assert three.barrier("c->t", 2) == [*done(2), *three.unblock("a->t", "b->t")]


def test_abort_before_any_barrier_makes_that_checkpoint_stale(two: Script) -> None:
    assert two.abort(3) == []
    assert two.barrier("a->t", 3) == []
    assert two.barrier("a->t", 2) == []
    assert two.barrier("a->t", 4) == two.block("a->t")


def test_abort_of_an_older_checkpoint_keeps_the_current_alignment(two: Script) -> None:
    assert two.barrier("a->t", 2) == two.block("a->t")
    assert two.abort(1) == []
    assert two.barrier("b->t", 2) == [*done(2), *two.unblock("a->t")]


def test_newer_barrier_overtakes_older_alignment(three: Script) -> None:
    assert three.barrier("a->t", 1) == three.block("a->t")
    assert three.barrier("b->t", 1) == three.block("b->t")
    # Checkpoint 2's barrier arrives on c before 1's: give up 1 and report it aborted
    # (Flink's cancelSubsumedCheckpoint), start aligning 2.
    assert three.barrier("c->t", 2) == [
        *three.unblock("a->t", "b->t"),
        *abort_subsumed(1, 2),
        *three.block("c->t"),
    ]
    # Checkpoint 1 is over here: its barriers are ignored.
    assert three.barrier("c->t", 1) == []
    assert three.barrier("b->t", 2) == three.block("b->t")
    assert three.rec("a->t", "pre-2") == []
    assert three.barrier("a->t", 2) == [*done(2), *three.unblock("b->t", "c->t")]
    assert three.barrier("a->t", 1) == []


def test_older_barrier_during_newer_alignment_is_ignored(two: Script) -> None:
    assert two.barrier("a->t", 5) == two.block("a->t")
    assert two.barrier("b->t", 4) == []
    assert two.barrier("b->t", 5) == [*done(5), *two.unblock("a->t")]


def test_initiator_with_an_input_waits_for_the_nil_input_too() -> None:
    # Processes only: the first, A, is where the coordinator injects barriers (the paper's
    # "Nil" input). B->A is not a back-edge: DFS from A never reaches B first.
    graph = processes(["A", "B"], ["B->A"])
    assert not graph.is_cyclic
    s = Script("abs", graph, "A")
    assert s.handler.initiator
    assert s.barrier("B->A", 1) == s.block("B->A")
    assert s.trigger(1) == [*done(1), *s.unblock("B->A")]
    # The other way round: the trigger blocks nothing, the barrier completes.
    assert s.trigger(2) == []
    assert s.barrier("B->A", 2) == done(2)
