"""Two-phase commit in the simulator: a crash at every phase, then recovery.

For each phase, each crashed task and each external system (memory, files, PostgreSQL),
the external system ends up holding exactly the failure-free output (nothing lost, nothing
twice) and no transaction is left open or pre-committed; the at-least-once sink, crashed
the same way, holds duplicates.
"""

from __future__ import annotations

from collections import Counter

import pytest

import absnb
from absnb.sim.checks import reference_output
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.sinks import AtLeastOnceSink, MemorySink
from tests.sinks.harness import LINES, PHASES, first_seed_reaching, the_sink, unfinished

CRASHED = ("sink[0]", "count[1]", "source[0]")


@pytest.mark.parametrize("crash", CRASHED)
@pytest.mark.parametrize("phase", PHASES)
def test_two_phase_commit_is_exactly_once_after_a_crash_at_every_phase(
    phase, crash, make_sink
) -> None:
    stepper, expected = first_seed_reaching(make_sink, phase, crash)
    world = stepper.world
    assert world.is_finished()
    assert world.output() == expected
    assert sorted(the_sink(world).committed()) == expected  # read back from the system
    # every transaction ended: committed or aborted, none left open or pre-committed
    assert unfinished(the_sink(world)) == []


def test_a_crash_before_the_commit_commits_on_restore() -> None:
    stepper, _ = first_seed_reaching(MemorySink, "completed", "sink[0]")
    recovery = next(e for e in stepper.trace if e.restored is not None)
    store = stepper.world.graph.function(stepper.world.graph.task("sink[0]")).store
    n = recovery.restored[0]
    assert n > 0
    # the transactions pre-committed for checkpoint n were committed, by the restore
    assert [t.status for t in store.table() if t.checkpoint_id == n] == ["committed"] * 2


def test_a_crash_after_pre_commit_aborts_the_vote() -> None:
    stepper, expected = first_seed_reaching(MemorySink, "pre-committed", "count[1]")
    store = stepper.world.graph.function(stepper.world.graph.task("sink[0]")).store
    aborted = [t for t in store.table() if t.status == "aborted"]
    assert any(t.checkpoint_id is not None for t in aborted)
    assert stepper.world.output() == expected


@pytest.mark.parametrize("crash", ["count[1]", "sink[0]"])
def test_the_at_least_once_sink_writes_duplicates(crash) -> None:
    """Crashed anywhere, it loses nothing; crashed where a replay re-sends records it
    already wrote, it holds them twice."""
    duplicated = 0
    for crash_at in range(5, 60, 3):
        job = absnb.word_count(LINES, sink=AtLeastOnceSink())
        world = World(job, "abs", checkpoint_interval=6)
        scheduler = RandomScheduler(seed=crash_at, crash_at=crash_at, crash_task=crash)
        stepper = Stepper(world, scheduler, history=False)
        stepper.run()
        got, want = Counter(stepper.world.output()), Counter(reference_output(job))
        assert not want - got  # nothing lost
        duplicated += (got - want).total() > 0
    assert duplicated > 0


def test_exhaustive_exploration_refuses_an_external_sink() -> None:
    from absnb.core.errors import GraphError
    from absnb.sim.explore import explore

    world = World(absnb.word_count(sink="two-phase-commit"), "abs", max_checkpoints=1)
    with pytest.raises(GraphError, match="writes to an external system"):
        explore(world)
