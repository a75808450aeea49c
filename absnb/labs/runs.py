"""Part b of the ABS lab: seeded random runs of whole jobs, with and without crashes.

Each run drives a world under the student's handler with a seeded
:class:`~absnb.sim.schedulers.RandomScheduler`, periodic checkpoints and, in half the runs,
a crash of a task followed by a recovery from the latest completed checkpoint (full or
partial). After every step no decision may have raised and every snapshot completed in the
step must be a consistent cut; in the bank, balances plus money in transit must add up
(outside recoveries). At the end nothing may be blocked or stuck, and the output must equal
the failure-free output (exactly once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from absnb.core.job import Job
from absnb.jobs.word_count import word_count
from absnb.labs.handler import LabProtocol
from absnb.labs.report import PartResult
from absnb.labs.search import acyclic_bank, decisions_raise, no_stuck_checkpoint, nothing_blocked
from absnb.protocols.aligning import AligningHandler
from absnb.protocols.base import BarrierHandler, SnapshotProtocol
from absnb.sim.actions import Action, RecoveryMode
from absnb.sim.checks import reference_output, snapshot_problems
from absnb.sim.explore import money_conserved
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World

SEEDS = 40
"""Seeds per job and crash setting."""
MAX_STEPS = 5_000


@dataclass(frozen=True)
class Run:
    """One random run: a job, a seed, a checkpoint interval and a crash (or none)."""

    name: str
    job: Job
    seed: int
    interval: int
    crash_at: int | None
    recovery: RecoveryMode

    def describe(self) -> str:
        crash = (
            f", a crash at step {self.crash_at} and {self.recovery} recovery"
            if self.crash_at is not None
            else ""
        )
        return f"{self.name}, seed {self.seed}, a checkpoint every {self.interval} steps{crash}"


@dataclass(frozen=True)
class RunFailure:
    """What went wrong in a run, and the actions up to there."""

    run: Run
    step: int
    problem: str
    actions: tuple[Action, ...]


def runs() -> Iterator[Run]:
    """Part b's runs: word count (three sources, two counters, two sinks) and the acyclic
    bank, each over :data:`SEEDS` seeds without a crash and as many with one."""
    jobs = {
        "word count 3 x 2 x 2": word_count(
            [["a b c", "b a"], ["c c a"], ["b d", "d a"]], counters=2, sinks=2
        ),
        "bank A -> B -> C, A -> C": acyclic_bank(),
    }
    for name, job in jobs.items():
        for seed in range(SEEDS):
            yield Run(name, job, seed, 3 + seed % 4, None, "full")
        for seed in range(SEEDS):
            recovery: RecoveryMode = "partial" if seed % 2 else "full"
            yield Run(name, job, seed, 3 + seed % 4, 3 + (5 * seed) % 25, recovery)


def random_runs(handler_class: type[AligningHandler]) -> PartResult:
    """Part b: every run of :func:`runs`, stopping at the first that fails."""
    part = "b. random runs, with and without crashes"
    count = 0
    for run in runs():
        count += 1
        failure = run_one(run, handler_class)
        if failure is not None:
            return run_failed(part, failure)
    return PartResult(
        part,
        "passed",
        f"{count} runs (word count 3 x 2 x 2 and the acyclic bank, half with a crash): every "
        "snapshot a consistent cut, money conserved, nothing blocked, output exactly once",
    )


def run_failed(part: str, failure: RunFailure) -> PartResult:
    """Part b failed: the run, the step, the problem."""
    return PartResult(
        part,
        "failed",
        f"{failure.run.describe()}: at step {failure.step}",
        [failure.problem],
    )


def run_one(
    run: Run,
    handler_class: type[BarrierHandler],
    protocol: Callable[..., SnapshotProtocol] = LabProtocol,
    scheduler_class: type[RandomScheduler] = RandomScheduler,
) -> RunFailure | None:
    """Run ``run`` to its end, checking after every step; the first problem, or None.
    ``protocol`` makes the lab's protocol around ``handler_class``; ``scheduler_class``
    drives the run (ABS Algorithm 1's and the seeded random scheduler by default)."""
    world = World(run.job, protocol(handler_class, catch=True), checkpoint_interval=run.interval)
    scheduler = scheduler_class(seed=run.seed, crash_at=run.crash_at, recovery=run.recovery)
    stepper = Stepper(world, scheduler, history=False)
    for _ in range(MAX_STEPS):
        event = stepper.step()
        if event is None:
            break
        problem = decisions_raise(stepper.world, event) or _snapshots(stepper.world, event)
        if problem is None and run.job.total is not None and run.recovery == "full":
            # (a partial recovery resends what is in transit: duplicates, dropped on arrival)
            problem = money_conserved(stepper.world, event)
        if problem:
            return RunFailure(run, event.step + 1, problem, tuple(stepper.actions))
    else:
        return RunFailure(run, MAX_STEPS, f"no end after {MAX_STEPS} steps", ())
    end = stepper.world
    problem = nothing_blocked(end) or no_stuck_checkpoint(end)
    if problem is None:
        expected = reference_output(run.job, end.inputs)
        if end.output() != expected:
            problem = f"the output {end.output()!r} is not the failure-free {expected!r}"
    if problem:
        return RunFailure(run, end.clock, problem, tuple(stepper.actions))
    return None


def _snapshots(world: World, event: object) -> str | None:
    for n in getattr(event, "completed", ()):
        snap = next(s for s in world.snapshots if s.checkpoint_id == n)
        problems = snapshot_problems(world.job, snap)
        if problems:
            return problems[0]
    return None
