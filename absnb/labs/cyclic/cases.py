"""Part a of the ABS lab's extension (Algorithm 2): scripted cases at one task of the Collatz
loop.

Each case drives one task of a cyclic job by hand (:class:`OneTask`: records and barriers
arriving on its named inputs, the coordinator aborting a checkpoint), first the worked
example of notebook 03 at the loop's head, with its exact numbers: the head copies its state
(3 numbers admitted) when barrier 1 arrives on ``source->head`` and logs ``(6, 3, 1)``,
``(3, 5, 2)`` and ``(5, 8, 2)`` on the back-edge until barrier 1 comes back. After every
step it compares what the student's task did with what the package's own
:class:`~absnb.protocols.cyclic.CyclicBarrierHandler` does: the inputs blocked and logged,
what it sent on, and the snapshots it acknowledged (state and backup logs). The first
difference fails the case, with both sides and what the student's decisions returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from absnb.core.effects import Block, Effect, RecordChannelState, Unblock
from absnb.core.ids import ChannelId
from absnb.core.job import Job
from absnb.core.messages import CheckpointBarrier, Message, Record, as_records
from absnb.core.snapshot import TaskSnapshot
from absnb.jobs.cyclic import cyclic
from absnb.labs.cases import (
    Call,
    first_difference,
    logging_class,
    say_call,
    scripted_part,
    show_effect,
)
from absnb.labs.cyclic.handler import CyclicLabProtocol, _shown
from absnb.labs.report import PartResult
from absnb.protocols.aligning import AligningHandler
from absnb.protocols.base import SnapshotProtocol
from absnb.protocols.cyclic import CyclicProtocol
from absnb.task import Out, StreamTask

Step = tuple[Any, ...]


@cache
def loop() -> Job:
    """Notebook 03's Collatz loop: 3, 5, 6 and 7 through source -> head -> step -> head."""
    return cyclic()


@cache
def two_sources() -> Job:
    """The loop fed by two sources: the head has two regular inputs and one loop input."""
    return cyclic(sources=2)


@cache
def two_heads() -> Job:
    """The loop at parallelism 2: each head has one regular input and two loop inputs, one
    from each step task; each step task aligns two inputs, one from each head."""
    return cyclic(parallelism=2)


@dataclass(frozen=True)
class Case:
    """A scripted case: what happens at one task, in order.

    Attributes:
        title: what the case checks.
        job: the cyclic job.
        task: the task under test.
        steps: ``("push", channel, value)`` (a record arrives on input ``channel``),
            ``("barrier", channel, n)`` or ``("abort", n)`` (the coordinator aborts ``n``).
    """

    title: str
    job: Callable[[], Job]
    task: str
    steps: tuple[Step, ...]


CASES = (
    Case(
        "notebook 03's worked example at the head: copy at the regular barrier, log the "
        "back-edge until its barrier comes back",
        loop,
        "head",
        (
            ("push", "source->head", 3),
            ("push", "source->head", 5),
            ("push", "source->head", 6),
            ("push", "step->head", (3, 10, 1)),
            ("push", "step->head", (5, 16, 1)),
            ("barrier", "source->head", 1),
            ("push", "step->head", (6, 3, 1)),
            ("push", "source->head", 7),
            ("push", "step->head", (3, 5, 2)),
            ("push", "step->head", (5, 8, 2)),
            ("barrier", "step->head", 1),
        ),
    ),
    Case(
        "two regular inputs: the first barrier blocks its input, the back-edge is not awaited",
        two_sources,
        "head",
        (
            ("push", "source[1]->head", 5),
            ("barrier", "source[0]->head", 1),
            ("push", "source[0]->head", 4),
            ("push", "step->head", (3, 10, 1)),
            ("barrier", "source[1]->head", 1),
            ("push", "step->head", (5, 16, 1)),
            ("push", "source[1]->head", 9),
            ("barrier", "step->head", 1),
        ),
    ),
    Case(
        "two loop inputs: each one's log ends at its own barrier",
        two_heads,
        "head[0]",
        (
            ("barrier", "source->head[0]", 1),
            ("push", "step[0]->head[0]", (6, 3, 1)),
            ("barrier", "step[0]->head[0]", 1),
            ("push", "step[0]->head[0]", (6, 10, 2)),
            ("push", "step[1]->head[0]", (3, 10, 1)),
            ("barrier", "step[1]->head[0]", 1),
        ),
    ),
    Case(
        "a task without loop inputs is Algorithm 1: copy, broadcast and acknowledge at once",
        loop,
        "step",
        (
            ("push", "head->step", (3, 3, 0)),
            ("barrier", "head->step", 1),
            ("push", "head->step", (5, 5, 0)),
        ),
    ),
    Case(
        "the coordinator aborts while the head logs: the log is dropped, the next starts empty",
        loop,
        "head",
        (
            ("barrier", "source->head", 1),
            ("push", "step->head", (3, 10, 1)),
            ("abort", 1),
            ("push", "step->head", (3, 5, 2)),
            ("barrier", "source->head", 2),
            ("barrier", "step->head", 1),
            ("push", "step->head", (3, 16, 3)),
            ("barrier", "step->head", 2),
        ),
    ),
)
"""The scripted cases, in order: the first that fails stops part a."""


class OneTask:
    """One task of a cyclic job, driven by hand, under a protocol: what arrives on a blocked
    input waits there, in order, until it is unblocked.

    Attributes:
        sent: what it sent, in order: ``"(3, 3, 0) on head->step"``, ``"barrier 1 on
            head->step"``.
        acknowledged: its acknowledged snapshots, in order.
    """

    def __init__(self, job: Job, task: str, protocol: SnapshotProtocol) -> None:
        self.graph = job.graph
        self.task = StreamTask(self.graph, self.graph.task(task), protocol)
        self.numbers = dict.fromkeys(self.task.inputs, 0)
        self.queue: list[tuple[ChannelId, Message]] = []
        self.blocked: set[ChannelId] = set()
        self.sent: list[str] = []
        self.acknowledged: list[TaskSnapshot] = []

    def do(self, step: Step) -> None:
        """Carry out one step of a case."""
        kind, *args = step
        if kind == "abort":
            self._after(lambda out: self.task.checkpoint_aborted(args[0], out))
        else:
            c = self.graph.channel(args[0])
            if kind == "push":
                self.numbers[c] += 1
                self.queue.append((c, Record(args[1], self.numbers[c])))
            else:
                self.queue.append((c, CheckpointBarrier(args[1])))
        while (
            j := next((j for j, (c, _) in enumerate(self.queue) if c not in self.blocked), None)
        ) is not None:
            c, m = self.queue.pop(j)
            self._after(partial(self.task.deliver, c, m))

    def _after(self, act: Callable[[Out], None]) -> None:
        out = Out()
        act(out)
        for c, m in out.sends:
            what = f"barrier {m.checkpoint_id}" if isinstance(m, CheckpointBarrier) else _value(m)
            self.sent.append(f"{what} on {c}")
        for ctl in out.controls:
            if type(ctl) is Block:
                self.blocked.add(ctl.channel)
            elif type(ctl) is Unblock:
                self.blocked.discard(ctl.channel)
            elif type(ctl) is TaskSnapshot:
                self.acknowledged.append(ctl)

    def observe(self) -> dict[str, str]:
        """What a test sees of the task, each as text (compared exactly)."""
        inputs = self.task.inputs
        logging = self.task.handler.recorded_channels()
        shown = []
        for s in self.acknowledged:
            logs = [
                f"backup log {c}=[{', '.join(repr(r.value) for r in as_records(rs))}]"
                for c, rs in sorted(s.channel_states.items(), key=lambda i: str(i[0]))
                if rs
            ]
            shown.append(
                f"checkpoint {s.checkpoint_id}: " + ", ".join([f"state {s.state!r}", *logs])
            )
        return {
            "blocked inputs": "[" + ", ".join(str(c) for c in inputs if c in self.blocked) + "]",
            "logged inputs": "[" + ", ".join(str(c) for c in inputs if c in logging) + "]",
            "sent on": "[" + ", ".join(self.sent) + "]",
            "snapshots acknowledged": "[" + "; ".join(shown) + "]",
        }


def _value(m: object) -> str:
    return repr(m.value) if isinstance(m, Record) else str(m)


def say_step(step: Step) -> str:
    """One step of a case in words."""
    kind, *args = step
    if kind == "push":
        return f"record {args[1]!r} arrives on {args[0]}"
    if kind == "barrier":
        return f"barrier {args[1]} arrives on {args[0]}"
    return f"the coordinator aborts checkpoint {args[0]}"


def _show(e: Effect) -> str:
    if isinstance(e, RecordChannelState):
        return f"RecordChannelState({e.checkpoint_id}, {e.channel}, {_shown(e.records)})"
    return show_effect(e, {})


def _say_call(call: Call) -> str:
    return say_call(call, _show)


def run_case(case: Case, handler_class: type[AligningHandler]) -> list[str] | None:
    """The lines of the case's first difference from the reference, or None if there is
    none. A decision that raises is the difference (its message first)."""
    job = case.job()
    reference = OneTask(job, case.task, CyclicProtocol())
    calls: list[Call] = []
    student = OneTask(job, case.task, CyclicLabProtocol(logging_class(handler_class, calls)))
    handler = student.task.handler
    loops = [str(c) for c in handler.inputs if c in handler.loop_inputs]
    regular = [str(c) for c in handler.inputs if c not in handler.loop_inputs]

    def do(step: Step) -> None:
        reference.do(step)
        student.do(step)

    return first_difference(
        case.steps,
        do,
        lambda: (reference.observe(), student.observe()),
        calls,
        f"case: {case.title}; task {case.task}, regular inputs {', '.join(regular)}, loop "
        f"inputs {', '.join(loops) or 'none'}",
        say_step,
        _say_call,
    )


def scripted_cases(handler_class: type[AligningHandler]) -> PartResult:
    """Part a of the extension: every case, stopping at the first that differs."""
    return scripted_part(
        CASES,
        run_case,
        handler_class,
        f"{len(CASES)} cases (notebook 03's worked example at the head, two regular inputs, "
        "two loop inputs, a task without loop inputs, an abort while logging), the same "
        "inputs blocked and logged, output and snapshots as the reference after every step",
    )
