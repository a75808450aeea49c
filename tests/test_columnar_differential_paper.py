"""The columnar path and the per-record paths of the paper's Figure 5 job agree (issue 37):
on generated records, random key and group counts, interleavings, checkpoints and crash
points, the job run one record at a time (as the simulator moves records), a batch of Python
values at a time, and as Arrow columns (generated records, parsed, summed per key,
counted per group and kept by the sink a batch at a time) gives the same outputs, the same
snapshots per checkpoint and task and the same recovered outputs. Driven as the word-count
differential test drives its job (:mod:`tests.differential.pipeline`)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from absnb.jobs.paper_topology import LatestCountSink, expected_output, paper_topology
from tests.differential.pipeline import MODES, run

steps = st.lists(
    st.one_of(
        st.tuples(st.just("emit"), st.integers(0, 2), st.integers(1, 40)),
        st.tuples(st.just("trigger")),
        st.tuples(st.just("deliver"), st.integers(0, 30)),
        st.tuples(st.just("deliver"), st.integers(0, 30)),
        st.tuples(st.just("crash")),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parallelism=st.integers(1, 3),
    records=st.integers(0, 300),
    keys=st.sampled_from((1, 7, 64, 5_000)),
    array=st.booleans(),
    seed=st.integers(0, 5),
    protocol=st.sampled_from(("abs", "chandy-lamport")),
    script=steps,
)
def test_columnar_and_per_record_paths_agree(
    parallelism: int,
    records: int,
    keys: int,
    array: bool,
    seed: int,
    protocol: str,
    script: list[tuple[Any, ...]],
) -> None:
    job = paper_topology(parallelism, records, keys, seed=seed, array=array)
    runs = {mode: run(job, protocol, mode, script) for mode in MODES}
    record = runs["record"]
    for mode in ("batch", "columnar"):
        assert runs[mode].snapshots == record.snapshots, mode
        assert runs[mode].complete.keys() == record.complete.keys(), mode
        assert runs[mode].states() == record.states(), mode
    if records:
        # every operator after the sources takes columns, the sink's rebalance included
        into = runs["columnar"].columnar_into
        assert set(into) == {"parse", "sum_per_key", "to_group", "count_per_group", "sink"}
    sinks = [task.state for t, task in record.tasks.items() if t.operator == "sink"]
    assert LatestCountSink().output(sinks) == expected_output(job)  # exactly once
