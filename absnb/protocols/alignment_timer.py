"""When an aligned checkpoint times out at a task: one rule for every runtime, on its clock.

Flink's aligned checkpoint timeout (``execution.checkpointing.aligned-checkpoint-timeout``):
"checkpoints will start aligned. If during checkpointing, the checkpoint start delay exceeds
this timeout, alignment will timeout and checkpoint barrier will start working as unaligned
checkpoint". Flink's ``SingleCheckpointBarrierHandler`` starts the timer when the first
barrier *announcement* of a checkpoint reaches the task, and when it fires the task switches
to unaligned and every announced barrier is processed as a priority event, overtaking the
buffers in front of it.

The rule, decided here and nowhere else (the runtime only supplies ``now``: steps in the
simulator, seconds on Spark, a counter in the one-task harness):

1. Checkpoint n's clock at a task starts when the task first *hears* of n: a barrier of n
   arrives on one of its inputs (queued, perhaps behind records: Flink's announcement), or
   the coordinator triggers n there (:meth:`AlignmentTimer.hear`). Hosts share no clock
   with the coordinator, so the task's own first news of n stands for Flink's checkpoint
   start.
2. n is *overdue* at the task once ``now - heard >= timeout`` (:meth:`AlignmentTimer.overdue`).
3. What follows (:func:`due`): a task aligning an overdue checkpoint
   switches to unaligned (:meth:`~absnb.protocols.base.BarrierHandler.on_alignment_timeout`),
   and every barrier of an overdue checkpoint still queued behind records on an input
   overtakes them (:meth:`~absnb.task.StreamTask.deliver_overtaking`). Runtimes check at
   the end of every step (simulator, harness) or between two pieces of input (Spark host).
4. A checkpoint the task is done with (finished, declined, aborted or subsumed) is
   forgotten (:meth:`AlignmentTimer.settle`).

Timers are immutable values, so a simulated state holding them clones and compares as
plain data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from absnb.core.ids import CheckpointId
from absnb.protocols.base import BarrierHandler


@dataclass(frozen=True, slots=True)
class AlignmentTimer:
    """When one task first heard of each checkpoint it has not finished.

    Attributes:
        timeout: the protocol's alignment timeout, in the runtime's unit of ``now``.
        heard: ``(checkpoint id, when)`` pairs, oldest checkpoint first.
    """

    timeout: float
    heard: tuple[tuple[CheckpointId, float], ...] = ()

    def hear(self, checkpoint_id: CheckpointId, now: float) -> AlignmentTimer:
        """The task hears of ``checkpoint_id`` at ``now`` (its clock starts, unless it had)."""
        if any(n == checkpoint_id for n, _ in self.heard):
            return self
        heard = tuple(sorted((*self.heard, (checkpoint_id, now))))
        return AlignmentTimer(self.timeout, heard)

    def overdue(self, now: float) -> frozenset[CheckpointId]:
        """The checkpoints heard of at least ``timeout`` before ``now``."""
        return frozenset(n for n, at in self.heard if now - at >= self.timeout)

    def ticking(self, now: float) -> bool:
        """Whether some checkpoint is overdue at ``now`` or later, and was not before
        ``now - 1`` (the simulator's last step end): waiting lets the rule fire once."""
        return any(now - at <= self.timeout for _, at in self.heard)

    def settle(self, handler: BarrierHandler) -> AlignmentTimer | None:
        """Forget the checkpoints ``handler`` is done with: not newer than its latest one and
        not waited for; None when nothing is left."""
        latest = handler.latest_checkpoint_id()
        waited = {w.checkpoint_id for w in handler.waiting()}
        heard = tuple((n, at) for n, at in self.heard if n > latest or n in waited)
        if not heard:
            return None
        return self if heard == self.heard else AlignmentTimer(self.timeout, heard)

    def key(self, now: float) -> tuple[tuple[CheckpointId, float], ...]:
        """The timer as the time since each checkpoint was heard of, capped at the timeout
        (states that differ only in how long ago something became overdue behave alike)."""
        return tuple((n, min(now - at, self.timeout)) for n, at in self.heard)


class Due(NamedTuple):
    """What the rule decides for one task at ``now``."""

    timer: AlignmentTimer | None
    """The timer to keep (None: nothing left to time)."""
    switch: bool
    """The task aligns an overdue checkpoint: it switches to unaligned now."""
    overdue: frozenset[CheckpointId]
    """Barriers of these checkpoints queued behind records overtake them now."""


def due(timer: AlignmentTimer, handler: BarrierHandler, now: float) -> Due:
    """Apply the rule to the task of ``handler`` at ``now`` (the module docstring's 2-4)."""
    settled = timer.settle(handler)
    if settled is None:
        return Due(None, False, frozenset())
    overdue = settled.overdue(now)
    switch = bool(overdue) and handler.aligning() and handler.latest_checkpoint_id() in overdue
    return Due(settled, switch, overdue)


def timer_for(protocol: object) -> AlignmentTimer | None:
    """An empty timer for ``protocol``'s alignment timeout, or None if it has none."""
    timeout = getattr(protocol, "alignment_timeout", None)
    return None if timeout is None else AlignmentTimer(float(timeout))
