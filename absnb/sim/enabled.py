"""Where the simulator decides what is enabled: the one rule set.

For each kind of :class:`~absnb.sim.actions.Action` one function gives the reason it cannot
happen now (None: it can). :func:`why_not` asks it of one action (a step a student chose is
refused with that reason, :class:`~absnb.core.errors.ActionNotEnabledError`), and
:func:`enabled_actions` lists the actions whose function says None, in a fixed order, so the
schedulers, the explorer and the views offer exactly what :func:`why_not` accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import OnChannel, Record
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
from absnb.sim.state import WorldState

WAIT = Wait()
RECOVER = (Recover("full"), Recover("partial"))


def why_not(state: WorldState, action: Action) -> str | None:
    """The reason ``action`` cannot be applied to ``state`` now, or None when it can."""
    kind = type(action)
    if state.failed is not None and kind is not Recover:
        return f"task {state.failed} has failed: only Recover is enabled"
    check: Callable[[WorldState, Any], Refusal] | None = _CHECKS.get(kind)
    if check is None:
        return f"{action!r} is not an action"
    reason = check(state, action)
    return reason if reason is None or isinstance(reason, str) else reason[0].format(*reason[1:])


def enabled_actions(
    state: WorldState, *, crashes: bool = False, ends: bool = False
) -> list[Action]:
    """The actions that can happen now, in a fixed order: deliveries by channel, emits by
    task, notifications, (with ``ends``) a finished sender ending each of its channels, a
    wait, then a checkpoint trigger, then (with ``crashes``) a crash of each task.

    A crash and an end of input are always possible (:func:`why_not` accepts them), but a
    run offers them only when asked, as faults and bounded inputs are what it explores."""
    if state.failed is not None:
        return list(RECOVER)
    acts = _deliveries(state)
    _emits(state, acts)
    if state.notices:
        acts.extend(Notify(t, pending[0]) for t, pending in state.notices.items())
    if ends:
        acts.extend(EndInput(c) for c in state.channels if _unfinished(state, c) is None)
    if not acts and _ticking(state):
        acts.append(WAIT)
    if can_trigger(state):
        acts.append(state.static.trigger)
    if crashes:
        acts.extend(Crash(t) for t in state.graph.tasks)
    return acts


def _deliveries(state: WorldState) -> list[Action]:
    """The enabled deliveries in channel order: :func:`_deliverable` asked of every channel at
    once. Its tests in order are cheap ones first, so the common cases are asked inline (the
    hot path of every step): an empty channel is never deliverable, and while no task
    replays a non-empty one is unless blocked. ``tests/sim/test_enabled.py`` checks the
    result against :func:`why_not` for every action."""
    deliveries, blocked = state.static.deliveries, state.blocked
    if state.replaying:
        pairs = zip(deliveries, state.channels.items(), strict=True)
        return [d for d, (c, q) in pairs if q and _deliverable(state, c) is None]
    if blocked:
        return [
            d
            for d, (c, q) in zip(deliveries, state.channels.items(), strict=True)
            if q and c not in blocked
        ]
    return [d for d, q in zip(deliveries, state.channels.values(), strict=True) if q]


def _emits(state: WorldState, acts: list[Action]) -> None:
    """Append the enabled emits in task order: :func:`_emittable` asked of every source and
    process, its first tests (halted, input log consumed) inline; the rule itself is
    asked only of a task that replays or whose next entry may wait (the bank)."""
    tasks, inputs = state.tasks, state.inputs
    for t, emit, waits in state.static.emits:
        task = tasks[t]
        if task.halted or task.offset >= len(inputs[t]):
            continue
        if (not task.replay and not waits) or _emittable(state, t) is None:
            acts.append(emit)


def progress_actions(state: WorldState) -> list[Action]:
    """The enabled deliveries, emits, notifications and waits: the run is over when there
    are none."""
    return [a for a in enabled_actions(state) if type(a) in _PROGRESS]


_PROGRESS = (Deliver, Emit, Notify, Wait)


def can_trigger(state: WorldState) -> bool:
    """True when the coordinator may start a checkpoint now."""
    limit = state.static.max_checkpoints
    return (
        state.failed is None
        and state.replaying == 0
        and state.coordinator.can_trigger()
        and (limit is None or state.coordinator.next_id <= limit)
    )


def replay_allows(state: WorldState, channel: ChannelId, head: OnChannel) -> bool:
    """Whether the receiver of ``channel``, replaying after partial recovery, may consume
    ``head`` now (a replay fixes the order of records only)."""
    replay = state.tasks[channel.dst].replay
    return not replay or type(head) is not Record or replay[0] == channel


# -- the rules, one per kind of action -------------------------------------------------------
Refusal = str | tuple[Any, ...] | None
"""A rule's answer: None (enabled), or why not, as words or as ``(template, *values)``,
which :func:`why_not` formats (the rules asked for every channel at every step build no
text)."""


def _deliverable(state: WorldState, c: ChannelId) -> Refusal:
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


def _emittable(state: WorldState, t: TaskId) -> Refusal:
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


def _transfer(state: WorldState, action: Transfer) -> str | None:
    src, dst, graph = action.src, action.dst, state.graph
    if src not in state.inputs or graph.kind(src) != "process":
        return f"{src} is not an account (a process) of this job"
    if (src.operator, dst.operator) not in {(e.src, e.dst) for e in graph.job.edges}:
        return f"there is no channel {src}->{dst} for the transfer"
    task, amount = state.tasks[src], action.amount
    refusal = getattr(graph.function(src), "refusal", None)
    if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
        if refusal is not None:
            return str(refusal(task.state, (dst.operator, amount)))
        return f"a transfer amount must be a positive whole number, not {amount!r}"
    if task.halted:
        return f"{src} is halted until the checkpoint completes"
    if task.offset < len(state.inputs[src]) or task.replay:
        return f"{src} must first make the transfers already in its input log"
    reason = refusal(task.state, (dst.operator, amount)) if refusal else None
    return None if reason is None else str(reason)


def _trigger(state: WorldState, action: TriggerCheckpoint) -> str | None:
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


def _notify(state: WorldState, action: Notify) -> str | None:
    pending = state.notices.get(action.task, ())
    if not pending:
        return f"no notification is on its way to {action.task}"
    if pending[0] != action.checkpoint_id:
        return f"{action.task} hears of checkpoint {pending[0]} first"
    return None


def declinable(state: WorldState, t: TaskId) -> CheckpointId | None:
    """The checkpoint ``t`` would decline: the oldest pending one it has not acknowledged."""
    for n, p in sorted(state.coordinator.pending.items()):
        if t not in p.acknowledged:
            return n
    return None


def _decline(state: WorldState, action: Decline) -> str | None:
    t = action.task
    if t not in state.tasks:
        return f"there is no task {t}"
    if not state.protocol.may_be_declined:
        return f"a {state.protocol.name} snapshot cannot be declined"
    if declinable(state, t) is None:
        return f"no pending checkpoint waits for {t}"
    return None


def _unfinished(state: WorldState, channel: ChannelId) -> str | None:
    """Why the sender of ``channel`` cannot end it now (None: it can): it still has input
    log entries to consume, or inputs that have not ended (FLIP-147: a task finishes when
    its input has ended)."""
    t = channel.src
    task = state.tasks[t]
    if channel in task.closed:
        return f"{channel} has ended already"
    log = state.inputs.get(t, ())
    if task.offset < len(log):
        return f"{t} has {len(log) - task.offset} input log entries left"
    live = [c for c in task.inputs if c not in task.ended]
    if live:
        return f"{t} has not had the end of {', '.join(map(str, live))}"
    return None


def _end_input(state: WorldState, action: EndInput) -> str | None:
    if action.channel not in state.channels:
        return f"there is no channel {action.channel}"
    return _unfinished(state, action.channel)


def _ticking(state: WorldState) -> bool:
    """Some alignment timer would fire if time passed (:mod:`absnb.protocols.alignment_timer`)."""
    return any(timer.ticking(state.clock) for timer in state.aligning.values())


def _wait(state: WorldState, action: Wait) -> str | None:
    if not _ticking(state):
        return "no task waits for a checkpoint under an alignment timeout that is not yet due"
    if progress_actions(state) != [WAIT]:
        return "time passes only when nothing else can move"
    return None


def _crash(state: WorldState, action: Crash) -> str | None:
    return None if action.task in state.tasks else f"there is no task {action.task}"


def _recover(state: WorldState, action: Recover) -> str | None:
    if state.failed is None:
        return "no task has failed"
    if action.mode not in ("full", "partial"):
        return f"unknown recovery mode {action.mode!r}: use 'full' or 'partial'"
    return None


_CHECKS: dict[type, Callable[[WorldState, Any], Refusal]] = {
    Deliver: lambda state, action: _deliverable(state, action.channel),
    Emit: lambda state, action: _emittable(state, action.task),
    Transfer: _transfer,
    TriggerCheckpoint: _trigger,
    Notify: _notify,
    Decline: _decline,
    EndInput: _end_input,
    Wait: _wait,
    Crash: _crash,
    Recover: _recover,
}
