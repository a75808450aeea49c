"""Part a of the ABS lab: scripted cases at one task, in the manner of Flink's
``AlignedCheckpointsTest``.

Each case pushes records, barriers, cancellation markers and ends of input on the named
inputs of one task (:class:`~absnb.harness.TaskHarness`, the operator a word counter), and
after every push compares what the student's task did with what the package's own ABS
Algorithm 1 does: the inputs blocked, what the task sent on (records and barriers), the
snapshots it took (checkpoint, records received per input, the counts in its state) and the
checkpoints it gave up. The first difference fails the case, with the numbers on both sides
and what the student's decisions returned in that step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from absnb.core.effects import (
    Acknowledge,
    Block,
    BroadcastEvent,
    Decline,
    Effect,
    SnapshotState,
    Unblock,
)
from absnb.core.ids import ChannelId, CheckpointId
from absnb.core.messages import CancelCheckpointMarker, CheckpointBarrier
from absnb.harness import TaskHarness
from absnb.labs.handler import LabProtocol
from absnb.labs.report import PartResult
from absnb.operators.library import KeyedCount
from absnb.protocols.aligning import AligningHandler
from absnb.protocols.base import BarrierHandler

Step = tuple[str, ...] | tuple[str, str, Any] | tuple[str, int]


@dataclass(frozen=True)
class Case:
    """A scripted case: what arrives at the task, in order.

    Attributes:
        title: what the case checks.
        follows: the Flink test it follows.
        inputs: the task's inputs (``in0`` ...).
        steps: ``("push", input, value)``, ``("barrier", input, n)``, ``("cancel", input,
            n)``, ``("end", input)`` or ``("abort", n)`` (the coordinator aborts ``n``).
    """

    title: str
    follows: str
    inputs: int
    steps: tuple[Step, ...]


CASES = (
    Case(
        "a barrier on one input blocks that input",
        "AlignedCheckpointsTest.testMultiChannelTrailingBlockedData",
        2,
        (
            ("push", "in0", "a"),
            ("barrier", "in0", 1),
            ("push", "in0", "b"),
            ("push", "in1", "c"),
        ),
    ),
    Case(
        "barriers on every input: broadcast, snapshot, acknowledge, unblock",
        "AlignedCheckpointsTest.testMultiChannelTrailingBlockedData",
        3,
        (
            ("push", "in0", "a"),
            ("barrier", "in0", 1),
            ("push", "in0", "d"),
            ("push", "in1", "b"),
            ("barrier", "in1", 1),
            ("push", "in1", "e"),
            ("push", "in2", "c"),
            ("barrier", "in2", 1),
        ),
    ),
    Case(
        "one input: each barrier is a snapshot at once",
        "AlignedCheckpointsTest.testSingleChannelWithBarriers",
        1,
        (
            ("push", "in0", "a"),
            ("barrier", "in0", 1),
            ("push", "in0", "b"),
            ("barrier", "in0", 2),
        ),
    ),
    Case(
        "a newer barrier subsumes the checkpoint being aligned",
        "AlignedCheckpointsTest.testMultiChannelJumpingOverCheckpoint",
        2,
        (
            ("barrier", "in0", 1),
            ("push", "in0", "x"),
            ("push", "in1", "y"),
            ("barrier", "in1", 2),
            ("barrier", "in0", 2),
        ),
    ),
    Case(
        "the coordinator aborts: blocked inputs are unblocked, late barriers ignored",
        "AlignedCheckpointsTest.testAbortOnCanceledBarriers",
        2,
        (
            ("barrier", "in0", 1),
            ("push", "in0", "w"),
            ("abort", 1),
            ("barrier", "in1", 1),
            ("barrier", "in0", 2),
            ("barrier", "in1", 2),
        ),
    ),
    Case(
        "a cancellation marker releases the blocked inputs",
        "AlignedCheckpointsTest.testAbortViaQueuedBarrier",
        3,
        (
            ("barrier", "in0", 1),
            ("push", "in0", "w"),
            ("cancel", "in1", 1),
            ("barrier", "in1", 1),
            ("barrier", "in0", 2),
            ("barrier", "in1", 2),
            ("barrier", "in2", 2),
        ),
    ),
    Case(
        "an ended input counts as aligned (FLIP-147)",
        "AlignedCheckpointsTest (FLIP-147: barriers are considered received on finished channels)",
        3,
        (
            ("barrier", "in0", 1),
            ("end", "in1"),
            ("barrier", "in2", 1),
            ("push", "in0", "z"),
            ("barrier", "in0", 2),
            ("push", "in0", "q"),
            ("end", "in2"),
        ),
    ),
)
"""The scripted cases, in order: the first that fails stops part a."""


def say_step(step: Step) -> str:
    """One step of a case in words."""
    kind, *args = step
    if kind == "push":
        return f"record {args[1]!r} arrives on {args[0]}"
    if kind == "barrier":
        return f"barrier {args[1]} arrives on {args[0]}"
    if kind == "cancel":
        return f"the cancellation marker of checkpoint {args[1]} arrives on {args[0]}"
    if kind == "end":
        return f"{args[0]} ends"
    return f"the coordinator aborts checkpoint {args[0]}"


def _do(h: TaskHarness, step: Step) -> None:
    kind, *args = step
    actions: dict[str, Callable[..., None]] = {
        "push": h.push,
        "barrier": h.barrier,
        "cancel": h.cancel,
        "end": h.end,
        "abort": h.abort,
    }
    actions[kind](*args)


def _shown(value: object) -> str:
    if isinstance(value, CheckpointBarrier):
        return f"barrier {value.checkpoint_id}"
    if isinstance(value, CancelCheckpointMarker):
        return f"cancellation marker {value.checkpoint_id}"
    if isinstance(value, tuple) and len(value) == 2:  # a counter's (word, count)
        return f"{value[0]}={value[1]}"
    return repr(value)


def observe(h: TaskHarness) -> dict[str, str]:
    """What a test sees of the task, each as text (compared exactly)."""
    names = {c: n for n, c in h.channels.items()}
    snapshots = []
    for s in h.checkpoints:
        received = ", ".join(f"{names[c]}={k}" for c, k in s.received.items())
        state = ", ".join(f"{k}={v}" for k, v in sorted(s.state.items()))
        snapshots.append(f"checkpoint {s.checkpoint_id} (received {received}; counts {state})")
    return {
        "blocked inputs": "[" + ", ".join(h.blocked) + "]",
        "sent on": "[" + ", ".join(_shown(v) for v in h.emitted) + "]",
        "snapshots taken": "[" + "; ".join(snapshots) + "]",
        "checkpoints given up": str(h.aborted),
    }


def show_effect(e: Effect, names: dict[ChannelId, str]) -> str:
    """An effect as a student writes it, with the harness's input names."""
    if isinstance(e, Block | Unblock):
        return f"{type(e).__name__}({names.get(e.channel, str(e.channel))})"
    if isinstance(e, BroadcastEvent):
        m = e.message
        inner = (
            f"CheckpointBarrier({m.checkpoint_id})"
            if isinstance(m, CheckpointBarrier)
            else f"{type(m).__name__}({getattr(m, 'checkpoint_id', '')})"
        )
        return f"BroadcastEvent({inner})"
    if isinstance(e, SnapshotState | Acknowledge | Decline):
        return f"{type(e).__name__}({e.checkpoint_id})"
    return repr(e)


Call = tuple[str, CheckpointId, str, list[Effect] | str]


H = TypeVar("H", bound=BarrierHandler)


def logging_class(handler_class: type[H], calls: list[Call]) -> type[H]:
    """``handler_class``, catching what its decisions raise and logging every call in
    ``calls``: ``(decision, checkpoint, argument, effects or what it raised)``."""

    class Logged(handler_class):  # type: ignore[valid-type,misc]
        __slots__ = ()
        catches: ClassVar[bool] = True

        def _asked(
            self, hook: str, n: CheckpointId, arg: str, asked: Callable[[], object]
        ) -> list[Effect]:
            before = self.fault
            effects: list[Effect] = super()._asked(hook, n, arg, asked)
            raised = self.fault if self.fault != before else None
            calls.append((hook, n, arg, raised if raised is not None else effects))
            return effects

    Logged.__name__ = Logged.__qualname__ = handler_class.__name__
    return Logged


def say_call(call: Call, show: Callable[[Effect], str]) -> str:
    """A decision the student's class made, in words: what it returned (each effect as
    ``show`` writes it), or what it raised."""
    hook, n, arg, result = call
    if isinstance(result, str):
        return result
    return f"{hook}({n}, {arg}) returned [{', '.join(show(e) for e in result)}]"


def _say_call(call: Call, names: dict[ChannelId, str]) -> str:
    text = say_call(call, lambda e: show_effect(e, names))
    for c, name in names.items():
        text = text.replace(str(c), name)
    return text


def run_case(case: Case, handler_class: type[AligningHandler]) -> list[str] | None:
    """The lines of the case's first difference from the reference, or None if there is
    none. A decision that raises is the difference (its message first)."""
    reference = TaskHarness("abs", case.inputs, KeyedCount(key=str))
    calls: list[Call] = []
    protocol = LabProtocol(logging_class(handler_class, calls))
    student = TaskHarness(protocol, case.inputs, KeyedCount(key=str))
    names = {c: n for n, c in student.channels.items()}

    def do(step: Step) -> None:
        _do(reference, step)
        _do(student, step)

    return first_difference(
        case.steps,
        do,
        lambda: (observe(reference), observe(student)),
        calls,
        f"case: {case.title} ({case.follows}); the task has inputs in0..in{case.inputs - 1}",
        say_step,
        lambda c: _say_call(c, names),
    )


T = TypeVar("T")
"""A lab's scripted step."""


def first_difference(
    steps: Sequence[T],
    do: Callable[[T], None],
    observe: Callable[[], tuple[dict[str, Any], dict[str, Any]]],
    calls: list[Call],
    header: str,
    say_step: Callable[[T], str],
    say_call: Callable[[Call], str],
) -> list[str] | None:
    """Part a's comparison, step by step, of any lab: ``do`` applies a step to the reference
    and the student's task, ``observe`` gives what each shows (expected, yours), ``calls``
    the student's decisions in the step. The lines of the first step where they differ or
    a decision raised (``header``, the steps so far, then the difference), or None."""
    for i, step in enumerate(steps):
        calls.clear()
        do(step)
        raised = [c for c in calls if isinstance(c[3], str)]
        expected, got = observe()
        if not raised and expected == got:
            continue
        lines = [header]
        lines.extend(f"step {k + 1}: {say_step(s)}" for k, s in enumerate(steps[: i + 1]))
        if raised:  # what the decision raised is the difference
            lines.append(f"at step {i + 1}, {say_call(raised[0])}")
            return lines
        for what in expected:
            if expected[what] != got[what]:
                lines.append(f"after step {i + 1}, {what}: expected {expected[what]}")
                lines.append(f"{' ' * len(f'after step {i + 1}, {what}:')} yours    {got[what]}")
        lines.extend(f"in step {i + 1} your {say_call(c)}" for c in calls)
        return lines
    return None


def not_implemented(lines: list[str]) -> str | None:
    """The message of a decision not written yet, if that is what ``lines`` report."""
    for line in lines:
        if "raised NotImplementedError: " in line:
            return line.split("raised NotImplementedError: ", 1)[1]
    return None


class Titled(Protocol):
    """A scripted case of any lab: what it checks, in words."""

    @property
    def title(self) -> str: ...


C = TypeVar("C", bound=Titled)


def scripted_part(
    cases: Sequence[C],
    run: Callable[[C, type[H]], list[str] | None],
    handler_class: type[H],
    passed: str,
) -> PartResult:
    """Part a of any lab: every case in turn (``run`` gives the lines of a difference from
    the reference, None when there is none), stopping at the first that differs; ``passed``
    says what a pass means."""
    part = "a. scripted cases at one task"
    for k, case in enumerate(cases):
        lines = run(case, handler_class)
        if lines is None:
            continue
        missing = not_implemented(lines)
        if missing is not None:
            return PartResult(part, "not implemented", missing, lines)
        return PartResult(part, "failed", f"case {k + 1} of {len(cases)}: {case.title}", lines)
    return PartResult(part, "passed", passed)


def scripted_cases(handler_class: type[AligningHandler]) -> PartResult:
    """Part a of the ABS lab: every case, stopping at the first that differs."""
    return scripted_part(
        CASES,
        run_case,
        handler_class,
        f"{len(CASES)} cases, the same blocked inputs, output, snapshots and aborts as the "
        "reference after every step",
    )
