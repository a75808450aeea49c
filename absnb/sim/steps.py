"""The steps of the simulated world: what each :class:`~absnb.sim.actions.Action` does.

Deliver the head of a channel to its task, a source (or process) emits its next input log
entry, the coordinator triggers a checkpoint, a task is notified, crashes, declines, a
channel ends, the job recovers. :meth:`~absnb.sim.world.World.apply` checks that the action
is enabled and calls :func:`perform`; each step changes the world it is given and returns
the :class:`~absnb.sim.events.Event` that records it. What a task's step returns is carried
out by :mod:`absnb.sim.effects`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import RECORD_TYPES, EndOfInput
from absnb.sim import modes
from absnb.sim.actions import (
    Action,
    Crash,
    Decline,
    Deliver,
    Emit,
    EndInput,
    Notify,
    Recover,
    Transfer,
    TriggerCheckpoint,
    Wait,
)
from absnb.sim.effects import abort, outcome, push
from absnb.sim.events import Event
from absnb.sim.recovery import recover
from absnb.task import Send

if TYPE_CHECKING:
    from absnb.sim.world import World


def perform(world: World, action: Action) -> Event:
    """Perform the enabled ``action`` on ``world`` and return what happened."""
    return _STEPS[type(action)](world, action)


def deliver(world: World, channel: ChannelId) -> Event:
    """Deliver the head of ``channel`` to its task; a barrier that may overtake (unaligned,
    or late under an alignment timeout) is delivered ahead of the records before it."""
    queue = world.writable_channel(channel)
    if type(queue[0]) in RECORD_TYPES and (world._s.overtake or modes.late_barrier(world, queue)):
        for i, m in enumerate(queue):
            if type(m) is EndOfInput:
                break  # an end overtakes nothing
            if type(m) not in RECORD_TYPES:
                return modes.deliver_overtaking(world, channel, queue, i)
    message = queue.popleft()
    task = world.writable_task(channel.dst)
    replaying = bool(task.replay)
    sends: list[Send] = []
    controls = task.deliver(channel, message, sends)
    if replaying and not task.replay:
        world.replaying -= 1
    event = Event(world.clock, world._s.deliver[channel], channel.dst, message)
    return outcome(world, task, sends, controls, event)


def emit(world: World, action: Action, t: TaskId, entry: Any) -> Event:
    """Task ``t`` emits ``entry``, or its next input log entry when ``entry`` is None (an
    entry given is appended to its input log, as a transfer made by hand)."""
    task = world.writable_task(t)
    if entry is None:
        entry = world.inputs[t][task.offset]
    else:
        world.inputs[t] = (*world.inputs[t], entry)
    replaying = bool(task.replay)
    sends: list[Send] = []
    task.emit(entry, sends)
    if replaying and not task.replay:
        world.replaying -= 1
    push(world, sends)
    return Event(world.clock, action, t, sent=tuple(sends))


def notify_one(world: World, action: Notify) -> Event:
    """Notify-checkpoint-complete to one task, as a step of its own (``notify_steps``)."""
    t = action.task
    rest = world.notices[t][1:]
    if rest:
        world.notices[t] = rest
    else:
        del world.notices[t]
    task = world.writable_task(t)
    sends: list[Send] = []
    controls = task.checkpoint_complete(action.checkpoint_id, sends)
    event = Event(world.clock, action, t)
    return outcome(world, task, sends, controls, event)


def trigger(world: World, action: TriggerCheckpoint) -> Event:
    """The coordinator triggers the next checkpoint at the initiators (or ``action.at``)."""
    n = world.coordinator.trigger(world.clock)
    targets = (action.at,) if action.at is not None else world.graph.initiators()
    event = Event(world.clock, action, targets[0] if len(targets) == 1 else None)
    for t in targets:
        task = world.writable_task(t)
        sends: list[Send] = []
        outcome(world, task, sends, task.trigger(n, sends), event)
    return event


def crash(world: World, action: Crash) -> Event:
    """``action.task`` fails: every pending checkpoint aborts."""
    world.failed = action.task
    event = Event(world.clock, action, action.task)
    abort(world, world.coordinator.abort_all(), event)
    return event


def _deliver(world: World, action: Deliver) -> Event:
    return deliver(world, action.channel)


def _emit(world: World, action: Emit) -> Event:
    return emit(world, action, action.task, None)


def _transfer(world: World, action: Transfer) -> Event:
    return emit(world, action, action.src, (action.dst.operator, action.amount))


def _wait(world: World, action: Wait) -> Event:
    return Event(world.clock, action)


_STEPS: dict[type, Callable[[World, Any], Event]] = {
    Deliver: _deliver,
    Emit: _emit,
    Transfer: _transfer,
    TriggerCheckpoint: trigger,
    Notify: notify_one,
    Crash: crash,
    Wait: _wait,
    Decline: modes.decline,
    EndInput: modes.end_input,
    Recover: recover,
}
