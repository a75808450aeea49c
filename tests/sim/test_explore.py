"""Exhaustive exploration: every interleaving of small jobs, and checkers that can fail.

The positive runs check feasibility after every step and, at every end state, that no
snapshot is stuck and the output is exactly-once. The negative runs show that the search
finds a violation when there is one, and returns a shortest trace that replays to it.
"""

from __future__ import annotations

import pytest

import absnb
from absnb.core.effects import Block
from absnb.protocols.aligned import AlignedBarrierHandler, AlignedProtocol
from absnb.protocols.base import task_handler_args
from absnb.sim.explore import (
    explore,
    feasible_snapshots,
    money_conserved,
    no_deadlock,
    output_is_exactly_once,
)

WORDS = [["a b"], ["b a"]]
# Hand-derived: the words are a, b, b, a; each word is counted to 2, in some order.
WORDS_OUTPUT = [("a", 1), ("a", 2), ("b", 1), ("b", 2)]


def word_count_2x2x2() -> absnb.Job:
    return absnb.word_count(WORDS, sources=2, counters=2, sinks=2)


class Witness:
    """An invariant that never fails but remembers which checkpoints completed somewhere, so
    that a test can tell that the search did reach completed snapshots."""

    def __init__(self) -> None:
        self.completed: set[int] = set()

    def __call__(self, world, event):
        self.completed.update(event.completed)
        return None


def check_clean(world: absnb.World, invariants, reference):
    witness = Witness()
    result = explore(
        world,
        [*invariants, witness],
        [no_deadlock, output_is_exactly_once(reference)],
    )
    assert result.complete, str(result)
    assert result.ok, str(result)
    assert result.violation is None
    assert result.counterexample == []
    assert result.states > 0
    assert result.transitions >= result.states - 1
    assert result.terminal > 0
    assert "every invariant holds" in str(result)
    return result, witness


# -- word count 2x2x2 ------------------------------------------------------------------------


def test_the_word_count_job_and_its_output():
    job = word_count_2x2x2()
    assert [str(t) for t in job.graph.tasks] == [
        "source[0]",
        "source[1]",
        "count[0]",
        "count[1]",
        "sink[0]",
        "sink[1]",
    ]
    assert absnb.reference_output(job) == WORDS_OUTPUT


@pytest.mark.parametrize(
    "protocol",
    [
        "abs",
        "abs-cyclic",
        "synchronous",
        pytest.param("chandy-lamport", marks=pytest.mark.slow),
    ],
)
def test_word_count_every_interleaving(protocol):
    world = absnb.World(word_count_2x2x2(), protocol, max_checkpoints=1)
    result, witness = check_clean(world, [feasible_snapshots], WORDS_OUTPUT)
    assert witness.completed == {1}
    # Two sources, one line each: at least 2 emits, 4 words to counters, 4 counts to sinks.
    assert result.max_depth >= 10


def test_synchronous_has_fewer_states_than_abs():
    """Halting the sources during a checkpoint removes interleavings."""
    abs_result = explore(absnb.World(word_count_2x2x2(), "abs", max_checkpoints=1))
    sync_result = explore(absnb.World(word_count_2x2x2(), "synchronous", max_checkpoints=1))
    none_result = explore(absnb.World(word_count_2x2x2(), "none"))
    assert none_result.states < sync_result.states < abs_result.states


# -- the bank --------------------------------------------------------------------------------


@pytest.mark.parametrize("transfers", [2, 3])
@pytest.mark.parametrize("protocol", ["chandy-lamport", "abs-cyclic"])
def test_bank_every_interleaving(protocol, transfers):
    job = absnb.bank_transfer(transfers=transfers, seed=1)
    a, b = job.graph.task("A"), job.graph.task("B")
    # The final balances, by hand from the input logs: each transfer moves money once.
    balances = {"A": 10_000, "B": 5_000}
    for src in (a, b):
        for dst, amount in job.inputs[src]:
            balances[str(src)] -= amount
            balances[dst] += amount
    assert sum(len(job.inputs[t]) for t in (a, b)) == transfers
    assert sum(balances.values()) == 15_000
    world = absnb.World(job, protocol, max_checkpoints=1)
    _, witness = check_clean(world, [feasible_snapshots, money_conserved], balances)
    assert witness.completed == {1}


@pytest.mark.parametrize("protocol", ["chandy-lamport", "abs-cyclic"])
def test_bank_with_crashes_at_every_step(protocol):
    """Crashes and both recoveries explored at every step (to a depth bound): every
    completed snapshot stays feasible and no step creates or destroys money."""
    job = absnb.bank_transfer(transfers=3, seed=1)
    witness = Witness()
    result = explore(
        absnb.World(job, protocol, max_checkpoints=1),
        [feasible_snapshots, money_conserved, witness],
        crashes=True,
        max_depth=10,
    )
    assert result.ok, str(result)
    assert not result.complete  # a crash is always possible: the depth bound cuts it
    assert "bound reached" in str(result)
    assert result.states > 100
    assert witness.completed == {1}


# -- the checker can fail --------------------------------------------------------------------


def a_keeps_9000(world, event):
    balance = world.state_of("A")
    return None if balance >= 9_000 else f"A has {balance:,}"


def test_a_false_invariant_yields_a_shortest_replayable_counterexample():
    job = absnb.bank_transfer(transfers=3, seed=1)
    a = job.graph.task("A")
    assert job.inputs[a] == (("B", 500), ("B", 800))  # A: 10,000 -> 9,500 -> 8,700
    world = absnb.World(job, "chandy-lamport", max_checkpoints=1)
    result = explore(world, [feasible_snapshots, money_conserved, a_keeps_9000])
    assert not result.ok
    assert result.violation == "A has 8,700"
    # Only A's own transfers lower A, so the shortest way there is A's two transfers.
    assert result.counterexample == [absnb.Emit(a), absnb.Emit(a)]
    assert "VIOLATION A has 8,700" in str(result)
    assert "trace: A emits; A emits" in str(result)

    stepper = absnb.Stepper(world)
    for action in result.counterexample[:-1]:
        event = stepper.step(action)
        assert a_keeps_9000(stepper.world, event) is None
    event = stepper.step(result.counterexample[-1])
    assert a_keeps_9000(stepper.world, event) == "A has 8,700"
    assert stepper.world.state_of("A") == 8_700


class NoAlignmentHandler(AlignedBarrierHandler):
    """A deliberately broken ABS: never blocks an input whose barrier has arrived, so records
    sent after a barrier can reach the state before the task snapshots."""

    __slots__ = ()

    def _on_barrier(self, channel, barrier):
        effects = super()._on_barrier(channel, barrier)
        return [e for e in effects if not isinstance(e, Block)]

    def clone(self):
        new = super().clone()
        new.__class__ = NoAlignmentHandler
        return new


class NoAlignment(AlignedProtocol):
    name = "abs-without-alignment"

    def handler(self, graph, task):
        return NoAlignmentHandler(*task_handler_args(graph, task))


def test_the_feasibility_check_catches_abs_without_alignment():
    job = absnb.word_count([["a", "b"], ["c"]], counters=1, sinks=1)
    world = absnb.World(job, NoAlignment(), max_checkpoints=1)
    result = explore(world, [feasible_snapshots])
    assert not result.ok
    assert "counted twice" in result.violation
    assert "source[0]->count" in result.violation or "source[1]->count" in result.violation
    # The trace replays to a world whose snapshot is infeasible.
    stepper = absnb.Stepper(world)
    for action in result.counterexample:
        stepper.step(action)
    snap = stepper.world.latest_snapshot()
    assert snap is not None
    problems = absnb.snapshot_problems(job, snap)
    assert problems
    assert problems[0] == result.violation
    # The same job with alignment is fine.
    world = absnb.World(job, "abs", max_checkpoints=1)
    check_clean(world, [feasible_snapshots], [("a", 1), ("b", 1), ("c", 1)])


# -- ABS Algorithm 1 on a cycle deadlocks, Algorithm 2 does not ------------------------------


def test_algorithm_1_on_the_cyclic_job_deadlocks_at_the_loop_head():
    job = absnb.cyclic([3])
    head = job.graph.task("head")
    back_edge = job.graph.channel("step->head")
    regular = job.graph.channel("source->head")
    assert job.graph.back_edges == frozenset({back_edge})

    world = absnb.World(job, "abs", max_checkpoints=1, allow_deadlock=True)
    result = explore(world, [feasible_snapshots], [no_deadlock])
    assert not result.ok
    assert "checkpoint(s) 1 cannot complete" in result.violation
    assert "head waits for barrier 1 on step->head" in result.violation
    assert "it has blocked source->head" in result.violation

    stepper = absnb.Stepper(world)
    for action in result.counterexample:
        stepper.step(action)
    assert stepper.world.progress_actions() == []
    deadlock = absnb.find_deadlock(stepper.world)
    assert deadlock is not None
    assert str(deadlock) == result.violation
    assert deadlock.pending == (1,)
    [waiting] = deadlock.waiting
    assert waiting.task == head
    assert waiting.channels == (back_edge,)
    assert waiting.blocked == (regular,)
    assert stepper.world.blocked == {regular}


@pytest.mark.parametrize("protocol", ["abs-cyclic", "synchronous", "chandy-lamport"])
def test_the_cyclic_job_every_interleaving(protocol):
    job = absnb.cyclic([3, 2])
    # Collatz by hand: 3 -> 10 -> 5 -> 16 -> 8 -> 4 -> 2 -> 1 (7 steps); 2 -> 1 (1 step).
    reference = [(2, 1), (3, 7)]
    assert absnb.reference_output(job) == reference
    world = absnb.World(job, protocol, max_checkpoints=1)
    _, witness = check_clean(world, [feasible_snapshots], reference)
    assert witness.completed == {1}


# -- bounds ----------------------------------------------------------------------------------


def test_bounds_make_the_search_incomplete():
    world = absnb.World(word_count_2x2x2(), "abs", max_checkpoints=1)
    capped = explore(world, max_states=50)
    assert not capped.complete
    assert capped.states == 50
    assert "not exhaustive" in str(capped)
    shallow = explore(world, max_depth=3)
    assert not shallow.complete
    assert shallow.max_depth == 3
    assert shallow.ok
