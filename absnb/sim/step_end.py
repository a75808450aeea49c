"""What every simulated step ends with, whatever its action.

The checkpoints pending longer than the coordinator's checkpoint timeout abort; under an
alignment timeout (:mod:`absnb.protocols.alignment_timer` decides; steps are this runtime's
clock) tasks hear of the checkpoints whose barriers reached them and a task aligning an
overdue checkpoint switches to unaligned; tasks whose inputs have all ended join the
pending checkpoints (FLIP-147). :func:`~absnb.sim.rules.perform` calls :func:`end_of_step`
after every action's effect.
"""

from __future__ import annotations

from absnb.core.messages import CheckpointBarrier, EndOfInput
from absnb.sim.actions import Action, TriggerCheckpoint
from absnb.sim.effects import abort, outcome
from absnb.sim.events import Event
from absnb.sim.state import WorldState
from absnb.task import Out, Send


def end_of_step(state: WorldState, action: Action, event: Event) -> None:
    """What the step of ``event`` ends with: the checkpoints pending longer than the
    checkpoint timeout abort, the tasks aligning longer than the alignment timeout switch
    to unaligned, and tasks whose inputs have all ended join the pending checkpoints."""
    coordinator = state.coordinator
    if coordinator.timeout is not None and coordinator.pending:
        abort(state, coordinator.expire(state.clock), event)
    if state.static.alignment_timeout is not None:
        _alignment_timeouts(state, event)
    if type(action) is TriggerCheckpoint or type(event.message) is EndOfInput:
        _ended_tasks_join(state, event)


def _alignment_timeouts(state: WorldState, event: Event) -> None:
    """Flink's aligned checkpoint timeout, in steps (each task's
    :meth:`~absnb.task.StreamTask.tick` decides): tasks hear of the checkpoints whose
    barriers reached them in the step (a triggered task has heard already), and a task
    aligning an overdue checkpoint switches to unaligned. (A barrier of an overdue
    checkpoint overtakes when its channel is next delivered: :mod:`absnb.sim.overtaking`.)"""
    if state.failed is not None:  # every task restarts untimed
        for t in state.timed():
            state.writable_task(t).settle()
        return
    _hear_sent(state, event.sent)
    heard_before = len(event.sent)
    for t in state.timed():
        if not state.tasks[t].ticks(state.clock):
            continue  # nothing changes: the task is not copied for it
        task = state.writable_task(t)
        out = Out()
        switched, _ = task.tick(state.clock, out)
        if switched:
            event.switched += (t,)
            outcome(state, task, out, event)
    _hear_sent(state, event.sent[heard_before:])  # what the switches sent


def _hear_sent(state: WorldState, sent: tuple[Send, ...]) -> None:
    """The receiver of each barrier sent hears of its checkpoint now."""
    for c, m in sent:
        if type(m) is CheckpointBarrier and state.tasks[c.dst].hears(m.checkpoint_id):
            state.writable_task(c.dst).hear(m.checkpoint_id, state.clock)


def _ended_tasks_join(state: WorldState, event: Event) -> None:
    """The coordinator tells each task cut off from barriers (its inputs ended, a logged
    back-edge aside: :meth:`~absnb.task.StreamTask.cut_off`) of the pending checkpoints it
    has not acknowledged; the task joins those it has not started
    (:meth:`~absnb.task.StreamTask.join`)."""
    coordinator = state.coordinator
    if not coordinator.pending or state.failed is not None:
        return
    for t, task in state.tasks.items():
        if not task.cut_off():
            continue  # the common case, asked here so that no task is copied for it
        for n in coordinator.waiting_for(t):
            if n in coordinator.pending:  # an earlier join may have completed a newer one
                task = state.writable_task(t)
                out = Out()
                task.join(n, out)
                outcome(state, task, out, event)
