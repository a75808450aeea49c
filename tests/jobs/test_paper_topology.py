"""The paper's Figure 5 job: its shape, its generator, and exactly-once in the simulator."""

from __future__ import annotations

import pickle
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import absnb
from absnb.core.graph import subtask
from absnb.jobs import build_job
from absnb.jobs.paper_topology import (
    KEYS_PER_GROUP,
    OPERATORS,
    SHUFFLES,
    GeneratedLog,
    Parse,
    ToGroup,
    expected_output,
    generated_record,
    paper_topology,
)
from tests.sim.crashes import run_with_crash


def test_six_operators_each_as_wide_as_the_job_and_three_full_shuffles() -> None:
    job = paper_topology(parallelism=3)
    graph = job.graph
    assert tuple(graph.operators) == OPERATORS
    assert all(op.parallelism == 3 for op in graph.operators.values())
    assert len(graph.tasks) == 6 * 3
    for src, dst in SHUFFLES:  # all-to-all: every task of src sends to every task of dst
        pairs = {(c.src, c.dst) for c in graph.channels if c.src.operator == src}
        assert pairs == {(a, b) for a in graph.tasks_of(src) for b in graph.tasks_of(dst)}
    forward = [c for c in graph.channels if (c.src.operator, c.dst.operator) not in set(SHUFFLES)]
    assert all(c.src.subtask == c.dst.subtask for c in forward)
    assert len(graph.channels) == 3 * 9 + 2 * 3


@pytest.mark.parametrize("parallelism", [2, 3, 4])
def test_both_hash_shuffles_carry_records_between_every_pair_of_subtasks(parallelism) -> None:
    """The records themselves cross each hash edge from every task to every task (the
    third shuffle is round robin): a group's subtask does not follow from its keys'."""
    p = parallelism
    job = paper_topology(parallelism=p, records=20_000, keys=4096)
    parse, to_group = Parse(4096), ToGroup(job.params["groups"])
    by_key, by_group = set(), set()
    for source, log in job.inputs.items():
        for record in log:
            key, amount = parse(record)
            owner = subtask(key, p)  # the sum_per_key (and to_group) task of the key
            by_key.add((source.subtask, owner))
            by_group.add((owner, subtask(to_group((key, amount)), p)))
    everyone = {(a, b) for a in range(p) for b in range(p)}
    assert by_key == everyone
    assert by_group == everyone


def test_the_generator_is_seeded_replayable_and_sliced_like_one_record_at_a_time() -> None:
    log = GeneratedLog(seed=7, source=1, length=10_000)
    assert log[123:140] == [generated_record(7, 1, i) for i in range(123, 140)]
    assert list(log)[9_990:] == log[9_990:10_000]
    assert log[-1] == generated_record(7, 1, 9_999)
    assert pickle.loads(pickle.dumps(log))[:50] == log[:50]
    assert log[:50] != GeneratedLog(seed=8, source=1, length=50)[:]
    assert log[:50] != GeneratedLog(seed=7, source=0, length=50)[:]
    with pytest.raises(IndexError, match="offset 10000"):
        log[10_000]


def test_records_are_dealt_evenly_and_cover_the_key_space() -> None:
    job = paper_topology(parallelism=3, records=100_000, keys=2**20)
    lengths = sorted(len(v) for v in job.inputs.values())
    assert lengths == [33_333, 33_333, 33_334]
    keys = {r % 2**20 for log in job.inputs.values() for r in log}
    assert len(keys) > 0.9 * 100_000  # almost every record a new key at this key space


@pytest.mark.parametrize(
    ("arg", "value", "message"),
    [
        ("parallelism", 0, "parallelism must be a whole number >= 1, not 0"),
        ("keys", 0, "keys must be"),
        ("records", -1, "records must be a whole number >= 0, not -1"),
        ("groups", 0, "groups must be"),
    ],
)
def test_bad_arguments_name_the_value(arg, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        paper_topology(**{arg: value})


def test_it_is_a_builder_the_trace_and_cli_can_rebuild() -> None:
    job = build_job("paper_topology", parallelism=2, records=50, keys=8)
    assert job.params == {"parallelism": 2, "records": 50, "keys": 8, "groups": 1, "seed": 1}
    assert job.graph.fingerprint == paper_topology(2, 50, 8).graph.fingerprint


def test_the_simulator_runs_it_to_the_answer_computed_from_the_input() -> None:
    job = paper_topology(parallelism=2, records=300, keys=40, groups=5)
    world = absnb.World(job, "abs", checkpoint_interval=25)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=1), history=False)
    stepper.run()
    assert stepper.world.is_finished()
    assert stepper.world.snapshots  # checkpoints completed during the run
    answer = expected_output(job)
    assert sum(n for _, n in answer) == 300
    assert stepper.world.output() == answer
    # an independent count of the same records
    records = [r for log in job.inputs.values() for r in log]
    assert Counter((r % 40) // KEYS_PER_GROUP % 5 for r in records) == dict(answer)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    protocol=st.sampled_from(["abs", "synchronous", "chandy-lamport"]),
    seed=st.integers(0, 10_000),
    crash_at=st.integers(1, 900),
    recovery=st.sampled_from(["full", "partial"]),
)
def test_exactly_once_after_a_crash_in_the_simulator(protocol, seed, crash_at, recovery) -> None:
    job = paper_topology(parallelism=2, records=120, keys=32, groups=4, seed=seed)
    stepper = run_with_crash(
        lambda: absnb.World(job, protocol, checkpoint_interval=15),
        lambda at: absnb.RandomScheduler(seed=seed, crash_at=at, recovery=recovery),
        crash_at,
    )
    assert stepper.world.is_finished()
    assert stepper.world.output() == expected_output(job)
    assert absnb.exactly_once(stepper.world)


def test_a_crash_after_a_checkpoint_restores_it_and_stays_exactly_once() -> None:
    job = paper_topology(parallelism=2, records=200, keys=32, groups=4)
    world = absnb.World(job, "abs", checkpoint_interval=10)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=2), history=False)
    while not stepper.world.snapshots:
        stepper.step()
    stepper.step(absnb.Crash(job.graph.task("sum_per_key[0]")))
    event = stepper.step(absnb.Recover("full"))
    assert event.restored[0] >= 1  # from a completed checkpoint, not from the beginning
    stepper.run()
    assert stepper.world.output() == expected_output(job)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), crash_at=st.integers(1, 900))
def test_an_array_state_gives_the_same_run_in_the_simulator(seed, crash_at) -> None:
    """``sum_per_key`` in an array (whole snapshots, as the simulator keeps them): the same
    output, exactly once, after a crash."""
    job = paper_topology(parallelism=2, records=120, keys=32, groups=4, seed=seed, array=True)
    stepper = run_with_crash(
        lambda: absnb.World(job, "abs", checkpoint_interval=15),
        lambda at: absnb.RandomScheduler(seed=seed, crash_at=at),
        crash_at,
    )
    assert stepper.world.output() == expected_output(job)
    assert absnb.exactly_once(stepper.world)
