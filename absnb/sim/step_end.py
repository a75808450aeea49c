"""What every simulated step ends with, whatever its action.

The checkpoints pending longer than the coordinator's checkpoint timeout abort; under an
alignment timeout (:mod:`absnb.protocols.alignment_timer` decides; steps are this runtime's
clock) tasks hear of the checkpoints whose barriers reached them and a task aligning an
overdue checkpoint switches to unaligned; tasks whose inputs have all ended join the
pending checkpoints (FLIP-147). :func:`~absnb.sim.rules.perform` calls :func:`end_of_step`
after every action's effect.
"""

from __future__ import annotations

from absnb.core.ids import CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, EndOfInput
from absnb.protocols.alignment_timer import due, timer_for
from absnb.sim.actions import Action, TriggerCheckpoint
from absnb.sim.effects import abort, outcome
from absnb.sim.events import Event
from absnb.sim.state import WorldState
from absnb.task import Send


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
    delivered: :mod:`absnb.sim.overtaking`.)"""
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
