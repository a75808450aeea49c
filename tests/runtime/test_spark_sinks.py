"""Two-phase-commit sinks on the Spark runtime: word count into files and into PostgreSQL,
with injected failures (raise, SIGKILL) at the phases of two-phase commit: with records in
an open transaction, right after a sink's pre-commit, after a checkpoint completed but
before a sink's commit, after a commit; and before any checkpoint completed. The committed
output, read back from the external system, must be exactly the failure-free output: its
final counts equal Spark's own batch answer and every running count appears once (no
duplicates, nothing lost); no transaction is left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import absnb
from absnb import datasets
from absnb.runtime import Failure
from absnb.runtime.spark import SparkRuntime, final_counts, word_count_answer
from absnb.sinks import FileSink, SinkConfigurationError
from tests.sinks.harness import postgres_sinks, unfinished
from tests.sinks.pg import pg_server  # noqa: F401 (a fixture)


def text(repeat: int = 1) -> list[list[str]]:
    parts = datasets.text_partitions("large")
    return [(parts[0] + parts[2]) * repeat, (parts[1] + parts[3]) * repeat]


@pytest.fixture(scope="module")
def answer(spark) -> dict[str, int]:
    return word_count_answer(spark, text())


@pytest.fixture(scope="module")
def long_answer(spark) -> dict[str, int]:
    return word_count_answer(spark, text(LONG))


@pytest.fixture(scope="module")
def runtime(spark, tmp_path_factory) -> SparkRuntime:
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


def exactly(answer: dict[str, int]) -> list[tuple[str, int]]:
    """Every running count from 1 to the total, once: word count's failure-free output."""
    return sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


LONG = 2
"""Input repeats for the failures during or after a checkpoint (the short input ends before
the second checkpoint): 2,000 lines a source, read at :data:`RATE`."""
RATE = 1_000
"""Lines per second each source reads in the runs of the :data:`LONG` input: two seconds
of input, so that checkpoints 1 and 2 complete well before it ends, however loaded the
machine, without the ten times larger unpaced input (a minute into PostgreSQL) that did."""

FAILURES = {
    "none": None,
    "sink-raise": Failure("sink[0]", after_records=2_000, kind="raise"),
    "sink-kill": Failure("sink[1]", after_records=3_000, kind="kill"),
    "count-raise": Failure("count[1]", after_records=2_500, kind="raise"),
    # right after the sink pre-committed for checkpoint 2, before it completes
    "sink-during-checkpoint": Failure("sink[0]", during_checkpoint=2, kind="raise"),
    "count-during-checkpoint": Failure("count[0]", during_checkpoint=2, kind="kill"),
    # checkpoint 1 is complete, sink[0] hears so and fails before committing (sink[1] may
    # have committed already: the commit is half done across the sinks)
    "sink-before-commit": Failure("sink[0]", notified=1, kind="raise"),
    # sink[1] has committed checkpoint 1 and dies
    "sink-after-commit": Failure("sink[1]", notified=1, after_commit=True, kind="kill"),
}
PG_PHASES = ("none", "sink-kill", "sink-during-checkpoint", "sink-before-commit")
PG_FAILURES = {k: FAILURES[k] for k in (*PG_PHASES, "sink-after-commit")}
FILE_FAILURES = {k: f for k, f in FAILURES.items() if f is not None}
"""The failure-free run into files is :func:`test_the_committed_files_are_readable_by_spark`."""


def the_answer(
    request: pytest.FixtureRequest, failure: Failure | None
) -> tuple[int, float | None, dict]:
    """How often the input repeats for ``failure``, how fast the sources read it (None:
    unpaced), and Spark's answer for that input."""
    if failure is not None and (failure.during_checkpoint or failure.notified):
        return LONG, RATE, request.getfixturevalue("long_answer")
    return 1, None, request.getfixturevalue("answer")


def run_exactly_once(request, runtime, sink, failure) -> None:
    """Word count into ``sink`` with ``failure`` injected: the committed output is every
    running count once, Spark's answer, and no transaction is left unfinished."""
    repeat, rate, answer = the_answer(request, failure)
    run = runtime.run(
        absnb.word_count(text(repeat), sink=sink),
        "abs",
        checkpoint_interval=0.02,
        failures=[failure] if failure else [],
        source_rate=rate,
    )
    assert run.restarts == (failure is not None)
    if failure is not None and failure.kind == "raise":
        assert "injected failure" in run.errors[0]
    committed = sorted(sink.committed())
    assert committed == run.output
    assert final_counts(committed) == answer
    assert committed == exactly(answer)
    assert unfinished(sink) == []


@pytest.mark.parametrize("failure", FILE_FAILURES.values(), ids=FILE_FAILURES.keys())
def test_word_count_into_files_is_exactly_once(request, runtime, tmp_path, failure) -> None:
    run_exactly_once(request, runtime, FileSink(tmp_path / "out"), failure)


def test_a_restart_with_no_checkpoint_cleans_the_failed_attempts_files(
    runtime, answer, tmp_path
) -> None:
    """No checkpoint completes before the failure (the interval is long): the restarted
    attempt starts from nothing and must still delete the first attempt's files."""
    sink = FileSink(tmp_path / "out")
    failure = Failure("sink[0]", after_records=1_500, kind="kill")
    run = runtime.run(
        absnb.word_count(text(), sink=sink), "abs", checkpoint_interval=None, failures=[failure]
    )
    assert run.restored == [0, 0]
    assert sorted(sink.committed()) == exactly(answer)
    assert os.listdir(sink.staging) == []


@pytest.mark.parametrize("failure", PG_FAILURES.values(), ids=PG_FAILURES.keys())
def test_word_count_into_postgres_is_exactly_once(
    request,
    runtime,
    pg_server,  # noqa: F811
    failure,
) -> None:
    # no prepared transaction left (open ones belong to other processes)
    run_exactly_once(request, runtime, postgres_sinks(pg_server.dsn)(), failure)


def test_the_committed_files_are_readable_by_spark(request, spark, runtime, answer, tmp_path):
    """The failure-free run into files (:data:`FILE_FAILURES` are the others): exactly once,
    and Spark reads what was committed."""
    sink = FileSink(tmp_path / "out", columns=("word", "count"))
    run_exactly_once(request, runtime, sink, None)
    frame = spark.read.json(str(tmp_path / "out"))  # _staging is hidden from Spark
    assert sorted(frame.columns) == ["count", "word"]
    rows = sorted((r["word"], r["count"]) for r in frame.collect())
    assert rows == exactly(answer)


def test_a_sink_that_cannot_write_fails_before_the_stage_starts(runtime, tmp_path) -> None:
    target = tmp_path / "a-file"
    target.write_text("")
    job = absnb.word_count(text(), sink=FileSink(Path(target)))
    with pytest.raises(SinkConfigurationError, match="not a directory"):
        runtime.run(job, "abs")
