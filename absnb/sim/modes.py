"""What the simulator does for Flink's production modes beyond the paper.

Unaligned checkpoints (FLIP-76): a barrier is delivered ahead of the records queued before
it on its channel. Aligned checkpoints with an alignment timeout: a task whose alignment
has lasted the timeout (in steps) switches to unaligned, and a barrier still queued when
its checkpoint is older than the timeout overtakes. Decline: a task declines the oldest
pending checkpoint it has not acknowledged. End of input: a finished sender ends one of its
channels (FLIP-147: the receiver counts it as aligned from then on). The
:class:`~absnb.sim.world.World` calls these from its steps; they change the world they are
given.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    OnChannel,
    Record,
    RecordBatch,
)
from absnb.sim.actions import Decline, EndInput, TriggerCheckpoint
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


def late_barrier(world: World, queue: deque[OnChannel]) -> bool:
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


def deliver_overtaking(world: World, channel: ChannelId, queue: deque[OnChannel], i: int) -> Event:
    """Deliver the barrier at position ``i`` of ``channel`` ahead of the records before it
    (FLIP-76: a barrier is a priority event and overtakes in-flight records)."""
    barrier = queue[i]
    # ``i``: the first priority event queued (an end of input overtakes nothing)
    assert isinstance(barrier, CheckpointBarrier | CancelCheckpointMarker)
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


def unfinished(world: World, channel: ChannelId) -> str | None:
    """Why the sender of ``channel`` cannot end it now (None: it can)."""
    t = channel.src
    task = world.tasks[t]
    if channel in task.closed:
        return f"{channel} has ended already"
    log = world.inputs.get(t, ())
    if task.offset < len(log):
        return f"{t} has {len(log) - task.offset} input log entries left"
    live = [c for c in task.inputs if c not in task.ended]
    if live:
        return f"{t} has not had the end of {', '.join(map(str, live))}"
    return None


def end_input(world: World, action: EndInput) -> Event:
    """The sender of ``action.channel`` ends it: its end goes behind what is queued."""
    task = world.writable_task(action.channel.src)
    sends: list[Send] = []
    task.end_output(action.channel, sends)
    return outcome(world, task, sends, (), Event(world.clock, action, task.id))


def ended_tasks_join(world: World, event: Event) -> None:
    """A task whose inputs have all ended still takes part in checkpoints (FLIP-147): no
    barrier can reach it, so it joins every pending checkpoint it has not started, as the
    coordinator's trigger at a source does, as part of the step of ``event``."""
    pending = world.coordinator.pending
    if not pending or world.failed is not None:
        return
    for t, task in world.tasks.items():
        if not task.inputs or len(task.ended) < len(task.inputs):
            continue
        started = {w.checkpoint_id for w in task.handler.waiting()}
        for n, p in sorted(pending.items()):
            if n in world.coordinator.pending and t not in p.acknowledged and n not in started:
                task = world.writable_task(t)
                sends: list[Send] = []
                outcome(world, task, sends, task.trigger(n, sends), event)


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
