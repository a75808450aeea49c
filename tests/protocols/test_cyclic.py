"""ABS Algorithm 2 (cyclic graphs, back-edge logging), script by script.

Regular inputs align as in Algorithm 1 (blocked on their barrier). Once every regular
barrier is in, the task copies its state, broadcasts and unblocks; from then on records
arriving on a loop input go to that input's backup log, until that loop input's own
barrier arrives (records behind it are not logged). When every loop barrier is in, the
snapshot is {state copy, backup log}.
"""

from __future__ import annotations

import pytest

from absnb import CheckpointBarrier, cyclic, get_protocol
from absnb.core.effects import Acknowledge, Block, BroadcastEvent, SnapshotState
from absnb.protocols.base import abort_subsumed
from tests.protocols.script import Script, fan_in, loop


def copy(n: int) -> list:
    """State copy and broadcast (Alg. 2, lines 13-17), in that order."""
    return [SnapshotState(n), BroadcastEvent(CheckpointBarrier(n))]


@pytest.fixture
def head() -> Script:
    """Loop head h: regular input s->h, loop input b->h."""
    return Script("abs-cyclic", loop(), "h")


@pytest.fixture
def wide() -> Script:
    """Loop head h: regular inputs s1->h, s2->h; loop inputs b1->h, b2->h."""
    return Script("abs-cyclic", loop(["s1", "s2"], ["b1", "b2"]), "h")


def test_graph_marks_only_the_loop_inputs(wide: Script) -> None:
    assert wide.handler.loop_inputs == {wide.ch("b1->h"), wide.ch("b2->h")}
    assert wide.handler.inputs == tuple(wide.ch(c) for c in ("s1->h", "s2->h", "b1->h", "b2->h"))


def test_logs_loop_records_between_state_copy_and_loop_barrier(head: Script) -> None:
    # Before the checkpoint: nothing is logged.
    assert head.rec("b->h", 10) == []
    # The only regular barrier: copy state, broadcast, start logging b->h. Not blocked.
    assert head.barrier("s->h", 1) == copy(1)
    assert head.rec("b->h", 11) == []
    assert head.rec("s->h", 99) == []  # regular input: never logged
    assert head.rec("b->h", 12) == []
    # The loop barrier closes the log: exactly the loop records in between, in order.
    assert head.barrier("b->h", 1) == [head.state(1, "b->h", 11, 12), Acknowledge(1)]
    # After the loop barrier nothing is logged: checkpoint 2 finds an empty log.
    assert head.rec("b->h", 13) == []
    assert head.barrier("s->h", 2) == copy(2)
    assert head.barrier("b->h", 2) == [head.state(2, "b->h"), Acknowledge(2)]


def test_regular_inputs_block_loop_inputs_do_not_after_alignment(wide: Script) -> None:
    assert wide.barrier("s1->h", 1) == wide.block("s1->h")
    # Still aligning: loop records are not logged (the state copy has not happened).
    assert wide.rec("b1->h", 1) == []
    assert wide.rec("b2->h", 2) == []
    assert wide.rec("s2->h", 3) == []
    assert wide.barrier("s2->h", 1) == [*copy(1), *wide.unblock("s1->h")]
    assert wide.rec("b1->h", 4) == []
    assert wide.rec("b2->h", 5) == []
    # A loop barrier after alignment is not blocked; it closes that input's log only.
    assert wide.barrier("b2->h", 1) == [wide.state(1, "b2->h", 5)]
    assert wide.rec("b2->h", 6) == []  # behind b2's barrier: not logged
    assert wide.rec("b1->h", 7) == []  # b1 still logging
    assert wide.rec("s1->h", 8) == []
    assert wide.barrier("b1->h", 1) == [wide.state(1, "b1->h", 4, 7), Acknowledge(1)]
    assert wide.handler.waiting() == []


def test_loop_barrier_before_alignment_is_blocked_and_its_log_empty(wide: Script) -> None:
    assert wide.barrier("b1->h", 1) == wide.block("b1->h")
    assert wide.barrier("s2->h", 1) == wide.block("s2->h")
    assert wide.rec("b2->h", 1) == []
    assert wide.barrier("s1->h", 1) == [
        *copy(1),
        *wide.unblock("s2->h", "b1->h"),
        wide.state(1, "b1->h"),
    ]
    assert wide.rec("b1->h", 2) == []  # b1's barrier is in: not logged
    assert wide.rec("b2->h", 3) == []
    assert wide.barrier("b2->h", 1) == [wide.state(1, "b2->h", 3), Acknowledge(1)]


def test_every_loop_barrier_first_acknowledges_at_the_state_copy(head: Script) -> None:
    assert head.barrier("b->h", 1) == head.block("b->h")
    assert head.barrier("s->h", 1) == [
        *copy(1),
        *head.unblock("b->h"),
        head.state(1, "b->h"),
        Acknowledge(1),
    ]


def test_waiting_while_logging(wide: Script) -> None:
    wide.barrier("s1->h", 3)
    wide.barrier("s2->h", 3)
    wide.barrier("b1->h", 3)
    [w] = wide.handler.waiting()
    assert (w.checkpoint_id, w.channels, w.blocked) == (3, (wide.ch("b2->h"),), ())


def test_stale_barriers_are_ignored(head: Script) -> None:
    head.barrier("s->h", 1)
    head.barrier("b->h", 1)
    assert head.barrier("s->h", 1) == []
    assert head.barrier("b->h", 1) == []
    assert head.rec("b->h", 1) == []
    assert head.barrier("s->h", 2) == copy(2)


def test_abort_while_logging_discards_the_log(head: Script) -> None:
    assert head.barrier("s->h", 1) == copy(1)
    assert head.rec("b->h", 20) == []
    assert head.abort(1) == []  # nothing is blocked while logging
    assert head.handler.waiting() == []
    assert head.rec("b->h", 21) == []
    assert head.barrier("b->h", 1) == []  # stale
    assert head.barrier("s->h", 2) == copy(2)
    assert head.rec("b->h", 22) == []
    assert head.barrier("b->h", 2) == [head.state(2, "b->h", 22), Acknowledge(2)]


def test_abort_during_alignment_unblocks(wide: Script) -> None:
    assert wide.barrier("s1->h", 1) == wide.block("s1->h")
    assert wide.barrier("b1->h", 1) == wide.block("b1->h")
    assert wide.abort(1) == wide.unblock("s1->h", "b1->h")
    assert wide.barrier("s2->h", 1) == []
    assert wide.barrier("s2->h", 2) == wide.block("s2->h")


def test_newer_barrier_overtakes_alignment_and_logging(wide: Script) -> None:
    assert wide.barrier("s1->h", 1) == wide.block("s1->h")
    assert wide.barrier("s2->h", 2) == [
        *wide.unblock("s1->h"),
        *abort_subsumed(1, 2),
        *wide.block("s2->h"),
    ]
    assert wide.barrier("s1->h", 1) == []
    assert wide.barrier("s1->h", 2) == [*copy(2), *wide.unblock("s2->h")]
    assert wide.rec("b1->h", 1) == []
    # Checkpoint 3 overtakes 2 while 2 is logging: 2's log is dropped (and 2 reported
    # aborted), 3's starts empty.
    assert wide.barrier("s1->h", 3) == [*abort_subsumed(2, 3), *wide.block("s1->h")]
    assert wide.rec("b1->h", 2) == []  # aligning 3: not logged
    assert wide.barrier("s2->h", 3) == [*copy(3), *wide.unblock("s1->h")]
    assert wide.barrier("b1->h", 2) == []
    assert wide.rec("b1->h", 4) == []
    assert wide.barrier("b1->h", 3) == [wide.state(3, "b1->h", 4)]
    assert wide.barrier("b2->h", 3) == [wide.state(3, "b2->h"), Acknowledge(3)]


def test_source_of_the_cyclic_job_snapshots_on_trigger() -> None:
    job = cyclic()
    s = Script("abs-cyclic", job.graph, "source")
    assert s.trigger(1) == [*copy(1), Acknowledge(1)]


def test_cyclic_job_head_logs_the_step_to_head_channel() -> None:
    job = cyclic()
    s = Script("abs-cyclic", job.graph, "head")
    assert s.handler.loop_inputs == {s.ch("step->head")}
    assert s.barrier("source->head", 1) == copy(1)
    assert s.rec("step->head", (3, 10, 1)) == []
    assert s.barrier("step->head", 1) == [s.state(1, "step->head", (3, 10, 1)), Acknowledge(1)]


def test_without_loops_it_is_algorithm_1() -> None:
    s = Script("abs-cyclic", fan_in("a", "b"), "t")
    assert s.handler.loop_inputs == frozenset()
    assert s.barrier("a->t", 1) == s.block("a->t")
    assert s.rec("b->t", 1) == []
    assert s.barrier("b->t", 1) == [*copy(1), *s.unblock("a->t"), Acknowledge(1)]


def test_clone_has_its_own_log(head: Script) -> None:
    head.barrier("s->h", 1)
    head.rec("b->h", 1)
    twin = head.handler.clone()
    assert twin.key() == head.handler.key()
    head.rec("b->h", 2)
    assert twin.key() != head.handler.key()
    closed = list(twin.on_barrier(head.ch("b->h"), CheckpointBarrier(1)))
    assert closed == [head.state(1, "b->h", 1), Acknowledge(1)]
    assert head.barrier("b->h", 1) == [head.state(1, "b->h", 1, 2), Acknowledge(1)]


def test_algorithm_1_forced_on_a_loop_waits_for_its_own_barrier() -> None:
    graph = loop()
    forced = get_protocol("abs", graph, allow_deadlock=True)
    h = forced.handler(graph, graph.task("h"))
    s_h, b_h = graph.channel("s->h"), graph.channel("b->h")
    # Alg. 1 blocks s->h and waits for b->h, whose barrier must first pass through h
    # itself: h never broadcasts, the paper's deadlock.
    assert list(h.on_barrier(s_h, CheckpointBarrier(1))) == [Block(s_h)]
    [w] = h.waiting()
    assert (w.channels, w.blocked) == ((b_h,), (s_h,))
