"""Shared by the sink tests: run a word count into a sink, crash it at a chosen phase of
two-phase commit, recover, finish, and compare with the failure-free output."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import absnb
from absnb.operators.base import Operator
from absnb.sim.actions import Crash, Recover
from absnb.sim.checks import reference_output
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.sinks import FileSink, MemorySink
from absnb.sinks.file_store import FileTransactionStore

LINES = (
    ("to be or not", "to be that is", "the question whether"),
    ("tis nobler in", "the mind to suffer", "the slings and arrows"),
)
PHASES = ("open", "pre-committed", "completed", "committing", "committed")
"""Where a crash falls in two-phase commit:

- open: a sink has written records into an open transaction, no checkpoint is running;
- pre-committed: a sink pre-committed for checkpoint n, which has not completed;
- completed: checkpoint n completed, no sink has heard it yet (nothing committed);
- committing: one sink committed for n, another has not yet;
- committed: every sink committed n (new records may be open), input remains.
"""


def sink_states(world: World) -> dict[Any, Any]:
    return {t: world.tasks[t].state for t in world.graph.tasks_of("sink")}


def phase_of(world: World) -> str | None:
    """Which of :data:`PHASES` the world is in (None: none of them, or several sinks in
    different ones in a way no phase names)."""
    if world.failed is not None or not world.input_remaining():
        return None
    sinks = sink_states(world)
    coord = world.coordinator
    waiting = [t for t in sinks if t in world.notices]
    owes = [t for t, s in sinks.items() if s.pending]
    if waiting and owes:
        notified = [t for t in sinks if t not in world.notices]
        if not notified and len(owes) == len(sinks):
            return "completed"
        if any(t not in owes for t in notified):
            return "committing"
        return None
    if coord.completed and not owes and not waiting:
        return "committed"
    if coord.pending:
        n = max(coord.pending)
        if any(any(m == n for m, _ in s.pending) for s in sinks.values()):
            return "pre-committed"
        return None
    if not coord.completed and any(s.current is not None for s in sinks.values()):
        return "open"
    return None


def crash_at_phase(
    make_sink: Callable[[], Operator],
    phase: str,
    crash: str,
    *,
    seed: int,
    interval: int = 6,
    mode: str = "full",
) -> tuple[Stepper, Any] | None:
    """Run word count into ``make_sink()`` until ``phase``, crash task ``crash``, recover and
    finish. Returns the stepper and the failure-free output, or None when this seed never
    reaches the phase."""
    job = absnb.word_count(LINES, sink=make_sink())
    stepper = Stepper(
        World(job, "abs", checkpoint_interval=interval), RandomScheduler(seed=seed), history=False
    )
    stepper.run(until=lambda w: phase_of(w) == phase or w.is_finished())
    if phase_of(stepper.world) != phase:
        stepper.run()  # the final checkpoint commits: no transaction stays open
        return None
    stepper.step(Crash(job.graph.task(crash)))
    stepper.step(Recover(mode))  # type: ignore[arg-type]
    stepper.run()
    return stepper, reference_output(job)


def first_seed_reaching(
    make_sink: Callable[[], Operator], phase: str, crash: str, seeds: range = range(60)
) -> tuple[Stepper, Any]:
    """The run for the first seed that reaches ``phase`` (the phase must be reachable)."""
    for seed in seeds:
        done = crash_at_phase(make_sink, phase, crash, seed=seed)
        if done is not None:
            return done
    raise AssertionError(f"no seed in {seeds} reaches phase {phase!r}")


def unfinished(sink: Operator) -> list[str]:
    """The sink's transactions still open or pre-committed in its external system."""
    store = getattr(sink, "store", None)
    table = store.table() if store is not None else sink.transactions()  # type: ignore[attr-defined]
    return [t.name for t in table if t.status in ("open", "pre-committed")]


def the_sink(world: World) -> Any:
    """The sink operator of a word count world (every sink task shares it)."""
    return world.graph.function(world.graph.task("sink[0]"))


_tables = itertools.count()


def file_sinks(base: Path) -> Callable[[], FileSink]:
    """A factory of file sinks, each into a fresh directory under ``base``."""
    return lambda: FileSink(tempfile.mkdtemp(dir=base, prefix="out-"))


def file_stores(base: Path) -> Callable[[], MemorySink]:
    """A factory of memory sinks on a file store (the lab's part d), each into a fresh
    directory under ``base``."""
    return lambda: MemorySink(FileTransactionStore(tempfile.mkdtemp(dir=base, prefix="store-")))


def postgres_sinks(dsn: str) -> Callable[[], Operator]:
    """A factory of PostgreSQL sinks, each into fresh tables under its own job name."""
    from absnb.sinks.postgres import PostgresSink

    def make() -> PostgresSink:
        n = next(_tables)
        return PostgresSink(dsn, f"words_{n}", job=f"test{n}")

    return make
