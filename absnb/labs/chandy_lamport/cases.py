"""Part a of the Chandy-Lamport lab: scripted cases at one process of a bank.

Each case drives one account of a small bank by hand (:class:`OneProcess`: its own
transfers, amounts and markers arriving on its named inputs, the coordinator starting a
snapshot there), first the walkthrough of seed 001 (notebook 01) at A and at B, with its
exact numbers. After every step it compares what the student's process did with what the
package's own :class:`~absnb.protocols.chandy_lamport.ChandyLamportHandler` does: the
transfers and markers it sent, and for each snapshot the state it recorded, the channel
states it recorded and whether it acknowledged. The first difference fails the case, with
both sides and what the student's decisions returned in that step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from absnb.core.effects import (
    Acknowledge,
    BroadcastEvent,
    Effect,
    RecordChannelState,
    SnapshotState,
)
from absnb.core.ids import ChannelId
from absnb.core.job import Job
from absnb.core.messages import Marker, Record, RecordBatch, as_records
from absnb.core.snapshot import TaskSnapshot
from absnb.jobs.bank_transfer import SEED_001, bank_transfer
from absnb.labs.cases import Call, first_difference, logging_class, say_call, scripted_part
from absnb.labs.chandy_lamport.handler import MarkerLabProtocol
from absnb.labs.report import PartResult
from absnb.protocols.base import BarrierHandler, SnapshotProtocol
from absnb.protocols.chandy_lamport import ChandyLamportProtocol
from absnb.task import Out, StreamTask

Step = tuple[Any, ...]


@cache
def seed_001() -> Job:
    """Seed 001's bank: A=10,000 and B=5,000; A sends 1,000 to B, B sends 1,000 and 2,000
    to A (notebook 01, datasets/traces/seed_001.jsonl)."""
    return bank_transfer(
        SEED_001, transfers=[("A", "B", 1_000), ("B", "A", 1_000), ("B", "A", 2_000)]
    )


@cache
def three_accounts() -> Job:
    """A=1,000, B=500 and C=300, every pair linked both ways: A has inputs B->A and C->A."""
    return bank_transfer({"A": 1_000, "B": 500, "C": 300})


@cache
def one_way() -> Job:
    """A=1,000 -> B=500, one link: A has no input; it sends 100 to B."""
    return bank_transfer({"A": 1_000, "B": 500}, links=[("A", "B")], transfers=[("A", "B", 100)])


@dataclass(frozen=True)
class Case:
    """A scripted case: what happens at one process, in order.

    Attributes:
        title: what the case checks.
        job: the bank.
        process: the account under test.
        steps: ``("transfer",)`` (the process makes its next transfer), ``("amount",
            channel, value)`` (an amount arrives on input ``channel``), ``("marker",
            channel, n)`` (marker ``n`` arrives on ``channel``) or ``("start", n)`` (the
            coordinator starts snapshot ``n`` here).
    """

    title: str
    job: Callable[[], Job]
    process: str
    steps: tuple[Step, ...]


CASES = (
    Case(
        "seed 001 at A: A initiates, and B->A is recorded until B's marker",
        seed_001,
        "A",
        (
            ("transfer",),
            ("start", 1),
            ("amount", "B->A", 1_000),
            ("amount", "B->A", 2_000),
            ("marker", "B->A", 1),
        ),
    ),
    Case(
        "seed 001 at B: the first marker records the state, its channel empty",
        seed_001,
        "B",
        (
            ("transfer",),
            ("transfer",),
            ("amount", "A->B", 1_000),
            ("marker", "A->B", 1),
        ),
    ),
    Case(
        "a marker on one input records the state; the other input is recorded until its marker",
        three_accounts,
        "A",
        (
            ("amount", "C->A", 50),
            ("marker", "B->A", 1),
            ("amount", "B->A", 100),
            ("amount", "C->A", 200),
            ("marker", "C->A", 1),
        ),
    ),
    Case(
        "two snapshots at once, told apart by id",
        three_accounts,
        "A",
        (
            ("marker", "B->A", 1),
            ("amount", "C->A", 10),
            ("marker", "C->A", 2),
            ("amount", "C->A", 20),
            ("amount", "B->A", 30),
            ("marker", "B->A", 2),
            ("amount", "C->A", 40),
            ("marker", "C->A", 1),
        ),
    ),
    Case(
        "two snapshots started here record the same input, each until its own marker",
        three_accounts,
        "A",
        (
            ("start", 1),
            ("amount", "B->A", 1),
            ("start", 2),
            ("amount", "B->A", 2),
            ("marker", "B->A", 1),
            ("amount", "B->A", 3),
            ("marker", "B->A", 2),
            ("marker", "C->A", 2),
            ("marker", "C->A", 1),
        ),
    ),
    Case(
        "a process with no inputs initiates: state, markers, and done at once",
        one_way,
        "A",
        (("transfer",), ("start", 1)),
    ),
)
"""The scripted cases, in order: the first that fails stops part a."""


class OneProcess:
    """One account of a bank, driven by hand, under a protocol.

    Attributes:
        sent: what it sent, in order: ``"1,000 on A->B"``, ``"marker 1 on A->B"``.
        acknowledged: its acknowledged parts of snapshots, in order.
    """

    def __init__(self, job: Job, process: str, protocol: SnapshotProtocol) -> None:
        self.graph = job.graph
        t = self.graph.task(process)
        self.task = StreamTask(self.graph, t, protocol)
        self.log = list(job.inputs[t])
        self.numbers = dict.fromkeys(self.task.inputs, 0)
        self.sent: list[str] = []
        self.acknowledged: list[TaskSnapshot] = []

    def do(self, step: Step) -> None:
        """Carry out one step of a case."""
        kind, *args = step
        out = Out()
        if kind == "transfer":
            self.task.emit(self.log.pop(0), out)
        elif kind == "start":
            self.task.trigger(args[0], out, 0.0)
        else:
            c = self.graph.channel(args[0])
            if kind == "amount":
                self.numbers[c] += 1
                self.task.deliver(c, Record(args[1], self.numbers[c]), out)
            else:
                self.task.deliver(c, Marker(args[1]), out)
        for c, m in out.sends:
            what = f"marker {m.snapshot_id}" if isinstance(m, Marker) else f"{m.value:,}"  # type: ignore[union-attr]
            self.sent.append(f"{what} on {c}")
        self.acknowledged.extend(ctl for ctl in out.controls if isinstance(ctl, TaskSnapshot))

    def observe(self) -> dict[str, str]:
        """What a test sees of the process, each as text (compared exactly)."""
        name = str(self.task.id)
        parts: dict[int, str] = {}
        for s in self.acknowledged:
            parts[s.checkpoint_id] = _part(name, s.state, s.channel_states, "acknowledged")
        for n, p in self.task.parts.items():
            parts[n] = _part(name, p.state, p.channel_states, "not acknowledged")
        shown = [f"snapshot {n}: {parts[n]}" for n in sorted(parts)]
        return {
            "sent": "[" + ", ".join(self.sent) + "]",
            "snapshots": "[" + "; ".join(shown) + "]",
        }


def _part(
    name: str,
    state: object,
    channels: Mapping[ChannelId, tuple[Record | RecordBatch, ...]],
    status: str,
) -> str:
    recorded = [
        f"{c}={_values(rs)}" for c, rs in sorted(channels.items(), key=lambda i: str(i[0])) if rs
    ]
    return f"{', '.join([f'{name}={state:,}', *recorded])} ({status})"


def _values(records: Iterable[Record | RecordBatch]) -> str:
    return "[" + ", ".join(f"{r.value:,}" for r in as_records(records)) + "]"


def say_step(step: Step, process: str) -> str:
    """One step of a case in words."""
    kind, *args = step
    if kind == "transfer":
        return f"{process} makes its next transfer"
    if kind == "start":
        return f"the coordinator starts snapshot {args[0]} at {process}"
    if kind == "amount":
        return f"{args[1]:,} arrives on {args[0]}"
    return f"marker {args[1]} arrives on {args[0]}"


def show_effect(e: Effect) -> str:
    """An effect as a student writes it."""
    if isinstance(e, BroadcastEvent):
        m = e.message
        n = m.snapshot_id if isinstance(m, Marker) else m.checkpoint_id
        return f"BroadcastEvent({type(m).__name__}({n}))"
    if isinstance(e, RecordChannelState):
        return f"RecordChannelState({e.checkpoint_id}, {e.channel}, {_values(e.records)})"
    if isinstance(e, SnapshotState | Acknowledge):
        return f"{type(e).__name__}({e.checkpoint_id})"
    return repr(e)


def _say_call(call: Call) -> str:
    return say_call(call, show_effect)


def run_case(case: Case, handler_class: type[BarrierHandler]) -> list[str] | None:
    """The lines of the case's first difference from the reference, or None if there is
    none. A decision that raises is the difference (its message first)."""
    job = case.job()
    reference = OneProcess(job, case.process, ChandyLamportProtocol())
    calls: list[Call] = []
    protocol = MarkerLabProtocol(logging_class(handler_class, calls))
    student = OneProcess(job, case.process, protocol)
    inputs = ", ".join(map(str, student.task.inputs)) or "none"

    def do(step: Step) -> None:
        reference.do(step)
        student.do(step)

    return first_difference(
        case.steps,
        do,
        lambda: (reference.observe(), student.observe()),
        calls,
        f"case: {case.title}; process {case.process}, inputs {inputs}",
        lambda s: say_step(s, case.process),
        _say_call,
    )


def scripted_cases(handler_class: type[BarrierHandler]) -> PartResult:
    """Part a of the Chandy-Lamport lab: every case, stopping at the first that differs."""
    return scripted_part(
        CASES,
        run_case,
        handler_class,
        f"{len(CASES)} cases (seed 001 at A and at B, two inputs, concurrent snapshots, a "
        "process without inputs), the same transfers and markers sent and the same states "
        "and channel states recorded as the reference after every step",
    )
