"""What the task decides itself, whatever drives it (the simulator, the harness or a Spark
host): which checkpoints it declines when it hears of them, and which it joins after its
inputs have ended (FLIP-147)."""

from __future__ import annotations

import pytest

from absnb.core.messages import CancelCheckpointMarker
from absnb.harness import TaskHarness
from absnb.task import DECLINED, Out

MODES = ["abs", "abs-timeout", "at-least-once", "unaligned", "chandy-lamport"]


@pytest.mark.parametrize("protocol", MODES)
def test_a_task_declines_a_checkpoint_it_is_told_to_at_its_first_barrier(protocol):
    h = TaskHarness(protocol, inputs=2)
    h.task.declines = frozenset({2})
    h.barrier("in0", 1)
    h.barrier("in1", 1)
    h.barrier("in0", 2)  # the first barrier of 2: declined, not aligned
    assert [c.checkpoint_id for c in h.checkpoints] == [1]
    assert h.declined == [(2, DECLINED)]
    assert h.events[-1] == CancelCheckpointMarker(2)  # sent on, releasing downstream
    assert h.blocked == []
    h.barrier("in1", 2)  # the other input's barrier of 2: stale, given up already
    assert h.declined == [(2, DECLINED)]
    h.barrier("in0", 3)
    h.barrier("in1", 3)
    assert [c.checkpoint_id for c in h.checkpoints] == [1, 3]


def test_a_task_declines_a_checkpoint_it_is_told_to_when_triggered():
    h = TaskHarness("abs", inputs=1)
    h.task.declines = frozenset({1})
    h.end("in0")
    h.trigger(1)
    assert h.declined == [(1, DECLINED)]
    assert h.checkpoints == []
    h.trigger(2)
    assert [c.checkpoint_id for c in h.checkpoints] == [2]


@pytest.mark.parametrize("protocol", MODES)
def test_a_finished_task_joins_a_checkpoint_once_and_not_one_it_gave_up(protocol):
    h = TaskHarness(protocol, inputs=1)
    h.end("in0")
    out = Out()
    h.task.join(1, out)
    assert out.controls  # inputs ended, not started: it takes part
    again = Out()
    h.task.join(1, again)
    assert not again  # taken already: joining again does nothing
    assert 1 in h.task.taken
    h.task.cancelled = 2  # given up here (a cancellation marker sent on)
    h.task.join(2, again)
    assert not again
    assert len(out.sends) == len(h.task.outputs)  # one barrier (or marker) on


def test_a_task_says_whether_hearing_or_ticking_would_change_it():
    """The simulator copies a task only for a change; ``hears`` and ``ticks`` say when."""
    h = TaskHarness("abs-timeout", inputs=2, alignment_timeout=3)
    task = h.task
    assert task.hears(1)
    h.barrier("in0", 1)  # heard at 0, aligning: in0 blocked
    assert not task.hears(1)
    assert task.hears(2)
    assert not task.ticks(2.0)  # not yet overdue
    assert task.ticks(3.0)  # overdue while aligning: it would switch
    h.advance(3)
    assert h.task.handler.switched == (1,)
    assert not TaskHarness("abs", inputs=2).task.hears(1)  # untimed: nothing to hear
