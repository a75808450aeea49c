"""Part b of the two-phase-commit lab: seeded random runs of a word count whose sinks are
the student's, with and without crashes.

Each run drives a :class:`~absnb.labs.two_phase_commit.world.SkippingWorld` (word count, three
sources, two counters, two sink tasks writing to one :class:`~absnb.sinks.TransactionStore`)
with a seeded :class:`~absnb.sim.schedulers.RandomScheduler`, periodic checkpoints and, in
half the runs, a crash of a task (the sinks' first among them) followed by a recovery from
the latest completed checkpoint. After every step the rules of part c hold
(:mod:`absnb.labs.two_phase_commit.search`); at the end every transaction is committed or
aborted, and the committed output is the failure-free run's, each record once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from absnb.core.job import Job
from absnb.jobs.word_count import word_count
from absnb.labs.report import PartResult
from absnb.labs.runs import MAX_STEPS, RunFailure, run_failed
from absnb.labs.runs import Run as _Run
from absnb.labs.search import no_stuck_checkpoint
from absnb.labs.two_phase_commit.handler import catching
from absnb.labs.two_phase_commit.search import (
    nothing_pre_committed,
    nothing_visible_early,
    notification_commits_up_to_n,
    restore_finishes_transactions,
    sink_faults,
)
from absnb.labs.two_phase_commit.world import SkippingWorld
from absnb.operators.base import Operator
from absnb.sim.actions import RecoveryMode
from absnb.sim.checks import reference_output
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sinks.memory import TransactionStore

SEEDS = 40
"""Seeds per crash setting."""
LINES = [["a b c", "b a"], ["c c a"], ["b d", "d a"]]
CRASHED = ("sink[0]", "sink[1]", "count[0]", "source[1]")
"""The tasks a run crashes, in turn."""


def job_with(sink: str | Operator = "collect") -> Job:
    """Word count, three sources, two counters, two sinks writing to ``sink``."""
    return word_count(LINES, counters=2, sinks=2, sink=sink)


@cache
def expected() -> list[Any]:
    """The failure-free output."""
    return list(reference_output(job_with()))


@dataclass(frozen=True)
class Run(_Run):
    """A random run, with the task it crashes."""

    crash_task: str | None = None

    def describe(self) -> str:
        text = super().describe()
        return text.replace(", a crash at", f", a crash of {self.crash_task} at", 1)


def runs() -> Iterator[Run]:
    """Part b's runs: :data:`SEEDS` seeds without a crash and as many with one."""
    name = "word count 3 x 2 x 2"
    job = job_with()
    for seed in range(SEEDS):
        yield Run(name, job, seed, 3 + seed % 4, None, "full")
    for seed in range(SEEDS):
        recovery: RecoveryMode = "partial" if seed % 2 else "full"
        crash_task = CRASHED[seed % len(CRASHED)]
        yield Run(name, job, seed, 3 + seed % 4, 8 + (7 * seed) % 50, recovery, crash_task)


CHECKS = (
    sink_faults,
    nothing_visible_early,
    notification_commits_up_to_n,
    restore_finishes_transactions,
)


def run_one(run: Run, sink_class: type[Any]) -> RunFailure | None:
    """Run ``run`` to its end with the sink class, checking after every step; the first
    problem, or None."""
    sink = catching(sink_class)(TransactionStore())
    world = SkippingWorld(job_with(sink), "abs", checkpoint_interval=run.interval)
    scheduler = RandomScheduler(
        seed=run.seed, crash_at=run.crash_at, recovery=run.recovery, crash_task=run.crash_task
    )
    stepper = Stepper(world, scheduler, history=False)
    for _ in range(MAX_STEPS):
        event = stepper.step()
        if event is None:
            break
        problem = next((p for check in CHECKS if (p := check(stepper.world, event))), None)
        if problem:
            return RunFailure(run, event.step + 1, problem, tuple(stepper.actions))
    else:
        return RunFailure(run, MAX_STEPS, f"no end after {MAX_STEPS} steps", ())
    end = stepper.world
    problem = no_stuck_checkpoint(end) or nothing_pre_committed(end)
    if problem is None:
        for txn in sink.store.table():
            if txn.status == "open":
                problem = f"the run ended with {txn.name} still open"
                break
    if problem is None:
        got = end.output()
        if sorted(map(repr, got)) != sorted(map(repr, expected())):
            problem = f"the sinks committed {got!r}, not the failure-free {expected()!r} once each"
    if problem:
        return RunFailure(run, end.clock, problem, tuple(stepper.actions))
    return None


def random_runs(sink_class: type[Any]) -> PartResult:
    """Part b: every run of :func:`runs`, stopping at the first that fails."""
    part = "b. random runs, with and without crashes"
    count = 0
    for run in runs():
        count += 1
        failure = run_one(run, sink_class)
        if failure is not None:
            return run_failed(part, failure)
    return PartResult(
        part,
        "passed",
        f"{count} runs (word count 3 x 2 x 2 into one transaction store, half with a crash "
        "of a sink, a counter or a source): nothing visible before its checkpoint completed, "
        "every notification and restore finishing its transactions, the committed output "
        "the failure-free one, each record once",
    )
