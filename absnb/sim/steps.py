"""What each action does to the simulated state: one function per kind of
:class:`~absnb.sim.actions.Action`, and what every step ends with.

Deliver the head of a channel to its task (a barrier that may overtake goes ahead of the
records queued before it: unaligned checkpoints, FLIP-76), a source (or process) emits its
next input log entry, the coordinator triggers a checkpoint, a task is notified, crashes,
declines, a channel ends (FLIP-147), time passes, the job recovers. Whether an action may
happen is :mod:`absnb.sim.enabled`'s to say; :func:`perform` assumes it may, changes the
state it is given and returns the :class:`~absnb.sim.events.Event` that records it. What a
task's step returns is carried out by :mod:`absnb.sim.effects`.

Every step ends (:func:`end_of_step`) with the coordinator's checkpoint timeout, the
alignment timeout (:mod:`absnb.protocols.alignment_timer` decides; steps are this runtime's
clock), and tasks whose inputs have all ended joining the pending checkpoints.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, EndOfInput
from absnb.protocols.alignment_timer import due, timer_for
from absnb.protocols.overtaken import overtaken, overtaking_position
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
from absnb.sim.effects import abort, outcome
from absnb.sim.enabled import declinable
from absnb.sim.events import Event
from absnb.sim.recovery import recover
from absnb.sim.state import WorldState
from absnb.task import Send


def perform(state: WorldState, action: Action) -> Event:
    """Perform the enabled ``action`` on ``state``, end the step, and return what happened."""
    event = _STEPS[type(action)](state, action)
    end_of_step(state, action, event)
    state.clock += 1
    return event


def deliver(state: WorldState, channel: ChannelId) -> Event:
    """Deliver the head of ``channel`` to its task, or the barrier that overtakes the
    records before it (:func:`overtaking_at`)."""
    i = overtaking_at(state, channel)
    if i is not None:
        return _deliver_overtaking(state, channel, i)
    queue = state.writable_channel(channel)
    message = queue.popleft()
    task = state.writable_task(channel.dst)
    replaying = bool(task.replay)
    sends: list[Send] = []
    controls = task.deliver(channel, message, sends)
    if replaying and not task.replay:
        state.replaying -= 1
    event = Event(state.clock, state.static.deliver[channel], channel.dst, message)
    return outcome(state, task, sends, controls, event)


def overtaking_at(state: WorldState, channel: ChannelId) -> int | None:
    """Where the barrier a delivery of ``channel`` takes ahead of the messages queued before
    it is (a priority event under unaligned, FLIP-76; or a barrier of a checkpoint overdue at
    the task under an alignment timeout, even at the head:
    :func:`~absnb.protocols.overtaken.overtaking_position` decides); None: the head is delivered in
    order."""
    queue = state.channels[channel]
    if channel.dst in state.aligning:
        overdue = state.aligning[channel.dst].overdue(state.clock)
        return overtaking_position(queue, False, overdue) if overdue else None
    if state.static.overtake and type(queue[0]) is not CheckpointBarrier:
        return overtaking_position(queue, True)
    return None


def _deliver_overtaking(state: WorldState, channel: ChannelId, i: int) -> Event:
    """Deliver the barrier at position ``i`` of ``channel`` ahead of what is queued before it
    (FLIP-76: a barrier is a priority event and overtakes in-flight records)."""
    queue = state.writable_channel(channel)
    barrier = queue[i]
    assert isinstance(barrier, CheckpointBarrier)  # ``i``: found by overtaking_at
    records = overtaken(islice(queue, i))  # it overtakes cancellation markers too
    del queue[i]
    task = state.writable_task(channel.dst)
    sends: list[Send] = []
    controls = task.deliver_overtaking(channel, barrier, records, sends)
    event = Event(state.clock, state.static.deliver[channel], channel.dst, barrier)
    event.overtaken = len(records)
    return outcome(state, task, sends, controls, event)


def emit(state: WorldState, action: Action, t: TaskId, entry: Any) -> Event:
    """Task ``t`` emits ``entry``, or its next input log entry when ``entry`` is None (an
    entry given is appended to its input log, as a transfer made by hand)."""
    task = state.writable_task(t)
    if entry is None:
        entry = state.inputs[t][task.offset]
    else:
        state.inputs[t] = (*state.inputs[t], entry)
    replaying = bool(task.replay)
    sends: list[Send] = []
    task.emit(entry, sends)
    if replaying and not task.replay:
        state.replaying -= 1
    state.push(sends)
    return Event(state.clock, action, t, sent=tuple(sends))


def notify_one(state: WorldState, action: Notify) -> Event:
    """Notify-checkpoint-complete to one task, as a step of its own (``notify_steps``)."""
    t = action.task
    rest = state.notices[t][1:]
    if rest:
        state.notices[t] = rest
    else:
        del state.notices[t]
    task = state.writable_task(t)
    sends: list[Send] = []
    controls = task.checkpoint_complete(action.checkpoint_id, sends)
    return outcome(state, task, sends, controls, Event(state.clock, action, t))


def trigger(state: WorldState, action: TriggerCheckpoint) -> Event:
    """The coordinator triggers the next checkpoint at the initiators (or ``action.at``)."""
    n = state.coordinator.trigger(state.clock)
    targets = (action.at,) if action.at is not None else state.graph.initiators()
    event = Event(state.clock, action, targets[0] if len(targets) == 1 else None)
    for t in targets:
        task = state.writable_task(t)
        sends: list[Send] = []
        outcome(state, task, sends, task.trigger(n, sends), event)
    return event


def crash(state: WorldState, action: Crash) -> Event:
    """``action.task`` fails: every pending checkpoint aborts."""
    state.failed = action.task
    event = Event(state.clock, action, action.task)
    abort(state, state.coordinator.abort_all(), event)
    return event


def decline(state: WorldState, action: Decline) -> Event:
    """``action.task`` declines the oldest pending checkpoint it has not acknowledged: it
    sends a cancellation barrier on; the coordinator aborts the checkpoint (through the
    task's controls)."""
    n = declinable(state, action.task)
    assert n is not None
    task = state.writable_task(action.task)
    sends: list[Send] = []
    controls = task.decline(n, action.reason, sends)
    return outcome(state, task, sends, controls, Event(state.clock, action, action.task))


def end_input(state: WorldState, action: EndInput) -> Event:
    """The sender of ``action.channel`` ends it: its end goes behind what is queued."""
    task = state.writable_task(action.channel.src)
    sends: list[Send] = []
    task.end_output(action.channel, sends)
    return outcome(state, task, sends, (), Event(state.clock, action, task.id))


# -- the end of every step -------------------------------------------------------------------
def end_of_step(state: WorldState, action: Action, event: Event) -> None:
    """What the step of ``event`` ends with: the checkpoints pending longer than the
    checkpoint timeout abort, the tasks aligning longer than the alignment timeout switch
    to unaligned, and tasks whose inputs have all ended join the pending checkpoints."""
    coordinator = state.coordinator
    if coordinator.timeout is not None and coordinator.pending:
        abort(state, coordinator.expire(state.clock), event)
    if state.static.alignment_timeout is not None:
        _alignment_timeouts(state, action, event)
    if type(action) is TriggerCheckpoint or type(event.message) is EndOfInput:
        _ended_tasks_join(state, event)


def _alignment_timeouts(state: WorldState, action: Action, event: Event) -> None:
    """Flink's aligned checkpoint timeout, in steps (:mod:`absnb.protocols.alignment_timer`
    decides): tasks hear of the checkpoints whose barriers reached them in the step (or
    that were triggered there), and a task aligning an overdue checkpoint switches to
    unaligned. (A barrier of an overdue checkpoint overtakes when its channel is next
    delivered: :func:`deliver`.)"""
    if state.failed is not None:
        state.aligning.clear()
        return
    if type(action) is TriggerCheckpoint:  # an initiator with inputs aligns too
        n = state.coordinator.next_id - 1
        for t in (action.at,) if action.at is not None else state.graph.initiators():
            if state.tasks[t].inputs:
                hear(state, t, n)
    _hear_sent(state, event.sent)
    heard_before = len(event.sent)
    for t in list(state.aligning):
        _timer_due(state, t, event)
    _hear_sent(state, event.sent[heard_before:])  # what the switches sent


def _timer_due(state: WorldState, t: TaskId, event: Event) -> None:
    """Carry out at task ``t`` what the alignment timer decides at this step."""
    task = state.tasks[t]
    decided = due(state.aligning[t], task.handler, state.clock)
    if decided.timer is None:
        del state.aligning[t]
        return
    state.aligning[t] = decided.timer
    if decided.switch:
        task = state.writable_task(t)
        sends: list[Send] = []
        event.switched += (t,)
        outcome(state, task, sends, task.alignment_timeout(sends), event)


def _hear_sent(state: WorldState, sent: tuple[Send, ...]) -> None:
    for c, m in sent:
        if type(m) is CheckpointBarrier:
            hear(state, c.dst, m.checkpoint_id)


def hear(state: WorldState, t: TaskId, n: CheckpointId) -> None:
    """Task ``t`` hears of checkpoint ``n`` now (a barrier of it reached one of its inputs,
    or it was triggered there): its alignment timer starts, unless it had."""
    timer = state.aligning.get(t) or timer_for(state.static.protocol)
    assert timer is not None  # only called under an alignment timeout
    state.aligning[t] = timer.hear(n, state.clock)


def _ended_tasks_join(state: WorldState, event: Event) -> None:
    """The coordinator tells each task whose inputs have all ended of the pending
    checkpoints it has not acknowledged; the task joins those it has not started
    (:meth:`~absnb.task.StreamTask.join`)."""
    coordinator = state.coordinator
    if not coordinator.pending or state.failed is not None:
        return
    for t, task in state.tasks.items():
        if not task.inputs or len(task.ended) < len(task.inputs):
            continue  # the common case, asked here so that no task is copied for it
        for n in coordinator.waiting_for(t):
            if n in coordinator.pending:  # an earlier join may have completed a newer one
                task = state.writable_task(t)
                sends: list[Send] = []
                outcome(state, task, sends, task.join(n, sends), event)


def _deliver(state: WorldState, action: Deliver) -> Event:
    return deliver(state, action.channel)


def _emit(state: WorldState, action: Emit) -> Event:
    return emit(state, action, action.task, None)


def _transfer(state: WorldState, action: Transfer) -> Event:
    return emit(state, action, action.src, (action.dst.operator, action.amount))


def _wait(state: WorldState, action: Wait) -> Event:
    return Event(state.clock, action)


_STEPS: dict[type, Callable[[WorldState, Any], Event]] = {
    Deliver: _deliver,
    Emit: _emit,
    Transfer: _transfer,
    TriggerCheckpoint: trigger,
    Notify: notify_one,
    Crash: crash,
    Wait: _wait,
    Decline: decline,
    EndInput: end_input,
    Recover: recover,
}
