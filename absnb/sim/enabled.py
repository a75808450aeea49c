"""Why an action is not enabled in a :class:`~absnb.sim.world.World`: one function per kind
of action, each returning the reason in words (None: the action is enabled).

:meth:`World.is_enabled` and :meth:`World.apply` ask :func:`why_not`; the reasons are what
a student sees when a step they chose is refused (:class:`ActionNotEnabledError`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from absnb.sim.world import World


def why_not(world: World, action: Action) -> str | None:
    """The reason ``action`` cannot be applied to ``world`` now, or None when it can."""
    kind = type(action)
    if world.failed is not None and kind is not Recover:
        return f"task {world.failed} has failed: only Recover is enabled"
    check: Callable[[World, Any], str | None] | None = _CHECKS.get(kind)
    return f"{action!r} is not an action" if check is None else check(world, action)


def _deliver(world: World, action: Deliver) -> str | None:
    c = action.channel
    if c not in world.channels:
        return f"there is no channel {c}"
    if not world.channels[c]:
        return f"channel {c} is empty"
    if c in world.blocked:
        return f"channel {c} is blocked by {c.dst}"
    if world.replaying and not world._replay_allows(c, world.channels[c][0]):
        return f"{c.dst} is replaying and must next consume from {world.tasks[c.dst].replay[0]}"
    return None


def _emit(world: World, action: Emit) -> str | None:
    t = action.task
    if t not in world.inputs:
        return f"{t} is not a source or process"
    task = world.tasks[t]
    if task.halted:
        return f"{t} is halted until the checkpoint completes"
    if task.offset >= len(world.inputs[t]):
        return f"{t} has emitted its whole input log"
    if task.replay and task.replay[0] is not None:
        return f"{t} is replaying and must next consume from {task.replay[0]}"
    wait = world._s.waits.get(t)
    reason = wait(task.state, world.inputs[t][task.offset]) if wait else None
    return f"its next entry waits: {reason}" if reason else None


def _transfer(world: World, action: Transfer) -> str | None:
    src, dst, graph = action.src, action.dst, world.graph
    if src not in world.inputs or graph.kind(src) != "process":
        return f"{src} is not an account (a process) of this job"
    if (src.operator, dst.operator) not in {(e.src, e.dst) for e in graph.job.edges}:
        return f"there is no channel {src}->{dst} for the transfer"
    task, amount = world.tasks[src], action.amount
    refusal = getattr(graph.function(src), "refusal", None)
    if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
        if refusal is not None:
            return str(refusal(task.state, (dst.operator, amount)))
        return f"a transfer amount must be a positive whole number, not {amount!r}"
    if task.halted:
        return f"{src} is halted until the checkpoint completes"
    if task.offset < len(world.inputs[src]) or task.replay:
        return f"{src} must first make the transfers already in its input log"
    reason = refusal(task.state, (dst.operator, amount)) if refusal else None
    return None if reason is None else str(reason)


def _trigger(world: World, action: TriggerCheckpoint) -> str | None:
    if not world.can_trigger():
        return _why_no_trigger(world)
    at, protocol = action.at, world.protocol
    if at is None:
        return None
    if at not in world.tasks:
        return f"there is no task {at}"
    if not protocol.starts_anywhere:
        return (
            f"{protocol.name} starts checkpoints at every source; "
            "only Chandy-Lamport can start at a named process"
        )
    reached = world.graph.downstream(at)
    unreached = [t for t in world.graph.tasks if t not in reached]
    if unreached:
        return (
            f"markers sent from {at} never reach {', '.join(map(str, unreached))}, "
            "so the snapshot could not complete: start it at a task that reaches "
            "every task, or name no task (it then starts at every source)"
        )
    return None


def _why_no_trigger(world: World) -> str:
    limit = world.max_checkpoints
    if not world.protocol.capabilities.takes_checkpoints:
        return f"protocol {world.protocol.name} takes no checkpoints"
    if world.replaying:
        return "tasks are still replaying after a recovery"
    if limit is not None and world.coordinator.next_id > limit:
        return f"this run allows {limit} checkpoint(s)"
    return "a checkpoint is already pending (one at a time for this protocol)"


def _notify(world: World, action: Notify) -> str | None:
    pending = world.notices.get(action.task, ())
    if not pending:
        return f"no notification is on its way to {action.task}"
    if pending[0] != action.checkpoint_id:
        return f"{action.task} hears of checkpoint {pending[0]} first"
    return None


def _decline(world: World, action: Decline) -> str | None:
    t = action.task
    if t not in world.tasks:
        return f"there is no task {t}"
    if not world.protocol.may_be_declined:
        return f"a {world.protocol.name} snapshot cannot be declined"
    if modes.declinable(world, t) is None:
        return f"no pending checkpoint waits for {t}"
    return None


def _end_input(world: World, action: EndInput) -> str | None:
    if action.channel not in world.channels:
        return f"there is no channel {action.channel}"
    return modes.unfinished(world, action.channel)


def _wait(world: World, action: Wait) -> str | None:
    if not world.aligning:
        return "no task is aligning under an alignment timeout"
    if world.progress_actions() != [Wait()]:
        return "time passes only when nothing else can move"
    return None


def _crash(world: World, action: Crash) -> str | None:
    return None if action.task in world.tasks else f"there is no task {action.task}"


def _recover(world: World, action: Recover) -> str | None:
    if world.failed is None:
        return "no task has failed"
    if action.mode not in ("full", "partial"):
        return f"unknown recovery mode {action.mode!r}: use 'full' or 'partial'"
    return None


_CHECKS: dict[type, Callable[[World, Any], str | None]] = {
    Deliver: _deliver,
    Emit: _emit,
    Transfer: _transfer,
    TriggerCheckpoint: _trigger,
    Notify: _notify,
    Decline: _decline,
    EndInput: _end_input,
    Wait: _wait,
    Crash: _crash,
    Recover: _recover,
}
