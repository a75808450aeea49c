"""What the simulator does for Flink's production modes beyond the paper.

Unaligned checkpoints (FLIP-76): a barrier is delivered ahead of the records queued before
it on its channel. Aligned checkpoints with an alignment timeout: a task whose alignment
has lasted the timeout (in steps) switches to unaligned, and a barrier still queued when
its checkpoint is older than the timeout overtakes. Decline: a task declines the oldest
pending checkpoint it has not acknowledged. The :class:`~absnb.sim.world.World` calls these
from its steps; they change the world they are given.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Message, Record, RecordBatch
from absnb.sim.actions import Decline, TriggerCheckpoint
from absnb.sim.effects import outcome
from absnb.sim.events import Event
from absnb.task import Send

if TYPE_CHECKING:
    from absnb.sim.world import World


def alignment_timeouts(world: World, event: Event) -> None:
    """Tasks whose alignment has lasted the timeout switch to unaligned (Flink's aligned
    checkpoint timeout), as part of the step of ``event``."""
    timeout = world._s.alignment_timeout
    assert timeout is not None
    aligning, clock = world.aligning, world.clock
    for c in event.blocked:
        aligning.setdefault(c.dst, clock)
    if type(event.action) is TriggerCheckpoint:  # an initiator with inputs aligns too
        for t in world.graph.initiators():
            aligning.setdefault(t, clock)
    for t in list(aligning):
        if world.failed is not None or not world.tasks[t].handler.aligning():
            del aligning[t]
        elif clock - aligning[t] >= timeout:
            del aligning[t]
            task = world.writable_task(t)
            sends: list[Send] = []
            controls = task.alignment_timeout(sends)
            event.switched += (t,)
            outcome(world, task, sends, controls, event)


def late_barrier(world: World, queue: deque[Message]) -> bool:
    """Under an alignment timeout: whether the first barrier queued in ``queue`` belongs to a
    checkpoint triggered at least the timeout ago (it then overtakes, as unaligned)."""
    timeout = world._s.alignment_timeout
    if timeout is None:
        return False
    for m in queue:
        if type(m) is CheckpointBarrier:
            pending = world.coordinator.pending.get(m.checkpoint_id)
            return pending is not None and world.clock - pending.started >= timeout
    return False


def deliver_overtaking(world: World, channel: ChannelId, queue: deque[Message], i: int) -> Event:
    """Deliver the barrier at position ``i`` of ``channel`` ahead of the records before it
    (FLIP-76: a barrier is a priority event and overtakes in-flight records)."""
    barrier = queue[i]
    overtaken: list[Record | RecordBatch] = []
    for j in range(i):
        record = queue[j]
        assert isinstance(record, Record | RecordBatch)  # ``i``: the first non-record queued
        overtaken.append(record)
    del queue[i]
    task = world.writable_task(channel.dst)
    sends: list[Send] = []
    controls = task.deliver_overtaking(channel, barrier, tuple(overtaken), sends)
    event = Event(world.clock, world._s.deliver[channel], channel.dst, barrier)
    event.overtaken = len(overtaken)
    return outcome(world, task, sends, controls, event)


def declinable(world: World, t: TaskId) -> CheckpointId | None:
    """The oldest pending checkpoint ``t`` has not acknowledged."""
    for n, p in sorted(world.coordinator.pending.items()):
        if t not in p.acknowledged:
            return n
    return None


def decline(world: World, action: Decline) -> Event:
    """``action.task`` declines :func:`declinable`'s checkpoint: it sends a cancellation
    barrier on; the coordinator aborts the checkpoint (through the task's controls)."""
    n = declinable(world, action.task)
    assert n is not None
    task = world.writable_task(action.task)
    sends: list[Send] = []
    controls = task.decline(n, action.reason, sends)
    return outcome(world, task, sends, controls, Event(world.clock, action, action.task))
