"""The simulator's action table: when each kind of action may happen and what it does.

h11's event table is the model: every kind of :obj:`~absnb.sim.actions.Action` is one
entry of :data:`RULES`, a :class:`Rule` of its *precondition* (the reason it cannot happen
now; None: it can) and its *effect* (changes the state it is given and returns the
:class:`~absnb.sim.events.Event` that records it), and below, one section per kind, the
two are written side by side. This is the one rule set: :func:`why_not` asks an action's
precondition (a step a student chose is refused with that reason,
:class:`~absnb.core.errors.ActionNotEnabledError`), :func:`perform` carries out its effect
and ends the step (:mod:`absnb.sim.step_end`), and :mod:`absnb.sim.enabled` lists every
action whose precondition holds, at once (``tests/sim/test_enabled.py`` pins that fast
path to these preconditions). What a task's step returns is carried out by
:mod:`absnb.sim.effects`; a barrier that overtakes is :mod:`absnb.sim.overtaking`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import EndOfInput, OnChannel, Record
from absnb.sim.actions import (
    Action,
    Crash,
    DeclineCheckpoint,
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
from absnb.sim.events import Event
from absnb.sim.overtaking import deliver_overtaking, overtaking_at
from absnb.sim.recovery import recover
from absnb.sim.state import WorldState
from absnb.sim.step_end import end_of_step
from absnb.task import Out

Refusal = str | tuple[Any, ...] | None
"""A precondition's answer: None (enabled), or why not, as words or as
``(template, *values)``, which :func:`why_not` formats (the preconditions asked for every
channel at every step build no text)."""


class Rule(NamedTuple):
    """One entry of the action table."""

    precondition: Callable[[WorldState, Any], Refusal]
    """Why the action cannot happen now (None: it can); asked only of a live job."""
    effect: Callable[[WorldState, Any], Event]
    """What the action does to the state, recorded as the step's event."""


def why_not(state: WorldState, action: Action) -> str | None:
    """The reason ``action`` cannot be applied to ``state`` now, or None when it can."""
    kind = type(action)
    if state.failed is not None and kind is not Recover:
        return f"task {state.failed} has failed: only Recover is enabled"
    rule = RULES.get(kind)
    if rule is None:
        return f"{action!r} is not an action"
    reason = rule.precondition(state, action)
    return reason if reason is None or isinstance(reason, str) else reason[0].format(*reason[1:])


def perform(state: WorldState, action: Action) -> Event:
    """Carry out the effect of the enabled ``action`` on ``state``, end the step
    (:func:`~absnb.sim.step_end.end_of_step`) and return what happened."""
    event = _EFFECTS[type(action)](state, action)
    coordinator = state.coordinator
    if (
        (coordinator.timeout is not None and coordinator.pending)
        or state.static.alignment_timeout is not None
        or type(action) is TriggerCheckpoint
        or type(event.message) is EndOfInput
    ):  # the cases in which end_of_step does anything, asked here as they are rare
        end_of_step(state, action, event)
    state.clock += 1
    return event


# -- Deliver: the head of a channel (or a barrier that overtakes) reaches its task ----------
def deliverable(state: WorldState, c: ChannelId) -> Refusal:
    """Deliver's precondition, by channel: cheap tests first (the fast path asks them
    inline)."""
    q = state.channels.get(c)
    if q is None:
        return ("there is no channel {}", c)
    if not q:
        return ("channel {} is empty", c)
    if c in state.blocked:
        return ("channel {} is blocked by {}", c, c.dst)
    if state.replaying and not replay_allows(state, c, q[0]):
        return (
            "{} is replaying and must next consume from {}",
            c.dst,
            state.tasks[c.dst].replay[0],
        )
    return None


def replay_allows(state: WorldState, channel: ChannelId, head: OnChannel) -> bool:
    """Whether the receiver of ``channel``, replaying after partial recovery, may consume
    ``head`` now (a replay fixes the order of records only)."""
    replay = state.tasks[channel.dst].replay
    return not replay or type(head) is not Record or replay[0] == channel


def deliver(state: WorldState, action: Deliver) -> Event:
    """Deliver the head of the channel to its task, or the barrier that overtakes the
    records before it (:mod:`absnb.sim.overtaking`)."""
    channel = action.channel
    if state.static.overtake or state.static.alignment_timeout is not None:
        i = overtaking_at(state, channel)
        if i is not None:
            return deliver_overtaking(state, channel, i)
    queue = state.writable_channel(channel)
    message = queue.popleft()
    task = state.writable_task(channel.dst)
    replaying = bool(task.replay)
    out = Out()
    task.deliver(channel, message, out)
    if replaying and not task.replay:
        state.replaying -= 1
    event = Event(state.clock, action, channel.dst, message)
    return outcome(state, task, out, event) if out.sends or out.controls else event


# -- Emit and Transfer: a source or process consumes the next entry of its input log ---------
def emittable(state: WorldState, t: TaskId) -> Refusal:
    """Emit's precondition, by task: cheap tests first (the fast path asks them inline)."""
    if t not in state.inputs:
        return ("{} is not a source or process", t)
    task = state.tasks[t]
    if task.halted:
        return ("{} is halted until the checkpoint completes", t)
    log = state.inputs[t]
    if task.offset >= len(log):
        return ("{} has emitted its whole input log", t)
    if task.replay and task.replay[0] is not None:
        return ("{} is replaying and must next consume from {}", t, task.replay[0])
    wait = state.static.waits.get(t)
    reason = wait(task.state, log[task.offset]) if wait else None
    return f"its next entry waits: {reason}" if reason else None


def emit(state: WorldState, action: Action, t: TaskId, entry: Any) -> Event:
    """Task ``t`` emits ``entry``, or its next input log entry when ``entry`` is None (an
    entry given is appended to its input log, as a transfer made by hand)."""
    task = state.writable_task(t)
    if entry is None:
        entry = state.inputs[t][task.offset]
    else:
        state.inputs[t] = (*state.inputs[t], entry)
    replaying = bool(task.replay)
    out = Out()
    task.emit(entry, out)
    if replaying and not task.replay:
        state.replaying -= 1
    state.push(out.sends)
    return Event(state.clock, action, t, sent=tuple(out.sends))


def _why_not_transfer(state: WorldState, action: Transfer) -> str | None:
    src, dst, graph = action.src, action.dst, state.graph
    if src not in state.inputs or graph.kind(src) != "process":
        return f"{src} is not an account (a process) of this job"
    if (src.operator, dst.operator) not in {(e.src, e.dst) for e in graph.job.edges}:
        return f"there is no channel {src}->{dst} for the transfer"
    task, amount = state.tasks[src], action.amount
    refusal = getattr(graph.function(src), "refusal", None)
    # (an amount that is not a positive whole number: refused by Transfer itself)
    if task.halted:
        return f"{src} is halted until the checkpoint completes"
    if task.offset < len(state.inputs[src]) or task.replay:
        return f"{src} must first make the transfers already in its input log"
    reason = refusal(task.state, (dst.operator, amount)) if refusal else None
    return None if reason is None else str(reason)


def _transfer(state: WorldState, action: Transfer) -> Event:
    return emit(state, action, action.src, (action.dst.operator, action.amount))


# -- TriggerCheckpoint: the coordinator starts the next checkpoint -------------------------
def can_trigger(state: WorldState) -> bool:
    """True when the coordinator may start a checkpoint now."""
    if state.failed is not None or state.replaying:
        return False
    coordinator, limit = state.coordinator, state.static.max_checkpoints
    most = coordinator.max_concurrent  # coordinator.can_trigger(), inline: asked every step
    return (most is None or len(coordinator.pending) < most) and (
        limit is None or coordinator.next_id <= limit
    )


def _why_not_trigger(state: WorldState, action: TriggerCheckpoint) -> str | None:
    if not can_trigger(state):
        return _why_no_trigger(state)
    at, protocol = action.at, state.protocol
    if at is None:
        return None
    if at not in state.tasks:
        return f"there is no task {at}"
    if not protocol.starts_anywhere:
        return (
            f"{protocol.name} starts checkpoints at every source; "
            "only Chandy-Lamport can start at a named process"
        )
    reached = state.graph.downstream(at)
    unreached = [t for t in state.graph.tasks if t not in reached]
    if unreached:
        return (
            f"markers sent from {at} never reach {', '.join(map(str, unreached))}, "
            "so the snapshot could not complete: start it at a task that reaches "
            "every task, or name no task (it then starts at every source)"
        )
    return None


def _why_no_trigger(state: WorldState) -> str:
    limit = state.max_checkpoints
    if not state.protocol.capabilities.takes_checkpoints:
        return f"protocol {state.protocol.name} takes no checkpoints"
    if state.replaying:
        return "tasks are still replaying after a recovery"
    if limit is not None and state.coordinator.next_id > limit:
        return f"this run allows {limit} checkpoint(s)"
    return "a checkpoint is already pending (one at a time for this protocol)"


def trigger(state: WorldState, action: TriggerCheckpoint) -> Event:
    """The coordinator triggers the next checkpoint at the initiators (or ``action.at``)."""
    n = state.coordinator.trigger(state.clock)
    targets = (action.at,) if action.at is not None else state.graph.initiators()
    event = Event(state.clock, action, targets[0] if len(targets) == 1 else None)
    for t in targets:
        task = state.writable_task(t)
        out = Out()
        task.trigger(n, out, state.clock)
        outcome(state, task, out, event)
    return event


# -- Notify: a notify-checkpoint-complete reaches one task, as a step (``notify_steps``) -----
def _why_not_notify(state: WorldState, action: Notify) -> str | None:
    pending = state.notices.get(action.task, ())
    if not pending:
        return f"no notification is on its way to {action.task}"
    if pending[0] != action.checkpoint_id:
        return f"{action.task} hears of checkpoint {pending[0]} first"
    return None


def _notify(state: WorldState, action: Notify) -> Event:
    t = action.task
    rest = state.notices[t][1:]
    if rest:
        state.notices[t] = rest
    else:
        del state.notices[t]
    task = state.writable_task(t)
    out = Out()
    task.checkpoint_complete(action.checkpoint_id, out)
    return outcome(state, task, out, Event(state.clock, action, t))


# -- DeclineCheckpoint: a task declines the oldest pending checkpoint it has not acknowledged
def declinable(state: WorldState, t: TaskId) -> CheckpointId | None:
    """The checkpoint ``t`` would decline: the oldest pending one it has not acknowledged."""
    for n, p in sorted(state.coordinator.pending.items()):
        if t not in p.acknowledged:
            return n
    return None


def _why_not_decline(state: WorldState, action: DeclineCheckpoint) -> str | None:
    t = action.task
    if t not in state.tasks:
        return f"there is no task {t}"
    if not state.protocol.may_be_declined:
        return f"a {state.protocol.name} snapshot cannot be declined"
    if declinable(state, t) is None:
        return f"no pending checkpoint waits for {t}"
    return None


def _decline(state: WorldState, action: DeclineCheckpoint) -> Event:
    """It sends a cancellation barrier on; the coordinator aborts the checkpoint (through
    the task's controls)."""
    n = declinable(state, action.task)
    assert n is not None
    task = state.writable_task(action.task)
    out = Out()
    task.decline(n, action.reason, out)
    return outcome(state, task, out, Event(state.clock, action, action.task))


# -- EndInput: a finished sender ends one of its channels (FLIP-147) ------------------------
def unfinished(state: WorldState, channel: ChannelId) -> str | None:
    """Why the sender of ``channel`` cannot end it now (None: it can): it still has input
    log entries to consume, or inputs that have not ended (FLIP-147: a task finishes when
    its input has ended)."""
    t = channel.src
    task = state.tasks[t]
    if channel in task.closed:
        return f"{channel} has ended already"
    log = state.inputs.get(t, ())
    if task.finished(len(log)):
        return None
    if task.offset < len(log):
        return f"{t} has {len(log) - task.offset} input log entries left"
    live = [c for c in task.inputs if c not in task.ended]
    return f"{t} has not had the end of {', '.join(map(str, live))}"


def _why_not_end_input(state: WorldState, action: EndInput) -> str | None:
    if action.channel not in state.channels:
        return f"there is no channel {action.channel}"
    return unfinished(state, action.channel)


def _end_input(state: WorldState, action: EndInput) -> Event:
    """The end goes behind what is queued on the channel."""
    task = state.writable_task(action.channel.src)
    out = Out()
    task.end_output(action.channel, out)
    return outcome(state, task, out, Event(state.clock, action, task.id))


# -- Wait: time passes, so that an alignment timeout still fires ----------------------------
def ticking(state: WorldState) -> bool:
    """Some alignment timer would fire if time passed (:mod:`absnb.protocols.alignment_timer`)."""
    if state.static.alignment_timeout is None:
        return False
    timers = (task.timer for task in state.tasks.values())
    return any(timer.ticking(state.clock) for timer in timers if timer is not None)


def _why_not_wait(state: WorldState, action: Wait) -> str | None:
    if not ticking(state):
        return "no task waits for a checkpoint under an alignment timeout that is not yet due"
    if (
        state.notices
        or any(deliverable(state, c) is None for c in state.channels)
        or any(emittable(state, t) is None for t in state.static.emitters)
    ):
        return "time passes only when nothing else can move"
    return None


def _wait(state: WorldState, action: Wait) -> Event:
    return Event(state.clock, action)


# -- Crash and Recover -----------------------------------------------------------------------
def _why_not_crash(state: WorldState, action: Crash) -> str | None:
    return None if action.task in state.tasks else f"there is no task {action.task}"


def _crash(state: WorldState, action: Crash) -> Event:
    """The task fails: every pending checkpoint aborts."""
    state.failed = action.task
    event = Event(state.clock, action, action.task)
    abort(state, state.coordinator.abort_all(), event)
    return event


def _why_not_recover(state: WorldState, action: Recover) -> str | None:
    if state.failed is None:
        return "no task has failed"
    if action.mode not in ("full", "partial"):
        return f"unknown recovery mode {action.mode!r}: use 'full' or 'partial'"
    return None


RULES: dict[type, Rule] = {
    Deliver: Rule(lambda state, action: deliverable(state, action.channel), deliver),
    Emit: Rule(
        lambda state, action: emittable(state, action.task),
        lambda state, action: emit(state, action, action.task, None),
    ),
    Transfer: Rule(_why_not_transfer, _transfer),
    TriggerCheckpoint: Rule(_why_not_trigger, trigger),
    Notify: Rule(_why_not_notify, _notify),
    DeclineCheckpoint: Rule(_why_not_decline, _decline),
    EndInput: Rule(_why_not_end_input, _end_input),
    Wait: Rule(_why_not_wait, _wait),
    Crash: Rule(_why_not_crash, _crash),
    Recover: Rule(_why_not_recover, recover),
}
"""The action table: each kind of action's precondition and effect."""

_EFFECTS = {kind: rule.effect for kind, rule in RULES.items()}
"""The effects alone, for :func:`perform` (every step)."""
