"""Exhaustive exploration: every interleaving of a small job, up to a bound.

Breadth-first search over worlds, deduplicated by
:meth:`World.key <absnb.sim.state.WorldState.key>`. Every transition is checked (so a property of
the step that led to a state is checked even when the state was seen before), and the shortest
counterexample is returned as a list of actions that replays it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from absnb.core import validate
from absnb.core.errors import GraphError, InvalidTypeError
from absnb.sim.actions import Action
from absnb.sim.collector import paused_collector
from absnb.sim.events import Event
from absnb.sim.world import World

Invariant = Callable[[World, Event], str | None]
"""Returns a description of the violation after a step, or None."""
Goal = Callable[[World], str | None]
"""Checked on every terminal world (no enabled action): a description of what is wrong."""


@dataclass
class Exploration:
    """What an exploration found."""

    states: int = 0
    transitions: int = 0
    terminal: int = 0
    max_depth: int = 0
    complete: bool = True
    violation: str | None = None
    counterexample: list[Action] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.violation is None

    def found(self, problem: str, counterexample: list[Action], states: int) -> Exploration:
        """Record a violation and the actions that reach it; the search stops here."""
        self.violation = problem
        self.counterexample = counterexample
        self.states = states
        return self

    def __str__(self) -> str:
        head = (
            f"{self.states:,} states, {self.transitions:,} transitions, "
            f"{self.terminal:,} terminal, depth {self.max_depth}"
            + ("" if self.complete else " (bound reached: not exhaustive)")
        )
        if self.violation is None:
            return head + ": every invariant holds"
        steps = "; ".join(str(a) for a in self.counterexample)
        return f"{head}: VIOLATION {self.violation}\n  trace: {steps}"


def check_explore(world: Any, max_states: Any, max_depth: Any, crashes: Any, ends: Any) -> None:
    """The arguments of :func:`~absnb.sim.explore.explore`."""
    if not isinstance(world, World):
        raise InvalidTypeError(
            f"explore needs a World, such as absnb.World(absnb.word_count(), 'abs', "
            f"max_checkpoints=1), not {world!r:.80}"
        )
    validate.whole("max_states", max_states, minimum=1)
    validate.optional_whole("max_depth", max_depth, minimum=0)
    validate.flag("crashes", crashes)
    validate.flag("ends", ends)


def explore(
    world: World,
    invariants: Sequence[Invariant] = (),
    terminal_checks: Sequence[Goal] = (),
    *,
    max_states: int = 2_000_000,
    max_depth: int | None = None,
    crashes: bool = False,
    ends: bool = False,
) -> Exploration:
    """Search every interleaving from ``world``.

    Args:
        world: the start.
        invariants: checked after every transition.
        terminal_checks: checked on every world with no enabled action.
        max_states: stop after this many distinct states (``complete`` is then False).
        max_depth: do not expand beyond this many steps.
        crashes: also explore a crash of every task at every step (and the recoveries).
        ends: also explore a finished sender ending each of its channels at every step
            where it may (:class:`~absnb.sim.actions.EndInput`, Flink's FLIP-147), as the
            Spark runtime does at the end of every run.

    Raises:
        GraphError: a sink of the job writes to an external system, which branches of the
            search would share (unless the world carries it: ``carries_external``).
    """
    check_explore(world, max_states, max_depth, crashes, ends)
    if not world.carries_external:
        _refuse_external_sinks(world)
    with paused_collector():  # every state found is kept: absnb.sim.collector
        return _search(world, invariants, terminal_checks, max_states, max_depth, crashes, ends)


def _search(
    world: World,
    invariants: Sequence[Invariant],
    terminal_checks: Sequence[Goal],
    max_states: int,
    max_depth: int | None,
    crashes: bool,
    ends: bool,
) -> Exploration:
    """The breadth-first search of :func:`explore`, over its checked arguments."""
    result = Exploration()
    start = world.clone()
    # Without crashes, what a recovery would read decides nothing (unless one is due now).
    recovery = crashes or start.failed is not None
    start_key = start.key(recovery=recovery)
    parents: dict[object, tuple[object, Action] | None] = {start_key: None}
    # Each world with its key (computed once, when it is found).
    frontier: deque[tuple[World, int, object]] = deque([(start, 0, start_key)])
    while frontier:
        current, depth, key = frontier.popleft()
        result.max_depth = max(result.max_depth, depth)
        enabled = current.enabled_actions(crashes=crashes, ends=ends)
        if not enabled:
            result.terminal += 1
            problem = _first(check(current) for check in terminal_checks)
            if problem:
                return result.found(problem, _path(parents, key), len(parents))
            continue
        if max_depth is not None and depth >= max_depth:
            result.complete = False
            continue
        for action in enabled:
            nxt = current.clone()
            event = nxt.apply(action)
            result.transitions += 1
            problem = _first(inv(nxt, event) for inv in invariants)
            if problem:
                return result.found(problem, _path(parents, key, action), len(parents))
            nkey = nxt.key(recovery=recovery)
            if nkey in parents:
                continue
            if len(parents) >= max_states:
                result.complete = False
                continue
            parents[nkey] = (key, action)
            frontier.append((nxt, depth + 1, nkey))
    result.states = len(parents)
    return result


def _refuse_external_sinks(world: World) -> None:
    external = [n for n, op in world.graph.operators.items() if op.function.external]
    if external:
        raise GraphError(
            f"cannot explore job {world.graph.name!r}: sink {external[0]!r} writes to an "
            "external system, which every branch of the search would share; explore the job "
            "with its default sink (e.g. word_count(sink='collect')) and step through the "
            "two-phase commit with a Stepper instead"
        )


def _first(problems: Iterable[str | None]) -> str | None:
    """The first problem found (checks run lazily, in order, up to it)."""
    return next((p for p in problems if p), None)


def _path(
    parents: dict[object, tuple[object, Action] | None], key: object, last: Action | None = None
) -> list[Action]:
    """The actions from the start to the state ``key`` (then ``last``), from the BFS tree."""
    actions: list[Action] = [] if last is None else [last]
    entry = parents[key]
    while entry is not None:
        key, action = entry
        actions.append(action)
        entry = parents[key]
    return actions[::-1]


def feasible_snapshots(world: World, event: Event) -> str | None:
    """Invariant: a checkpoint completed in this step is a consistent cut."""
    from absnb.sim.checks import snapshot_problems

    for n in event.completed:
        snap = next(s for s in world.snapshots if s.checkpoint_id == n)
        problems = snapshot_problems(world.job, snap)
        if problems:
            return problems[0]
    return None


def money_conserved(world: World, event: Event) -> str | None:
    """Invariant (bank): balances plus money in transit equal the total after every step."""
    from absnb.sim.checks import world_total

    if world.job.total is None or world.failed is not None:
        return None
    total = world_total(world)
    return None if total == world.job.total else f"money adds up to {total:,}"


def no_deadlock(world: World) -> str | None:
    """Terminal check: no checkpoint is left pending and no channel blocked."""
    from absnb.sim.checks import find_deadlock

    dead = find_deadlock(world)
    return str(dead) if dead else None


def output_is_exactly_once(reference: object) -> Goal:
    """Terminal check: the output equals ``reference`` (the failure-free output)."""

    def check(world: World) -> str | None:
        out = world.output()
        return None if out == reference else f"output {out!r} differs from {reference!r}"

    return check
