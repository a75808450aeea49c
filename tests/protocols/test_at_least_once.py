"""At-least-once barrier tracking: no record is lost, duplicates are bounded.

Flink's ``CheckpointBarrierTracker`` never blocks, so a checkpoint's task states may
reflect records that arrived after the barrier on one input while another input's barrier
was still on its way; a recovery replays those records again. Without a failure the output
is exactly the failure-free output; with one, every word is counted at least as often as in
the failure-free run and at most once more per recovery for each of its occurrences.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import absnb

WORDS = ("a", "b", "c")
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def final_counts(output: list[tuple[str, int]]) -> Counter[str]:
    """The highest count each word reached at the sinks (computed here from the output)."""
    counts: Counter[str] = Counter()
    for word, n in output:
        counts[word] = max(counts[word], n)
    return counts


@st.composite
def runs(draw):
    line = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
    lines = draw(st.lists(st.lists(line, min_size=1, max_size=5), min_size=1, max_size=3))
    counters = draw(st.integers(1, 3))
    job = absnb.word_count(lines, counters=counters, sinks=counters)
    return (
        job,
        draw(st.integers(0, 2**32)),
        draw(st.sampled_from([1, 2, 3, 5])),
        draw(st.floats(0, 1, exclude_max=True)),
        draw(st.sampled_from(["full", "partial"])),
    )


def occurrences(job: absnb.Job) -> Counter[str]:
    """How often each word occurs in the job's input (counted here, not by absnb)."""
    return Counter(w for log in job.inputs.values() for line in log for w in line.split())


@settings(max_examples=300, **SETTINGS)
@given(runs())
def test_no_failure_no_duplicates(run):
    job, seed, interval, _, _ = run
    world = absnb.World(job, "at-least-once", checkpoint_interval=interval)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=seed), history=False)
    stepper.run()
    assert stepper.world.is_finished()
    assert not stepper.world.blocked
    assert final_counts(stepper.world.output()) == occurrences(job)


@settings(max_examples=400, **SETTINGS)
@given(runs())
def test_after_a_crash_nothing_is_lost_and_duplicates_are_bounded(run):
    job, seed, interval, where, mode = run
    world = absnb.World(job, "at-least-once", checkpoint_interval=interval)
    steps = len(absnb.Stepper(world, absnb.RandomScheduler(seed=seed), history=False).run())
    scheduler = absnb.RandomScheduler(seed=seed, crash_at=int(where * steps), recovery=mode)
    stepper = absnb.Stepper(world, scheduler, history=False)
    stepper.run()
    assert stepper.world.is_finished()
    recoveries = sum(1 for e in stepper.trace if e.restored is not None)
    assert recoveries == 1
    got, want = final_counts(stepper.world.output()), occurrences(job)
    for word, n in want.items():
        assert n <= got[word] <= n * (1 + recoveries), (word, got, want)
    assert set(got) == set(want)


def test_duplicates_happen():
    """The bound is not vacuous: some schedule counts a word twice after a recovery."""
    job = absnb.word_count([["a b a", "b a"], ["a a b"]], counters=2, sinks=2)
    found = 0
    for seed in range(200):
        world = absnb.World(job, "at-least-once", checkpoint_interval=2)
        steps = len(absnb.Stepper(world, absnb.RandomScheduler(seed=seed), history=False).run())
        scheduler = absnb.RandomScheduler(seed=seed, crash_at=steps * 3 // 4)
        stepper = absnb.Stepper(world, scheduler, history=False)
        stepper.run()
        if final_counts(stepper.world.output()) != occurrences(job):
            found += 1
    assert found > 0
