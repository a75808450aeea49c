"""The Spark runtime: exactly-once after real failures, checked against Spark's own answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import absnb
from absnb import datasets
from absnb.core.job import Job
from absnb.runtime import Failure
from absnb.runtime.plan import host_of
from absnb.runtime.spark import (
    ClusterTooSmallError,
    SparkRuntime,
    final_counts,
    quiet_task_failures,
    word_count_answer,
)
from absnb.runtime.storage.checkpoints import CheckpointStorage
from absnb.runtime.storage.fs import encode_name
from absnb.sim.checks import reference_output, snapshot_problems


def text(repeat: int = 1) -> list[list[str]]:
    parts = datasets.text_partitions("large")
    return [(parts[0] + parts[2]) * repeat, (parts[1] + parts[3]) * repeat]


@pytest.fixture(scope="module")
def long_answer(spark):
    return word_count_answer(spark, text(10))


@pytest.fixture(scope="module")
def runtime(spark, tmp_path_factory):
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


@pytest.fixture(scope="module")
def answer(spark):
    return word_count_answer(spark, text())


RATE = 5_000
"""Lines a second each source reads in :func:`failure_free`."""


@pytest.fixture(scope="module")
def failure_free(runtime):
    """Word count without failures, its sources paced at :data:`RATE` (the two tests below
    assert on this one run: its output, and how long it took)."""
    return runtime.run(absnb.word_count(text()), "abs", checkpoint_interval=0.05, source_rate=RATE)


def test_word_count_without_failures_equals_sparks_answer(failure_free, answer) -> None:
    run = failure_free
    assert run.restarts == 0
    assert final_counts(run.output) == answer
    # every running count from 1 to the total is emitted exactly once
    assert sorted(run.output) == sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


@pytest.mark.parametrize(
    ("protocol", "failure", "array"),
    [
        ("abs", Failure("count[1]", after_records=3_000, kind="raise"), True),
        ("abs", Failure("sink[0]", after_records=2_000, kind="kill"), False),
        ("chandy-lamport", Failure("count[0]", after_records=4_000, kind="raise"), False),
        ("synchronous", Failure("source[1]", after_records=600, kind="kill"), False),
    ],
    ids=["abs-raise-array-state", "abs-kill", "chandy-lamport-raise", "synchronous-kill"],
)
def test_exactly_once_after_a_failure(runtime, answer, protocol, failure, array) -> None:
    """With ``array``, the counters count in arrays and restore their chains of
    increments (the counts and the words added)."""
    job = absnb.word_count(text(), array=array)
    # about 0.25 s a run: checkpoints complete before the failure, recovery restores one
    run = runtime.run(
        job, protocol, checkpoint_interval=0.02, failures=[failure], source_rate=4_000
    )
    assert run.restarts == 1
    assert "injected failure" in run.errors[0] or failure.kind == "kill"
    assert final_counts(run.output) == answer
    assert sorted(run.output) == sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


def test_source_rate_limits_how_fast_sources_read(runtime, failure_free, answer) -> None:
    lines = max(len(part) for part in text())
    assert final_counts(failure_free.output) == answer
    assert failure_free.seconds >= lines / RATE
    with pytest.raises(ValueError, match="source_rate must be"):
        runtime.run(absnb.word_count(text()), "abs", source_rate=0)


def test_task_failures_are_quiet_inside_the_block_only(spark) -> None:
    root = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getRootLogger()
    before = root.getLevel().toString()
    with quiet_task_failures(spark):
        assert root.getLevel().toString() == "FATAL"
    assert root.getLevel().toString() == before


def test_a_stage_larger_than_the_cluster_is_refused_with_the_fix(runtime) -> None:
    job = absnb.word_count([["a"], ["b"], ["c"]], counters=3, sinks=3)
    with pytest.raises(ClusterTooSmallError, match=r"local\[3\]"):
        runtime.run(job, "abs")


def test_a_failure_during_a_checkpoint_restores_the_one_before(runtime, long_answer) -> None:
    job = absnb.word_count(text(10))
    failure = Failure("count[1]", during_checkpoint=2, kind="raise")
    # 10,000 lines a source, at 20,000 a second: checkpoints every 10 ms happen during it
    run = runtime.run(job, "abs", checkpoint_interval=0.01, failures=[failure], source_rate=20_000)
    assert run.restarts == 1
    assert run.restored == [0, 1]
    assert final_counts(run.output) == long_answer
    assert sorted(run.output) == sorted(
        (w, i) for w, n in long_answer.items() for i in range(1, n + 1)
    )


def test_a_corrupt_latest_checkpoint_is_skipped_for_the_one_before(
    spark, runtime, long_answer
) -> None:
    from absnb.runtime.storage.checkpoints import CheckpointStorage, CorruptCheckpointWarning

    corrupted: list[int] = []

    class CorruptingStorage(CheckpointStorage):
        """Flips a byte of the newest checkpoint the first time recovery looks for one."""

        def latest(self, job_id, fingerprint=None):
            ids = self.checkpoints(job_id)
            if ids and not corrupted:
                folder = Path(self.root) / encode_name(job_id) / f"chk-{ids[-1]}"
                victim = sorted(folder.glob("*.snap"))[0]
                data = bytearray(victim.read_bytes())
                data[-1] ^= 0xFF
                victim.write_bytes(bytes(data))
                corrupted.append(ids[-1])
            return super().latest(job_id, fingerprint)

    storage = CorruptingStorage(runtime.checkpoint_dir)
    job = absnb.word_count(text(10))
    failure = Failure("count[0]", during_checkpoint=2, kind="raise")
    with pytest.warns(CorruptCheckpointWarning, match="chk-1|checkpoint 1"):
        run = SparkRuntime(spark, storage=storage).run(
            job, "abs", checkpoint_interval=0.01, failures=[failure], source_rate=20_000
        )
    assert corrupted == [1]
    assert run.restored == [0, 0]  # checkpoint 1 is corrupt, nothing older: from the start
    assert final_counts(run.output) == long_answer


@pytest.mark.parametrize("protocol", ["abs", "chandy-lamport", "synchronous"])
def test_a_source_that_ends_first_takes_part_in_later_checkpoints(
    spark, tmp_path, protocol
) -> None:
    # source[0] ends at once; checkpoints triggered after that must still align at the
    # counters (a barrier never comes on an ended channel) and complete (source[0] still
    # acknowledges its final snapshot), or the job would wait forever.
    parts = [text()[0][:1], text(4)[1]]  # source[1] runs for several checkpoint intervals
    job = absnb.word_count(parts)
    storage = AuditingStorage(str(tmp_path), job)
    run = SparkRuntime(spark, storage=storage).run(
        job, protocol, checkpoint_interval=0.05, source_rate=8_000
    )
    assert final_counts(run.output) == word_count_answer(spark, parts)
    assert {n: p for n, p in storage.audited.items() if p} == {}
    source0 = job.graph.task("source[0]")
    ended = [n for n, offsets in storage.offsets.items() if offsets[source0] == 1]
    assert ended, f"no checkpoint completed after source[0] had ended: {storage.offsets}"


class AuditingStorage(CheckpointStorage):
    """Reads every checkpoint back from storage as it completes, and checks it."""

    def __init__(self, url: str, job: Job) -> None:
        super().__init__(url)
        self.job = job
        self.audited: dict[int, list[str]] = {}
        self.offsets: dict[int, dict[Any, int]] = {}

    def complete(self, job_id, checkpoint_id, *args, **kwargs):  # type: ignore[no-untyped-def]
        done = super().complete(job_id, checkpoint_id, *args, **kwargs)
        snapshot = self.latest(job_id, self.job.graph.fingerprint)
        assert snapshot is not None
        self.audited[checkpoint_id] = (
            snapshot_problems(self.job, snapshot)
            if snapshot.checkpoint_id == checkpoint_id
            else [f"read back checkpoint {snapshot.checkpoint_id}, not {checkpoint_id}"]
        )
        self.offsets[checkpoint_id] = {t: s.offset for t, s in snapshot.tasks.items()}
        return done


def bank() -> Job:
    # A and B share a host, D has the other: transfers cross hosts in both directions.
    job = absnb.bank_transfer({"A": 10_000, "B": 5_000, "D": 7_000}, transfers=1_500, seed=4)
    assert {str(t): host_of(t, 2) for t in job.graph.tasks} == {"A": 1, "B": 1, "D": 0}
    return job


@pytest.mark.parametrize(
    ("protocol", "failures"),
    [
        ("chandy-lamport", ()),
        ("abs-cyclic", ()),
        ("abs-cyclic", (Failure("D", after_records=300, kind="raise"),)),
    ],
    ids=["chandy-lamport", "abs-cyclic", "abs-cyclic-raise"],
)
def test_the_bank_terminates_and_every_checkpoint_conserves_money(
    spark, tmp_path, protocol, failures
) -> None:
    job = bank()
    storage = AuditingStorage(str(tmp_path), job)
    run = SparkRuntime(spark, storage=storage, hosts=2).run(
        job,
        protocol,
        checkpoint_interval=0.01,
        failures=failures,
        # about 500 transfers an account: a second at least, so checkpoints complete during
        # the run however loaded the machine is (unpaced, a loaded run once ended first)
        source_rate=500,
    )
    assert run.restarts == len(failures)
    assert [e[1] for e in run.coordinator_events].count("terminated") == 1
    assert sorted(storage.audited) == run.checkpoints != []
    assert {n: p for n, p in storage.audited.items() if p} == {}
    assert sum(run.output.values()) == job.total
    assert run.output == reference_output(job)


@pytest.mark.parametrize(
    "failure",
    [
        None,
        Failure("head[1]", during_checkpoint=2, kind="raise"),
        Failure("step[0]", after_records=1_000, kind="kill"),
    ],
    ids=["no-failure", "raise", "kill"],
)
def test_the_cyclic_job_terminates_with_the_failure_free_output(spark, tmp_path, failure) -> None:
    job = absnb.cyclic(list(range(1, 300)), parallelism=2)
    runtime = SparkRuntime(spark, checkpoint_dir=str(tmp_path))
    failures = [failure] if failure else []
    run = runtime.run(job, "abs-cyclic", checkpoint_interval=0.01, failures=failures)
    assert run.restarts == len(failures)
    if failure is not None and failure.during_checkpoint:
        assert run.restored == [0, 1]  # the backup log of checkpoint 1 is replayed
    assert run.output == reference_output(job)


def test_exactly_once_after_a_failure_on_the_columnar_path(runtime, answer) -> None:
    """By default (``columnar=True``) batches travel as Arrow columns, a counter fails and
    restores: the output is Spark's answer exactly once, as on the per-record path, which
    the run with ``columnar=False`` takes without a columnar batch."""
    job = absnb.word_count(text())
    failure = Failure("count[0]", after_records=3_000, kind="raise")
    run = runtime.run(job, "abs", checkpoint_interval=0.02, failures=[failure], source_rate=4_000)
    assert run.restarts == 1
    assert sum(h.metrics.get("columnar_batches", 0) for h in run.hosts) > 0
    assert sorted(run.output) == sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))
    plain = runtime.run(job, "abs", checkpoint_interval=0.05, columnar=False)
    assert sum(h.metrics.get("columnar_batches", 0) for h in plain.hosts) == 0
    assert sorted(plain.output) == sorted(run.output)
