"""Hypothesis over schedules, checkpoint intervals, crash points, crashed tasks and recovery
modes: what a two-phase-commit sink commits equals the failure-free output, and every
transaction ends committed or aborted. For each external system: memory (many examples),
files and PostgreSQL (fewer: they do real I/O)."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import absnb
from absnb.operators.base import Operator
from absnb.protocols.aligned_timeout import AlignedWithTimeoutProtocol
from absnb.sim.checks import reference_output
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.sinks import MemorySink
from tests.sim.crashes import run_with_crash
from tests.sinks.harness import LINES, file_sinks, postgres_sinks, unfinished

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

RUNS = {
    "seed": st.integers(0, 10_000),
    "interval": st.integers(1, 20),
    "crash_at": st.integers(0, 120) | st.none(),
    "crash_task": st.sampled_from(["source[0]", "source[1]", "count[0]", "count[1]", "sink[0]"]),
    "mode": st.sampled_from(["full", "partial"]),
    "protocol": st.sampled_from(
        [
            "abs",
            "abs-cyclic",
            "chandy-lamport",
            "synchronous",
            "unaligned",
            AlignedWithTimeoutProtocol(alignment_timeout=3),
        ]
    ),
}


def check_run(
    make_sink: Callable[[], Operator], seed, interval, crash_at, crash_task, mode, protocol
) -> None:
    def scheduler(at: int | None) -> RandomScheduler:
        return RandomScheduler(seed=seed, crash_at=at, crash_task=crash_task, recovery=mode)

    sink = make_sink()
    job = absnb.word_count(LINES, sink=sink)
    # the crash-free run's sink (when there is a crash to place), then this run's
    sinks = iter([make_sink(), sink] if crash_at is not None else [sink])

    def world() -> World:
        return World(
            absnb.word_count(LINES, sink=next(sinks)), protocol, checkpoint_interval=interval
        )

    stepper = run_with_crash(world, scheduler, crash_at)
    world = stepper.world
    assert world.is_finished()
    assert world.uncommitted() == 0
    assert world.output() == reference_output(job)
    assert unfinished(sink) == []


@settings(max_examples=300, **SETTINGS)
@given(**RUNS)
def test_committed_output_is_the_failure_free_output(**run) -> None:
    check_run(MemorySink, **run)


@settings(max_examples=40, **SETTINGS)
@given(**RUNS)
def test_committed_files_are_the_failure_free_output(files_base, **run) -> None:
    check_run(file_sinks(files_base), **run)


@settings(max_examples=25, **SETTINGS)
@given(**RUNS)
def test_committed_rows_are_the_failure_free_output(pg_server, **run) -> None:
    check_run(postgres_sinks(pg_server.dsn), **run)


@settings(max_examples=100, **SETTINGS)
@given(seed=st.integers(0, 10_000), interval=st.integers(2, 12), steps=st.integers(1, 80))
def test_back_undoes_the_writes_to_the_store(seed, interval, steps) -> None:
    """Stepping back restores the external store too, so a replay after ``back`` is the
    same run."""
    sink = MemorySink()
    job = absnb.word_count(LINES, sink=sink)
    stepper = Stepper(World(job, "abs", checkpoint_interval=interval), RandomScheduler(seed=seed))
    stepper.run(steps)
    saved = sink.store.save()
    key, taken = stepper.world.key(), len(stepper.trace)
    stepper.run(steps)
    while len(stepper.trace) > taken:
        stepper.back()
    assert stepper.world.key() == key
    assert sink.store.save() == saved
