"""Carrying out what a task's step returned, in the simulated world.

A :class:`~absnb.task.StreamTask` step returns the records and barriers it sends and the
controls for its runtime (block / unblock a channel, a task snapshot to acknowledge, a
decline); here the :class:`~absnb.sim.world.World` pushes the sends onto their FIFO
channels, blocks and unblocks, and hands acknowledgements and declines to the checkpoint
coordinator, notifying every task when a checkpoint completes or aborts. Every function
changes the world it is given and records what happened on the step's
:class:`~absnb.sim.events.Event`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from absnb.core.effects import Block, SnapshotState, Unblock
from absnb.core.effects import Decline as Declined
from absnb.core.ids import CheckpointId
from absnb.core.snapshot import TaskSnapshot
from absnb.sim.events import Event
from absnb.sim.state import WorldState
from absnb.task import Control, Dropped, Out, StreamTask


def outcome(world: WorldState, task: StreamTask, out: Out, event: Event) -> Event:
    """Push what ``task`` sent in the step (after what the step's other tasks sent), carry
    out its controls, and return the event."""
    if out.sends:
        world.push(out.sends)
        event.sent += tuple(out.sends)
    if out.controls:
        carry_out(world, task, out.controls, event)
    return event


def carry_out(
    world: WorldState, task: StreamTask, controls: Iterable[Control], event: Event
) -> None:
    """Carry out ``task``'s controls in order (one table)."""
    for ctl in controls:
        _HANDLERS[type(ctl)](world, task, ctl, event)


def notify(world: WorldState, checkpoint_id: CheckpointId, event: Event, *, complete: bool) -> None:
    """Notify-checkpoint-complete (or aborted) to every live task."""
    for t in world.graph.tasks:
        if t == world.failed:
            continue
        task = world.writable_task(t)
        out = Out()
        if complete:
            task.checkpoint_complete(checkpoint_id, out)
        else:
            task.checkpoint_aborted(checkpoint_id, out)
        outcome(world, task, out, event)


def abort(world: WorldState, aborted: Iterable[CheckpointId], event: Event) -> None:
    """Record the ``aborted`` checkpoints on ``event`` and notify every task of each."""
    for n in aborted:
        event.aborted += (n,)
        notify(world, n, event, complete=False)


def _block(world: WorldState, task: StreamTask, ctl: Block, event: Event) -> None:
    world.blocked.add(ctl.channel)
    event.blocked += (ctl.channel,)


def _unblock(world: WorldState, task: StreamTask, ctl: Unblock, event: Event) -> None:
    world.blocked.discard(ctl.channel)
    event.unblocked += (ctl.channel,)


def _snapshot_state(world: WorldState, task: StreamTask, ctl: SnapshotState, event: Event) -> None:
    event.snapshots += ((task.id, ctl.checkpoint_id),)


def _dropped(world: WorldState, task: StreamTask, ctl: Dropped, event: Event) -> None:
    event.dropped = True


def _declined(world: WorldState, task: StreamTask, ctl: Declined, event: Event) -> None:
    if world.coordinator.decline(ctl.checkpoint_id, task.id, ctl.reason):
        abort(world, (ctl.checkpoint_id,), event)


def _acknowledge(world: WorldState, task: StreamTask, ctl: TaskSnapshot, event: Event) -> None:
    """The task's snapshot acknowledges its checkpoint; the last one completes it, which
    aborts the older pending checkpoints it subsumes and notifies every task (at once, or
    as steps of their own with ``notify_steps``)."""
    decided = world.coordinator.acknowledge(ctl, world.clock)
    done = decided.completed
    if done is None:
        return
    event.completed += (done.checkpoint_id,)
    abort(world, decided.subsumed, event)
    if world.static.notify_steps:
        for t in world.graph.tasks:
            world.notices[t] = (*world.notices.get(t, ()), done.checkpoint_id)
    else:
        notify(world, done.checkpoint_id, event, complete=True)


_HANDLERS: dict[type, Callable[[WorldState, StreamTask, Any, Event], None]] = {
    Block: _block,
    Unblock: _unblock,
    SnapshotState: _snapshot_state,
    Dropped: _dropped,
    Declined: _declined,
    TaskSnapshot: _acknowledge,
}
