"""Part c of the ABS lab: every interleaving of small jobs, and the shortest counterexample.

Each :class:`Search` is one breadth-first exploration (:func:`~absnb.sim.explore.explore`)
of a small job under the student's handler, with stated bounds. After every step it checks
that no decision raised, that every completed snapshot is a consistent cut and, for the
bank, that no money is made or lost; at every end it checks that no input is left
blocked, no checkpoint is stuck and the output is the failure-free one. Breadth-first, the
first violation found is reached by a shortest schedule, which :func:`counterexample`
replays and tells in words (:mod:`absnb.labs.story`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from absnb.core.job import Job
from absnb.i18n import gettext as _
from absnb.jobs.bank_transfer import bank_transfer
from absnb.jobs.word_count import word_count
from absnb.labs.handler import LabProtocol
from absnb.labs.report import Counterexample
from absnb.labs.story import blocked_words, cut_words, stuck_words
from absnb.protocols.base import BarrierHandler, SnapshotProtocol
from absnb.sim.checks import find_deadlock, reference_output, snapshot_problems
from absnb.sim.events import Event
from absnb.sim.explore import (
    Exploration,
    Goal,
    Invariant,
    explore,
    feasible_snapshots,
    money_conserved,
    output_is_exactly_once,
)
from absnb.sim.schedulers import ScriptedScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World


def decisions_raise(world: World, event: Event) -> str | None:
    """Invariant: no decision of the student's handler raised (the lab catches it)."""
    for t, task in world.tasks.items():
        fault = getattr(task.handler, "fault", None)
        if fault:
            return f"{t}: {fault}"
    return None


def nothing_blocked(world: World) -> str | None:
    """Terminal check: no input is left blocked when nothing more can happen."""
    if not world.blocked:
        return None
    names = ", ".join(str(c) for c in world.graph.channels if c in world.blocked)
    return f"the run ended with {names} blocked"


def no_stuck_checkpoint(world: World) -> str | None:
    """Terminal check: no checkpoint is left pending (what waits for what)."""
    dead = find_deadlock(world)
    return None if dead is None else str(dead)


@cache
def small_word_count() -> Job:
    """Two sources (``a b`` and ``c``) into one counter and one sink: the counter aligns
    two inputs."""
    return word_count([["a", "b"], ["c"]], counters=1, sinks=1)


@cache
def word_count_2x2x2() -> Job:
    """Two sources, two counters, two sinks (``a b`` and ``b a``): every counter and sink
    aligns two inputs."""
    return word_count([["a b"], ["b a"]], sources=2, counters=2, sinks=2)


@cache
def acyclic_bank() -> Job:
    """Accounts A -> B -> C and A -> C (acyclic: Alg. 1 needs no loops), four transfers: C
    aligns two inputs, and the money must add up in every snapshot."""
    return bank_transfer(
        {"A": 1_000, "B": 500, "C": 300}, links=[("A", "B"), ("B", "C"), ("A", "C")], transfers=4
    )


Words = Callable[[World, Sequence[Event], str], list[str]]
"""What went wrong at the end of a replayed counterexample, in words (the problem as the
check said it given)."""


@dataclass(frozen=True)
class Search:
    """One exploration: a job, its bounds, what is checked.

    Attributes:
        title: the job, in words.
        job: makes the job (once: the functions are cached).
        max_checkpoints: the snapshots the world triggers.
        crashes, ends: also explore crashes, or inputs that end, at every step.
        max_depth: a depth bound (None: every interleaving).
        max_states: a bound on the states kept.
        protocol: the lab's protocol around a handler class (``catch``: keep what a
            decision raises); ABS Algorithm 1's by default.
        world_class: the world explored (a lab may widen what is enabled, e.g. a snapshot
            started at any process).
        words: tells a counterexample in words (None: the ABS lab's :func:`words_for`).
        snapshot: what one of ``max_checkpoints`` is called in the bounds.
        started: how the snapshots are started, in the bounds (empty: say nothing).
    """

    title: str
    job: Callable[[], Job]
    max_checkpoints: int = 1
    crashes: bool = False
    ends: bool = False
    max_depth: int | None = None
    max_states: int = 200_000
    protocol: Callable[..., SnapshotProtocol] = LabProtocol
    world_class: type[World] = World
    words: Words | None = None
    snapshot: str = "checkpoint"
    started: str = ""

    def world(self, handler_class: type[Any]) -> World:
        protocol = self.protocol(handler_class, catch=True)
        return self.world_class(self.job(), protocol, max_checkpoints=self.max_checkpoints)

    def bounds(self) -> str:
        k = self.max_checkpoints
        parts = [f"{k} {self.snapshot}{'s' if k > 1 else ''}{self.started}"]
        if self.ends:
            parts.append("inputs that end (FLIP-147) at every step")
        if self.crashes:
            parts.append("a crash of any task at every step, full and partial recovery")
        parts.append(
            f"to depth {self.max_depth}" if self.max_depth is not None else "every interleaving"
        )
        return ", ".join(parts)

    def checks(self) -> tuple[list[Invariant], list[Goal]]:
        job = self.job()
        invariants: list[Invariant] = [decisions_raise, feasible_snapshots]
        if job.total is not None and not self.crashes:
            invariants.append(money_conserved)
        goals: list[Goal] = [nothing_blocked, no_stuck_checkpoint]
        if not self.crashes:
            goals.append(output_is_exactly_once(_reference(self.job)))
        return invariants, goals

    def run(self, handler_class: type[BarrierHandler]) -> Exploration:
        invariants, goals = self.checks()
        return explore(
            self.world(handler_class),
            invariants,
            goals,
            max_states=self.max_states,
            max_depth=self.max_depth,
            crashes=self.crashes,
            ends=self.ends,
        )


@cache
def _reference(make: Callable[[], Job]) -> object:
    """The failure-free output of the job ``make`` makes (each job is made once)."""
    return reference_output(make())


SEARCHES = (
    Search("word count, 2 sources -> 1 counter -> 1 sink", small_word_count),
    Search("bank A -> B -> C, A -> C, 4 transfers", acyclic_bank),
    Search("word count, 2 sources -> 2 counters -> 2 sinks", word_count_2x2x2),
    Search("word count, 2 sources -> 1 counter -> 1 sink", small_word_count, max_checkpoints=2),
    Search("word count, 2 sources -> 1 counter -> 1 sink", small_word_count, ends=True),
    Search(
        "word count, 2 sources -> 1 counter -> 1 sink",
        small_word_count,
        crashes=True,
        max_depth=8,
    ),
)
"""Part c's explorations, smallest first; the first violation stops the part."""


def words_for(world: World, events: Sequence[Event], problem: str) -> list[str]:
    """What went wrong at the end of a replayed counterexample, in words."""
    if problem.startswith("the run ended with") and world.blocked:
        return blocked_words(world, events)
    if problem.startswith("deadlock") and world.coordinator.pending:
        return stuck_words(world)
    if events and events[-1].completed:
        for n in events[-1].completed:
            snap = next(s for s in world.snapshots if s.checkpoint_id == n)
            if snapshot_problems(world.job, snap):
                done = _("Checkpoint {n} completed at step {step}.").format(n=n, step=len(events))
                return [done, *cut_words(world, events, snap)]
    return []


def counterexample(
    search: Search, handler_class: type[BarrierHandler], found: Exploration, how: str
) -> Counterexample:
    """The violation ``found`` by ``search``, replayed and told in words."""
    actions = tuple(found.counterexample)
    stepper = Stepper(search.world(handler_class), ScriptedScheduler(actions), history=False)
    events = stepper.run()
    problem = found.violation or ""
    words = search.words or words_for
    return Counterexample(
        job=search.job(),
        handler_class=handler_class,
        actions=actions,
        problem=problem,
        words=(problem, *words(stepper.world, events, problem)),
        steps=tuple(
            _("step {step}: {what}").format(step=e.step + 1, what=e.describe().split(": ", 1)[1])
            for e in events
        ),
        how=how,
        make_world=partial(search.world, handler_class),
        max_checkpoints=search.max_checkpoints,
    )
