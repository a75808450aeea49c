"""The Spark runtime: exactly-once after real failures, checked against Spark's own answer."""

from __future__ import annotations

from pathlib import Path

import pytest

import absnb
from absnb import datasets
from absnb.runtime.host import Failure
from absnb.runtime.spark import (
    ClusterTooSmallError,
    SparkRuntime,
    final_counts,
    word_count_answer,
)
from absnb.runtime.storage import encode_name


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


def test_word_count_without_failures_equals_sparks_answer(runtime, answer) -> None:
    job = absnb.word_count(text())
    run = runtime.run(job, "abs", checkpoint_interval=0.05)
    assert run.restarts == 0
    assert final_counts(run.output) == answer
    # every running count from 1 to the total is emitted exactly once
    assert sorted(run.output) == sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


@pytest.mark.parametrize(
    ("protocol", "failure"),
    [
        ("abs", Failure("count[1]", after_records=3_000, kind="raise")),
        ("abs", Failure("sink[0]", after_records=2_000, kind="kill")),
        ("chandy-lamport", Failure("count[0]", after_records=4_000, kind="raise")),
        ("synchronous", Failure("source[1]", after_records=600, kind="kill")),
    ],
    ids=["abs-raise", "abs-kill", "chandy-lamport-raise", "synchronous-kill"],
)
def test_exactly_once_after_a_failure(runtime, answer, protocol, failure) -> None:
    job = absnb.word_count(text())
    run = runtime.run(job, protocol, checkpoint_interval=0.02, failures=[failure])
    assert run.restarts == 1
    assert "injected failure" in run.errors[0] or failure.kind == "kill"
    assert final_counts(run.output) == answer
    assert sorted(run.output) == sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


def test_a_stage_larger_than_the_cluster_is_refused_with_the_fix(runtime) -> None:
    job = absnb.word_count([["a"], ["b"], ["c"]], counters=3, sinks=3)
    with pytest.raises(ClusterTooSmallError, match=r"local\[3\]"):
        runtime.run(job, "abs")


def test_a_failure_during_a_checkpoint_restores_the_one_before(runtime, long_answer) -> None:
    job = absnb.word_count(text(10))
    failure = Failure("count[1]", during_checkpoint=2, kind="raise")
    run = runtime.run(job, "abs", checkpoint_interval=0.01, failures=[failure])
    assert run.restarts == 1
    assert run.restored == [0, 1]
    assert final_counts(run.output) == long_answer
    assert sorted(run.output) == sorted(
        (w, i) for w, n in long_answer.items() for i in range(1, n + 1)
    )


def test_a_corrupt_latest_checkpoint_is_skipped_for_the_one_before(
    spark, runtime, long_answer
) -> None:
    from absnb.runtime.storage import CheckpointStorage, CorruptCheckpointWarning

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
            job, "abs", checkpoint_interval=0.01, failures=[failure]
        )
    assert corrupted == [1]
    assert run.restored == [0, 0]  # checkpoint 1 is corrupt, nothing older: from the start
    assert final_counts(run.output) == long_answer
