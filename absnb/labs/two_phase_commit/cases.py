"""Part a of the two-phase-commit lab: scripted cases at one sink task, in the manner of
Flink's ``TwoPhaseCommitSinkFunctionTest``.

Each case drives one sink task by hand (:class:`OneSink`: records written, snapshots,
checkpoint-complete and checkpoint-aborted notifications, a failure and restart from the
state of a checkpoint), on its own :class:`~absnb.sinks.TransactionStore`, and after every
step compares the student's sink with the package's own :class:`~absnb.sinks.MemorySink`:
the committed records, every transaction's status and the sink's state (its open and
pending transactions). At the end the committed records must be the case's. The first
difference fails the case, with both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from absnb.core.ids import TaskId
from absnb.labs.cases import scripted_part
from absnb.labs.report import PartResult
from absnb.labs.two_phase_commit.handler import catching, fault_of
from absnb.protocols.two_phase_commit import TwoPhaseCommitSink, TwoPhaseCommitState
from absnb.sinks.memory import MemorySink, TransactionStore

Step = tuple[Any, ...]
TASK = TaskId("sink", 0, 1)


@dataclass(frozen=True)
class Case:
    """A scripted case: what happens at one sink task, in order.

    Attributes:
        title: what the case checks.
        follows: the Flink test it follows.
        steps: ``("write", value)``, ``("snapshot", n)`` (the sink's snapshot for
            checkpoint ``n``), ``("complete", n)`` (the notification that ``n``
            completed), ``("abort", n)`` (that ``n`` was aborted) or ``("restore", n)``
            (the task fails and restarts from its state in checkpoint ``n``; 0: from the
            start).
        committed: the committed records at the end.
    """

    title: str
    follows: str
    steps: tuple[Step, ...]
    committed: tuple[object, ...]


CASES = (
    Case(
        "a snapshot pre-commits, the notification commits",
        "TwoPhaseCommitSinkFunctionTest.testNotifyOfCompletedCheckpoint",
        (("write", "a"), ("write", "b"), ("snapshot", 1), ("complete", 1)),
        ("a", "b"),
    ),
    Case(
        "a notification commits everything pre-committed up to n, in order; a late one nothing",
        "TwoPhaseCommitSinkFunctionTest.testNotifyOfCompletedCheckpoint",
        (
            ("write", 42),
            ("snapshot", 1),
            ("write", 43),
            ("snapshot", 2),
            ("write", 44),
            ("snapshot", 3),
            ("complete", 2),
            ("complete", 1),
            ("complete", 3),
        ),
        (42, 43, 44),
    ),
    Case(
        "a snapshot with no new record pre-commits nothing",
        "TwoPhaseCommitSinkFunction.snapshotState (a transaction begins at the first record)",
        (("snapshot", 1), ("write", "a"), ("snapshot", 2), ("complete", 2), ("snapshot", 3)),
        ("a",),
    ),
    Case(
        "an aborted checkpoint's transaction stays pending for the next one",
        "TwoPhaseCommitSinkFunction.notifyCheckpointAborted",
        (
            ("write", "a"),
            ("snapshot", 1),
            ("abort", 1),
            ("write", "b"),
            ("snapshot", 2),
            ("complete", 2),
        ),
        ("a", "b"),
    ),
    Case(
        "a failure before the notification: the restore commits the checkpoint's "
        "transaction and aborts the rest",
        "TwoPhaseCommitSinkFunctionTest.testFailBeforeNotify",
        (
            ("write", 42),
            ("snapshot", 1),
            ("write", 43),
            ("snapshot", 2),
            ("write", 44),
            ("restore", 1),
            ("write", 45),
            ("snapshot", 3),
            ("complete", 3),
        ),
        (42, 45),
    ),
    Case(
        "a failure after the commit: the restore finds the transaction committed, twice",
        "TwoPhaseCommitSinkFunction.recoverAndCommit (commits are idempotent)",
        (
            ("write", "a"),
            ("snapshot", 1),
            ("complete", 1),
            ("write", "b"),
            ("restore", 1),
            ("restore", 1),
        ),
        ("a",),
    ),
    Case(
        "a failure before any checkpoint: the restore aborts what was written",
        "TwoPhaseCommitSinkFunction.initializeState",
        (("write", "a"), ("snapshot", 1), ("restore", 0)),
        (),
    ),
)
"""The scripted cases, in order: the first that fails stops part a."""


class OneSink:
    """One sink task driven by hand, on a store of its own."""

    def __init__(self, sink_class: type[TwoPhaseCommitSink[str]]) -> None:
        self.store = TransactionStore()
        self.sink: Any = sink_class(self.store)  # type: ignore[call-arg]
        self.state: TwoPhaseCommitState[str] = self.sink.initialize_state(
            TASK, self.sink.initial_state(), False
        )
        self.taken: dict[int, TwoPhaseCommitState[str]] = {0: self.sink.initial_state()}

    def do(self, step: Step) -> None:
        """Carry out one step of a case."""
        kind, arg = step
        sink = self.sink
        if kind == "write":
            self.state = sink.process(self.state, arg)[0]
        elif kind == "snapshot":
            self.state = self.taken[arg] = sink.snapshot_state(self.state, arg)
        elif kind == "complete":
            self.state = sink.notify_checkpoint_complete(self.state, arg)
        elif kind == "abort":
            self.state = sink.notify_checkpoint_aborted(self.state, arg)
        else:
            self.state = sink.initialize_state(TASK, self.taken[arg], True)

    def observe(self) -> dict[str, str]:
        """What a test sees of the sink, each as text (compared exactly)."""
        s = self.state
        txns = ", ".join(f"{t.name} {t.status}" for t in self.store.table())
        state = [f"open {s.current} ({s.written} records)" if s.current else "nothing open"]
        state += [f"{txn} pending for checkpoint {n}" for n, txn in s.pending]
        return {
            "committed": "[" + ", ".join(map(repr, self.store.rows)) + "]",
            "transactions": "[" + txns + "]",
            "state": "; ".join(state),
        }


def say_step(step: Step) -> str:
    """One step of a case in words."""
    kind, arg = step
    if kind == "write":
        return f"record {arg!r} arrives"
    if kind == "snapshot":
        return f"the sink takes its snapshot for checkpoint {arg}"
    if kind == "complete":
        return f"the coordinator notifies that checkpoint {arg} completed"
    if kind == "abort":
        return f"the coordinator notifies that checkpoint {arg} was aborted"
    what = f"its state in checkpoint {arg}" if arg else "the start (no checkpoint completed)"
    return f"the task fails and restarts from {what}"


def run_case(case: Case, sink_class: type[Any]) -> list[str] | None:
    """The lines of the case's first difference from the reference, or None if there is
    none. A decision that raises is the difference (its message first)."""
    reference = OneSink(MemorySink)
    student = OneSink(catching(sink_class))
    head = f"case: {case.title} ({case.follows})"
    for i, step in enumerate(case.steps):
        reference.do(step)
        student.do(step)
        said = [head, *(f"step {k + 1}: {say_step(s)}" for k, s in enumerate(case.steps[: i + 1]))]
        fault = fault_of(student.state)
        if fault is not None:
            return [*said, f"at step {i + 1}, {fault}"]
        expected, got = reference.observe(), student.observe()
        if expected == got:
            continue
        for what in expected:
            if expected[what] != got[what]:
                said.append(f"after step {i + 1}, {what}: expected {expected[what]}")
                said.append(f"{' ' * len(f'after step {i + 1}, {what}:')} yours    {got[what]}")
        return said
    if tuple(student.store.rows) != case.committed:  # the reference's, as the tests assert
        return [
            head,
            f"at the end, committed {list(student.store.rows)!r}, not {list(case.committed)!r}",
        ]
    return None


def scripted_cases(sink_class: type[Any]) -> PartResult:
    """Part a of the two-phase-commit lab: every case, stopping at the first that differs."""
    return scripted_part(
        CASES,
        run_case,
        sink_class,
        f"{len(CASES)} cases (Flink's TwoPhaseCommitSinkFunctionTest: commit on the "
        "notification, several checkpoints at once, a snapshot with no record, an aborted "
        "checkpoint, a failure before and after the commit, a failure before any checkpoint), "
        "the same committed records, "
        "transactions and state as the reference after every step",
    )
