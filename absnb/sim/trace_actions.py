"""Trace lines <-> actions: each :obj:`~absnb.sim.actions.Action` as the JSON object of
one line of a trace file (:mod:`absnb.sim.trace`), and back, with names looked up in the
job's graph and a clear error for a line that is not an action."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from absnb.core.errors import AbsnbError, TraceFormatError
from absnb.core.graph import ExecutionGraph
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

EXAMPLES = {
    "deliver": '{"action": "deliver", "channel": "A->B"}',
    "emit": '{"action": "emit", "task": "source[0]"}',
    "transfer": '{"action": "transfer", "src": "A", "dst": "B", "amount": 1000}',
    "trigger": '{"action": "trigger"} or {"action": "trigger", "at": "A"}',
    "notify": '{"action": "notify", "task": "sink[0]", "checkpoint": 1}',
    "crash": '{"action": "crash", "task": "count[1]"}',
    "recover": '{"action": "recover", "mode": "full"}',
    "wait": '{"action": "wait"}',
    "decline": '{"action": "decline", "task": "count[0]"}',
    "end": '{"action": "end", "channel": "source[0]->count[0]"}',
}
KINDS = tuple(EXAMPLES)


def action_to_json(action: Action) -> dict[str, Any]:
    """One action as a JSON object (the keys a trace line needs)."""
    obj = _dataflow_to_json(action)
    if obj is None:
        obj = _control_to_json(action)
    if obj is None:
        raise TraceFormatError(f"{action!r} is not an action, so it cannot be written to a trace")
    return obj


def _dataflow_to_json(action: Action) -> dict[str, Any] | None:
    """A delivery, an input log entry, a transfer or an end of input; None otherwise."""
    if isinstance(action, Deliver):
        return {"action": "deliver", "channel": str(action.channel)}
    if isinstance(action, Emit):
        return {"action": "emit", "task": str(action.task)}
    if isinstance(action, Transfer):
        a = action
        return {"action": "transfer", "src": str(a.src), "dst": str(a.dst), "amount": a.amount}
    if isinstance(action, EndInput):
        return {"action": "end", "channel": str(action.channel)}
    return None


def _control_to_json(action: Action) -> dict[str, Any] | None:
    """A checkpoint's, a failure's or the scheduler's action; None otherwise."""
    if isinstance(action, TriggerCheckpoint):
        at = action.at
        return {"action": "trigger"} if at is None else {"action": "trigger", "at": str(at)}
    if isinstance(action, Notify):
        return {"action": "notify", "task": str(action.task), "checkpoint": action.checkpoint_id}
    if isinstance(action, Crash):
        return {"action": "crash", "task": str(action.task)}
    if isinstance(action, Recover):
        return {"action": "recover", "mode": action.mode}
    if isinstance(action, Wait):
        return {"action": "wait"}
    if isinstance(action, DeclineCheckpoint):
        return {"action": "decline", "task": str(action.task), "reason": action.reason}
    return None


def action_from_json(obj: Mapping[str, Any], graph: ExecutionGraph) -> Action:
    """The action a trace line describes; task and channel names are looked up in ``graph``.

    Raises:
        TraceFormatError: unknown action kind, a missing or mistyped key, or a name the
            graph does not have (the message says which).
    """
    if not isinstance(obj, Mapping):
        raise TraceFormatError(
            f"expected a JSON object such as {EXAMPLES['deliver']}, got {type(obj).__name__}"
        )
    if "action" not in obj:
        raise TraceFormatError(
            f"missing key 'action': every line after the header is one action, such as "
            f"{EXAMPLES['deliver']}"
        )
    kind = obj["action"]
    parse = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parse is None:
        raise TraceFormatError(f"unknown action {kind!r}: use one of {', '.join(KINDS)}")
    try:
        return parse(obj, graph)
    except AbsnbError as e:
        if isinstance(e, TraceFormatError):
            raise
        raise TraceFormatError(str(e)) from None


def _text(obj: Mapping[str, Any], key: str) -> str:
    if key not in obj:
        raise TraceFormatError(
            f"a {obj['action']!r} action needs the key {key!r}, as in {EXAMPLES[obj['action']]}"
        )
    value = obj[key]
    if not isinstance(value, str):
        raise TraceFormatError(f"{key!r} must be a name in quotes, not {value!r}")
    return value


def _deliver(obj: Mapping[str, Any], graph: ExecutionGraph) -> Action:
    return Deliver(graph.channel(_text(obj, "channel")))


def _emit(obj: Mapping[str, Any], graph: ExecutionGraph) -> Action:
    return Emit(graph.task(_text(obj, "task")))


def _transfer(obj: Mapping[str, Any], graph: ExecutionGraph) -> Action:
    src, dst = graph.task(_text(obj, "src")), graph.task(_text(obj, "dst"))
    if "amount" not in obj:
        raise TraceFormatError(
            f"a 'transfer' action needs the key 'amount', as in {EXAMPLES['transfer']}"
        )
    amount = obj["amount"]
    if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
        raise TraceFormatError(
            f"'amount' must be a positive whole number without quotes, not {amount!r}"
        )
    return Transfer(src, dst, amount)


def _trigger(obj: Mapping[str, Any], graph: ExecutionGraph) -> Action:
    if obj.get("at") is None:
        return TriggerCheckpoint()
    return TriggerCheckpoint(graph.task(_text(obj, "at")))


def _notify(obj: Mapping[str, Any], graph: ExecutionGraph) -> Action:
    n = obj.get("checkpoint")
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise TraceFormatError(
            f"a 'notify' action needs 'checkpoint', a positive whole number, as in "
            f"{EXAMPLES['notify']}, not {n!r}"
        )
    return Notify(graph.task(_text(obj, "task")), n)


def _crash(obj: Mapping[str, Any], graph: ExecutionGraph) -> Action:
    return Crash(graph.task(_text(obj, "task")))


def _recover(obj: Mapping[str, Any], graph: ExecutionGraph) -> Action:
    mode = obj.get("mode", "full")
    if mode not in ("full", "partial"):
        raise TraceFormatError(f"unknown recovery mode {mode!r}: use 'full' or 'partial'")
    return Recover(mode)


_PARSERS: dict[str, Callable[[Mapping[str, Any], ExecutionGraph], Action]] = {
    "deliver": _deliver,
    "emit": _emit,
    "transfer": _transfer,
    "trigger": _trigger,
    "notify": _notify,
    "crash": _crash,
    "recover": _recover,
    "wait": lambda obj, graph: Wait(),
    "end": lambda obj, graph: EndInput(graph.channel(_text(obj, "channel"))),
    "decline": lambda obj, graph: DeclineCheckpoint(
        graph.task(_text(obj, "task")), str(obj.get("reason", "declined on request"))
    ),
}
