"""Job inputs prepared by Spark or read from files by the sources: sources read their
barrier partitions or file shares by offset, and an exactly-once run on a DataFrame or on
text files equals Spark's own ``groupBy(word).count()``."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import absnb
from absnb import datasets
from absnb.runtime import Failure
from absnb.runtime.spark import SparkRuntime, final_counts, word_count_answer_from
from absnb.runtime.spark.inputs import (
    FileLines,
    InputBinding,
    PartitionLog,
    PartitionReader,
    SparkInputError,
    lines_frame,
    local_files,
    source_tasks,
    splits,
)


def running_counts(answer: dict[str, int]) -> list[tuple[str, int]]:
    """Every ``(word, count so far)`` an exactly-once word count emits, once each."""
    return sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


# -- reading a partition by offset (no Spark) --------------------------------------------------
def rows(sources: int, lines: int) -> list[tuple[tuple[int, int], str]]:
    """A prepared partition: sorted by (offset, source), as the shuffle leaves it."""
    return [((k, j), f"s{j}-{k}") for k in range(lines) for j in range(sources)]


def test_each_source_reads_its_own_rows_in_order() -> None:
    reader = PartitionReader(iter(rows(2, 3)), [0, 1])
    logs = [PartitionLog(reader, j, 3) for j in (0, 1)]
    # a source may run ahead of the other: the other's rows wait for it
    assert [logs[1][k] for k in range(3)] == ["s1-0", "s1-1", "s1-2"]
    assert [logs[0][k] for k in range(3)] == ["s0-0", "s0-1", "s0-2"]


def test_a_restored_source_starts_at_its_offset() -> None:
    reader = PartitionReader(iter(rows(2, 5)), [0, 1])
    assert PartitionLog(reader, 1, 5)[3] == "s1-3"
    assert PartitionLog(reader, 0, 5)[2] == "s0-2"
    assert PartitionLog(reader, 1, 5)[4] == "s1-4"


def test_a_partition_is_read_forward_only() -> None:
    reader = PartitionReader(iter(rows(1, 5)), [0])
    log = PartitionLog(reader, 0, 5)
    assert log[2] == "s0-2"
    assert log[2] == "s0-2"  # the current row may be read again
    assert log[3] == "s0-3"
    with pytest.raises(RuntimeError, match="forward only"):
        log[1]
    with pytest.raises(IndexError):
        log[5]


def test_a_host_gets_logs_only_for_its_own_sources() -> None:
    from absnb.runtime.plan import HostPlan

    job = absnb.word_count(sources=4, counters=2, sinks=2)
    sources = source_tasks(job)
    plan = HostPlan(
        job,
        "abs",
        1,
        tuple(t for t in job.graph.tasks if t.subtask % 2 == 1),
        b"secret",
        ("127.0.0.1", 1),
        "/tmp",
        "job",
    )
    bound = InputBinding(sources, (3, 3, 3, 3)).bind(plan, iter([]))
    assert sorted(map(str, bound.job.inputs)) == ["source[1]", "source[3]"]
    assert all(len(log) == 3 for log in bound.job.inputs.values())


def test_inputs_that_are_not_a_dataframe_or_a_path_are_refused() -> None:
    with pytest.raises(SparkInputError, match=r"absnb\.word_count\(lines=\.\.\.\)"):
        lines_frame(None, [["to be or not to be"]])


def test_a_job_without_sources_cannot_read_a_dataframe() -> None:
    with pytest.raises(SparkInputError, match="no source operator"):
        source_tasks(absnb.bank_transfer())


# -- on Spark ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def runtime(spark, tmp_path_factory):
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


@pytest.fixture(scope="module")
def lines(spark):
    """A user DataFrame: 12,000 lines in a column called ``text``."""
    text = [line for part in datasets.text_partitions("large") for line in part]
    return spark.createDataFrame([(line,) for line in text * 6], "text string")


@pytest.fixture(scope="module")
def answer(spark, lines):
    return word_count_answer_from(spark, lines)


def test_the_oracle_is_sparks_group_by_count(spark, lines, answer) -> None:
    from pyspark.sql import functions as F

    words = lines.select(F.explode(F.split("text", " ")).alias("word")).where("word != ''")
    assert answer == {r["word"]: r["count"] for r in words.groupBy("word").count().collect()}
    assert sum(answer.values()) > 50_000


def test_exactly_once_on_a_dataframe_after_a_raise_and_a_kill(runtime, lines, answer) -> None:
    # the first attempt fails during checkpoint 2, so the second restores checkpoint 1
    # (sources rewind to offsets > 0 in their partitions) and is then killed
    failures = [
        Failure("count[1]", during_checkpoint=2, kind="raise"),
        Failure("source[0]", after_records=2_000, kind="kill", attempt=1),
    ]
    job = absnb.word_count(sources=2)  # its default lines are replaced by the DataFrame's
    run = runtime.run(
        job,
        "abs",
        checkpoint_interval=0.02,
        failures=failures,
        inputs=lines,
        source_rate=12_000,  # 6,000 lines a source: checkpoints happen during the run
    )
    assert run.restarts == 2
    assert run.restored[:2] == [0, 1]
    assert final_counts(run.output) == answer
    assert sorted(run.output) == running_counts(answer)


class WatchedRuntime(SparkRuntime):
    """Records what every barrier stage was given."""

    stages: list

    def _stage(self, plans, data=None):
        self.stages = [*getattr(self, "stages", []), (plans, data)]
        return super()._stage(plans, data)


def test_text_files_read_by_spark_with_more_sources_than_hosts(spark, tmp_path) -> None:
    path = "file://" + str(Path(datasets.path("text/large")).resolve())  # a URL: Spark reads it
    answer = word_count_answer_from(spark, path)
    job = absnb.word_count(sources=4, counters=2, sinks=2)
    runtime = WatchedRuntime(spark, checkpoint_dir=str(tmp_path), hosts=2)
    failure = Failure("source[3]", after_records=200, kind="raise")
    run = runtime.run(job, "abs", checkpoint_interval=0.02, failures=[failure], inputs=path)
    assert run.restarts == 1
    # the lines reach the hosts as the stage's own partitions, not in what the driver ships
    for plans, data in runtime.stages:
        assert all(plan.job.inputs == {} for plan in plans)
        assert data.rdd.getNumPartitions() == len(plans) == 2
    assert data.binding.lengths == (500, 500, 500, 500)
    assert run.records <= sum(len(p) for p in datasets.text_partitions("large"))
    assert sorted(run.output) == running_counts(answer)


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("text string, n int", r"2 columns .*df\.select\('text'\)"),
        ("n int", r"no string column .*cast\('string'\)"),
    ],
    ids=["several-columns", "no-string-column"],
)
def test_a_dataframe_that_is_not_one_string_column_is_refused_with_the_fix(
    spark, runtime, columns, message
) -> None:
    row = ("to be", 1) if "," in columns else (1,)
    df = spark.createDataFrame([row], columns)
    with pytest.raises(SparkInputError, match=message):
        runtime.run(absnb.word_count(), "abs", inputs=df)


def test_a_missing_path_is_refused_with_the_fix(runtime, tmp_path) -> None:
    with pytest.raises(SparkInputError, match=r"cannot read the text files.*every executor"):
        runtime.run(absnb.word_count(), "abs", inputs=tmp_path / "missing")


# -- text files read by the sources themselves ----------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.text("ab \u00e9", max_size=12), max_size=8), min_size=1, max_size=4),
    st.integers(1, 5),
    st.booleans(),
)
def test_file_shares_hold_every_line_once_in_order(files, sources, last_newline) -> None:
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, lines in enumerate(files):
            paths.append(os.path.join(d, f"part-{i}.txt"))
            text = "\n".join(lines) + ("\n" if last_newline and lines else "")
            Path(paths[-1]).write_text(text, encoding="utf-8")
        expected = [
            line for p in paths for line in Path(p).read_text(encoding="utf-8").splitlines()
        ]
        shares = [FileLines(s) for s in splits(paths, sources)]
        assert len(shares) == sources
        assert [line for share in shares for line in share[:]] == expected
        for share in shares:  # a restored source reads from its offset on
            for k in range(len(share) + 1):
                assert share[k:] == [share[i] for i in range(k, len(share))]
            assert pickle.loads(pickle.dumps(share))[:] == share[:]


def test_local_paths_are_read_directly_and_urls_by_spark(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("to be\n")
    (tmp_path / "_SUCCESS").write_text("")
    assert local_files(tmp_path) == [str(tmp_path / "a.txt")]
    assert local_files(str(tmp_path / "*.txt")) == [str(tmp_path / "a.txt")]
    assert local_files("file://" + str(tmp_path)) is None
    assert local_files(tmp_path / "missing") is None


def test_exactly_once_reading_files_directly_after_a_raise_and_a_kill(spark, tmp_path) -> None:
    text = [line for part in datasets.text_partitions("large") for line in part] * 3
    for i in range(3):
        (tmp_path / f"part-{i}.txt").write_text("\n".join(text[i::3]) + "\n")
    answer = word_count_answer_from(spark, "file://" + str(tmp_path))
    runtime = WatchedRuntime(spark, checkpoint_dir=str(tmp_path / "checkpoints"), hosts=2)
    failures = [
        Failure("count[1]", during_checkpoint=2, kind="raise"),
        Failure("source[0]", after_records=2_000, kind="kill", attempt=1),
    ]
    files = str(tmp_path / "part-*.txt")
    run = runtime.run(
        absnb.word_count(sources=2),
        "abs",
        checkpoint_interval=0.02,
        failures=failures,
        inputs=files,
        # 3,000 lines a source: a second each, so that checkpoint 2 reaches count[1] and
        # checkpoint 1 leaves source[0] 2,000 lines to read on a loaded machine (at 6,000
        # a second, half a second, CI once saw attempt 0 end with neither fired)
        source_rate=3_000,
    )
    assert run.restarts == 2
    assert run.restored[:2] == [0, 1]  # the second attempt rewound the sources to offsets > 0
    assert final_counts(run.output) == answer
    assert sorted(run.output) == running_counts(answer)
    for plans, data in runtime.stages:  # no Spark input stage: the hosts read the files
        assert data is None
        assert all(isinstance(log, FileLines) for p in plans for log in p.job.inputs.values())
