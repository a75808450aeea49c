"""The one rule of the aligned checkpoint timeout (:mod:`absnb.protocols.alignment_timer`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from absnb.core.messages import CheckpointBarrier
from absnb.harness import TaskHarness
from absnb.protocols import get_protocol
from absnb.protocols.alignment_timer import AlignmentTimer, due, timer_for

hearings = st.lists(st.tuples(st.integers(1, 5), st.floats(0, 100)), max_size=8)


@given(hearings, st.floats(0, 50), st.floats(0, 200), st.floats(0, 50))
def test_a_checkpoint_is_overdue_from_the_first_time_it_is_heard_of_and_stays_so(
    heard, timeout, now, later
) -> None:
    timer = AlignmentTimer(timeout)
    first: dict[int, float] = {}
    for n, at in heard:
        timer = timer.hear(n, at)
        first.setdefault(n, at)
    assert timer.overdue(now) == {n for n, at in first.items() if now - at >= timeout}
    assert timer.overdue(now) <= timer.overdue(now + later)  # time only makes more overdue
    assert timer.ticking(now) == any(now - at <= timeout for at in first.values())


def test_the_task_switches_only_for_the_overdue_checkpoint_it_aligns() -> None:
    h = TaskHarness("abs", alignment_timeout=5)
    h.barrier("in0", 1)
    timer = AlignmentTimer(5.0).hear(1, 0.0).hear(2, 4.0)
    handler = h.task.handler
    assert due(timer, handler, 4.0) == (timer, False, frozenset())
    assert due(timer, handler, 5.0).switch
    assert due(timer, handler, 5.0).overdue == {1}
    h.barrier("in1", 1)  # aligned in time: checkpoint 1 is done here and forgotten
    assert due(timer, handler, 9.0) == (AlignmentTimer(5.0, ((2, 4.0),)), False, {2})
    assert due(AlignmentTimer(5.0, ((1, 0.0),)), handler, 9.0).timer is None


def test_only_a_protocol_with_an_alignment_timeout_has_a_timer() -> None:
    assert timer_for(get_protocol("abs", alignment_timeout=3)) == AlignmentTimer(3.0)
    assert timer_for(get_protocol("abs")) is None
    assert timer_for(get_protocol("unaligned")) is None


def test_the_key_counts_overdue_time_only_up_to_the_timeout() -> None:
    timer = AlignmentTimer(2.0).hear(1, 0.0).hear(2, 9.0)
    assert timer.key(10.0) == ((1, 2.0), (2, 1.0))
    assert timer.key(10.0) == AlignmentTimer(2.0).hear(1, 5.0).hear(2, 9.0).key(10.0)


def test_the_harness_clock_makes_a_late_barrier_overtake() -> None:
    h = TaskHarness("abs", alignment_timeout=3, autoprocess=False)
    h.push("in0", "a", "b")
    h.barrier("in0", 1)
    h.advance(2.5)
    assert h.events == []  # not yet overdue
    h.advance(0.5)
    assert h.events == [CheckpointBarrier(1)]  # it overtook a and b, and the task switched
    assert h.describe().startswith("checkpoint 1 switched to unaligned")
    h.barrier("in1", 1)
    h.process()
    assert h.in_flight(1) == {"in0": ["a", "b"]}
