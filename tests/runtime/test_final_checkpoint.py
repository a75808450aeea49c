"""The job's final checkpoint on Spark (FLIP-147), as the coordinator decides it in the
simulator: hosts whose tasks have finished wait for it, the coordinator server triggers it
once every host's tasks ended with output left uncommitted, its completion commits the
two-phase-commit sinks' last transactions (pre-committed at the end of input), and only
then do the hosts finish; the driver commits nothing. A failure during it restarts the job
from the last completed checkpoint, and the final checkpoint is taken again: the output
is exactly once."""

from __future__ import annotations

from typing import Any

import pytest

import absnb
from absnb import datasets
from absnb.protocols.two_phase_commit import END_OF_INPUT
from absnb.runtime import Failure
from absnb.runtime.spark import SparkRun, SparkRuntime, word_count_answer
from absnb.sinks import FileSink
from tests.sinks.harness import unfinished


def text() -> list[list[str]]:
    return datasets.text_partitions("small")


@pytest.fixture(scope="module")
def answer(spark: Any) -> dict[str, int]:
    return word_count_answer(spark, text())


@pytest.fixture(scope="module")
def runtime(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> SparkRuntime:
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


def exactly(answer: dict[str, int]) -> list[tuple[str, int]]:
    """Every running count from 1 to the total, once: word count's failure-free output."""
    return sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


def finals(run: SparkRun) -> list[tuple[int, int]]:
    """``(attempt, checkpoint id)`` of each final checkpoint the coordinator triggered."""
    return [
        (d["attempt"], d["checkpoint_id"])
        for _, kind, d in run.coordinator_events
        if kind == "triggered" and d.get("final")
    ]


def completed(run: SparkRun) -> list[int]:
    return [d["checkpoint_id"] for _, kind, d in run.coordinator_events if kind == "completed"]


def assert_committed_by(run: SparkRun, n: int, sink: FileSink) -> None:
    """Checkpoint ``n`` committed every sink's END_OF_INPUT transaction, and no commit came
    after it."""
    commits = run.events[run.events["kind"] == "commit"]
    last = commits[commits["attempt"] == commits["attempt"].max()]
    assert set(last["checkpoint"]) == {n}
    assert set(last["task"]) == {"sink[0]", "sink[1]"}
    # the transactions end_input pre-committed for END_OF_INPUT, kept pending for n
    assert all(f"part-{END_OF_INPUT}." in d for d in last["detail"]), list(last["detail"])
    assert unfinished(sink) == []


def test_the_final_checkpoint_commits_the_output(runtime, answer, tmp_path) -> None:
    sink = FileSink(tmp_path / "out")
    run = runtime.run(absnb.word_count(text(), sink=sink), "abs", checkpoint_interval=None)
    assert finals(run) == [(0, 1)]
    assert run.final_checkpoints == [1]
    assert completed(run) == [1]
    assert run.checkpoints == [1]
    kinds = [kind for _, kind, _ in run.coordinator_events]
    assert kinds.index("completed") < kinds.index("finishing")  # hosts waited for it
    assert_committed_by(run, 1, sink)
    assert sorted(sink.committed()) == exactly(answer) == run.output


def test_a_job_without_uncommitted_output_takes_no_final_checkpoint(runtime, answer) -> None:
    run = runtime.run(absnb.word_count(text()), "abs", checkpoint_interval=None)
    assert finals(run) == []
    assert run.checkpoints == []
    assert "finishing" in [kind for _, kind, _ in run.coordinator_events]


FAILURES = {
    "sink-raise": Failure("sink[0]", during_checkpoint=1, kind="raise"),
    "count-kill": Failure("count[1]", during_checkpoint=1, kind="kill"),
}


@pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
def test_a_failure_during_the_final_checkpoint_is_exactly_once(
    runtime, answer, tmp_path, failure
) -> None:
    sink = FileSink(tmp_path / "out")
    run = runtime.run(
        absnb.word_count(text(), sink=sink),
        "abs",
        checkpoint_interval=None,
        failures=[failure],
    )
    assert run.restarts == 1
    assert run.restored == [0, 0]
    assert finals(run) == [(0, 1), (1, 2)]  # triggered again in the new attempt
    assert completed(run) == [2]
    assert_committed_by(run, 2, sink)
    assert sorted(sink.committed()) == exactly(answer) == run.output


def test_a_failure_after_the_final_checkpoint_completed_restores_it(
    runtime, answer, tmp_path
) -> None:
    """Notified of the final checkpoint, sink[0] fails before its commit: the next attempt
    restores that checkpoint (its tasks finished), commits on restore what it names, and
    has nothing left to commit: no final checkpoint is due."""
    sink = FileSink(tmp_path / "out")
    failure = Failure("sink[0]", notified=1, kind="raise")
    run = runtime.run(
        absnb.word_count(text(), sink=sink), "abs", checkpoint_interval=None, failures=[failure]
    )
    assert run.restarts == 1
    assert run.restored == [0, 1]
    assert finals(run) == [(0, 1)]
    assert unfinished(sink) == []
    assert sorted(sink.committed()) == exactly(answer) == run.output
