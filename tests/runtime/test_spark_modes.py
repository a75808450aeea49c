"""The production modes on Spark: unaligned and aligned-with-timeout stay exactly-once after a
real failure, at-least-once loses nothing, and a checkpoint timeout aborts checkpoints."""

from __future__ import annotations

import pytest

import absnb
from absnb import datasets
from absnb.runtime.host import Failure
from absnb.runtime.spark import SparkRuntime, final_counts, word_count_answer


def text() -> list[list[str]]:
    parts = datasets.text_partitions("large")
    return [parts[0] + parts[2], parts[1] + parts[3]]


@pytest.fixture(scope="module")
def runtime(spark, tmp_path_factory):
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


@pytest.fixture(scope="module")
def answer(spark):
    return word_count_answer(spark, text())


@pytest.mark.parametrize(
    ("protocol", "timeout"),
    [("unaligned", None), ("abs", 0.0005)],
    ids=["unaligned", "abs-timeout"],
)
def test_exactly_once_after_a_failure(runtime, answer, protocol, timeout) -> None:
    failure = Failure("count[1]", after_records=3_000, kind="raise")
    run = runtime.run(
        absnb.word_count(text()),
        protocol,
        checkpoint_interval=0.02,
        failures=[failure],
        source_rate=4_000,
        alignment_timeout=timeout,
    )
    assert run.restarts == 1
    assert final_counts(run.output) == answer
    assert sorted(run.output) == sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


def test_at_least_once_loses_nothing_after_a_failure(runtime, answer) -> None:
    failure = Failure("count[0]", after_records=3_000, kind="raise")
    run = runtime.run(
        absnb.word_count(text()),
        "at-least-once",
        checkpoint_interval=0.02,
        failures=[failure],
        source_rate=4_000,
    )
    assert run.restarts == 1
    counts = final_counts(run.output)
    assert set(counts) == set(answer)
    for word, n in answer.items():
        assert n <= counts[word] <= 2 * n


def test_a_checkpoint_timeout_aborts_checkpoints_that_take_longer(runtime, answer) -> None:
    run = runtime.run(
        absnb.word_count(text()),
        "abs",
        checkpoint_interval=0.02,
        checkpoint_timeout=0.0,
        source_rate=4_000,
    )
    assert final_counts(run.output) == answer
    kinds = [kind for _, kind, _ in run.events]
    assert "aborted" in kinds
    reasons = {info.get("reason") for _, kind, info in run.events if kind == "aborted"}
    assert "timed out" in reasons
