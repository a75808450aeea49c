"""The file sink from Spark Structured Streaming: each micro-batch committed exactly once,
through task crashes, driver crashes around the commit and replays of a committed batch."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from absnb.protocols.two_phase_commit import SinkConfigurationError
from absnb.runtime.spark.structured_streaming import (
    FORMAT,
    LOG,
    ForeachBatchFileSink,
    Staged,
    StreamCommitter,
    StreamSinkError,
    committed_frame,
    file_sink_stream,
    register,
)
from absnb.sinks.files import FileSink

INPUT = [[f"file{f} line{i}" for i in range(6)] for f in range(2)]
"""Two input files: with maxFilesPerTrigger=1, two micro-batches (0 and 1)."""
EXPECTED = sorted(line for lines in INPUT for line in lines)


@pytest.fixture(scope="module")
def spark(spark: Any) -> Any:
    """The run's shared session (tests/runtime/conftest.py) with this sink's format
    registered: kept running for the Spark tests after these (one JVM per test process)."""
    register(spark)
    return spark


# -- helpers ---------------------------------------------------------------------------------
def source_dir(tmp_path: Path) -> str:
    src = tmp_path / "in"
    src.mkdir()
    for f, lines in enumerate(INPUT):
        path = src / f"f{f}.txt"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_000_000 + f, 1_000_000 + f))  # batches take the oldest file first
    return str(src)


def committed(out: Path) -> list[str]:
    """The committed lines, read back by the sink."""
    return sorted(v for (v,) in FileSink(out, columns=("value",)).committed())


def staging(out: Path) -> list[str]:
    return sorted(os.listdir(out / "_staging")) if (out / "_staging").exists() else []


def query_log(out: Path) -> Path:
    (query,) = os.listdir(out / LOG)
    return out / LOG / query


def run(spark: Any, tmp_path: Path, fmt: str = FORMAT, **options: str) -> tuple[Any, Any]:
    """Run the stream from ``tmp_path/in`` to ``tmp_path/out`` until its input is used up,
    with checkpoints in ``tmp_path/checkpoint``. Returns the query and its error (or None)."""
    from pyspark.errors import StreamingQueryException

    df = spark.readStream.option("maxFilesPerTrigger", 1).text(str(tmp_path / "in"))
    df = df.repartition(2)
    out = str(tmp_path / "out")
    if fmt == FORMAT:
        writer = file_sink_stream(df, out)
    elif fmt == "foreachBatch":
        writer = df.writeStream.foreachBatch(ForeachBatchFileSink(out))
    else:
        writer = df.writeStream.format(fmt).option("path", out)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer = writer.option("checkpointLocation", str(tmp_path / "checkpoint"))
    query = writer.trigger(availableNow=True).start()
    try:
        query.awaitTermination()
    except StreamingQueryException as e:
        return query, e
    return query, None


def replayed(query: Any) -> list[int]:
    """The batches a run processed rows in."""
    return [p["batchId"] for p in query.recentProgress if p["numInputRows"] > 0]


def forget_last_commit(tmp_path: Path, batch: int) -> None:
    """Structured Streaming's state after a crash right after the sink committed ``batch``
    and before the query logged it done: a restart replays the batch."""
    commits = tmp_path / "checkpoint" / "commits"
    (commits / str(batch)).unlink()
    (commits / f".{batch}.crc").unlink(missing_ok=True)


def once(flags: str, name: str) -> bool:
    """True the first time it is asked, in any process."""
    try:
        os.close(os.open(os.path.join(flags, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def faulty_format(spark: Any) -> str:
    """Register format ``absnb_files_faulty``: the file sink with crashes set by options.

    - ``crash_task`` = ``"batch:partition"``: that task's Python worker dies (``os._exit``)
      after it pre-committed, before its message reaches the driver, once;
    - ``crash_commit`` = ``"batch:before"`` or ``"batch:midway"``: the driver's commit of
      that batch raises before committing anything, or after committing one file, once;
    - ``driver_dies`` = ``"1"``: abort does nothing (the driver is gone, as after a crash).

    Defined in a function, so that cloudpickle ships the classes by value to Spark's Python
    workers (they cannot import this test module).
    """
    from absnb.runtime.spark.structured_streaming import (
        FileSinkDataSource,
        TwoPhaseCommitStreamWriter,
    )

    class CrashingFileSink(FileSink):
        def __init__(self, *args: Any, midway: bool, flags: str, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.midway, self.flags, self.commits = midway, flags, 0

        def commit(self, txn: str) -> None:
            self.commits += 1
            if self.midway and self.commits == 2 and once(self.flags, "commit"):
                raise RuntimeError("injected: the driver crashed in the middle of committing")
            super().commit(txn)

    class FaultyWriter(TwoPhaseCommitStreamWriter):  # type: ignore[misc, valid-type]
        def __init__(self, sink: CrashingFileSink, log: str, options: dict[str, str]) -> None:
            super().__init__(sink, log, json_values=True)
            self.options, self.flags = options, sink.flags

        def write(self, iterator: Any) -> Any:
            message = super().write(iterator)
            at = f"{message.staged.batch}:{message.staged.partition}"
            if self.options.get("crash_task") == at and once(self.flags, "task"):
                os._exit(1)
            return message

        def commit(self, messages: list[Any], batchId: int) -> None:
            if self.options.get("crash_commit") == f"{batchId}:before" and once(
                self.flags, "commit"
            ):
                raise RuntimeError("injected: the driver crashed before committing")
            self.committer.sink.midway = self.options.get("crash_commit") == f"{batchId}:midway"
            super().commit(messages, batchId)

        def abort(self, messages: list[Any], batchId: int) -> None:
            if self.options.get("driver_dies") != "1":
                super().abort(messages, batchId)

    class FaultySource(FileSinkDataSource):  # type: ignore[misc, valid-type]
        @classmethod
        def name(cls) -> str:
            return "absnb_files_faulty"

        def streamWriter(self, schema: Any, overwrite: bool) -> Any:
            path = self.options["path"]
            flags = os.path.join(path, "_flags")
            os.makedirs(flags, exist_ok=True)
            sink = CrashingFileSink(path, columns=schema.fieldNames(), midway=False, flags=flags)
            sink.check()
            return FaultyWriter(sink, os.path.join(path, LOG), dict(self.options))

    spark.dataSource.register(FaultySource)
    return FaultySource.name()


# -- on Spark --------------------------------------------------------------------------------
def test_every_line_is_committed_once_and_a_replayed_batch_is_not_committed_again(
    spark: Any, tmp_path: Path
) -> None:
    source_dir(tmp_path)
    out = tmp_path / "out"
    _, error = run(spark, tmp_path)
    assert error is None
    assert committed(out) == EXPECTED
    # readable by Spark and by pandas; the sink's own directories are hidden from Spark
    assert sorted(r.value for r in spark.read.json(str(out)).collect()) == EXPECTED
    assert sorted(committed_frame(str(out))["value"]) == EXPECTED
    files = sorted(p.name for p in out.glob("part-*.jsonl"))
    assert [f[:11] for f in files] == ["part-000000"] * 2 + ["part-000001"] * 2
    assert sorted(os.listdir(query_log(out) / "committed")) == ["0.json", "1.json"]

    forget_last_commit(tmp_path, 1)
    query, error = run(spark, tmp_path)
    assert error is None
    assert replayed(query) == [1]  # the batch did run again, through the sink
    assert committed(out) == EXPECTED
    assert staging(out) == []
    assert os.listdir(query_log(out) / "tasks") == []


@pytest.mark.parametrize("driver_aborts", [True, False], ids=["abort-runs", "driver-dies-too"])
def test_a_crashed_task_leaves_no_duplicates_and_its_orphan_is_cleaned(
    spark: Any, tmp_path: Path, driver_aborts: bool
) -> None:
    source_dir(tmp_path)
    out = tmp_path / "out"
    options = {"crash_task": "1:0"} | ({} if driver_aborts else {"driver_dies": "1"})
    _, error = run(spark, tmp_path, faulty_format(spark), **options)
    assert error is not None  # local mode does not retry a task: the query fails
    assert committed(out) == sorted(INPUT[0])
    orphans = [n for n in staging(out) if n.startswith("part-000001.b1-p0-")]
    if driver_aborts:
        # Spark runs the abort after it reports the query's failure (waited for, bounded).
        # Given None for the crashed task, the abort finds its file through its task record
        # (test_an_abort_cleans_the_orphan_of_a_task_whose_message_is_none); given no
        # messages, or racing a task still staging, it leaves batch 1's files to the next
        # commit (test_an_abort_with_no_message_at_all_leaves_the_orphans_to_the_next_commit).
        # Either way nothing but batch 1's staged files may remain, and nothing committed.
        deadline = time.monotonic() + 60
        while staging(out) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(n.startswith("part-000001.b1-") for n in staging(out))
        assert committed(out) == sorted(INPUT[0])
    else:
        assert len(orphans) == 1  # pre-committed, its message lost, nobody aborted it

    query, error = run(spark, tmp_path)
    assert error is None
    assert replayed(query) == [1]
    assert committed(out) == EXPECTED
    assert staging(out) == []  # the orphan was cleaned by the next batch's commit
    assert os.listdir(query_log(out) / "tasks") == []


@pytest.mark.parametrize(
    ("when", "driver_aborts"),
    [("before", False), ("midway", False), ("midway", True)],
    ids=["before-commit", "midway-driver-dies", "midway-abort-runs"],
)
def test_a_driver_crash_around_the_commit_commits_the_batch_once_on_restart(
    spark: Any, tmp_path: Path, when: str, driver_aborts: bool
) -> None:
    source_dir(tmp_path)
    out = tmp_path / "out"
    options = {"crash_commit": f"1:{when}"} | ({} if driver_aborts else {"driver_dies": "1"})
    _, error = run(spark, tmp_path, faulty_format(spark), **options)
    assert error is not None
    log = query_log(out)
    batch1 = [n for n in os.listdir(out) if n.startswith("part-000001")]
    if when == "before":
        assert committed(out) == sorted(INPUT[0])
        assert len(staging(out)) == 2  # both tasks pre-committed batch 1
    elif driver_aborts:
        # Spark aborts after a failed commit: the abort finishes the decided commit
        assert committed(out) == EXPECTED
        assert os.listdir(log / "pending") == []
    else:
        assert len(batch1) == 1  # half committed: the decision is pending
        assert os.listdir(log / "pending") == ["1.json"]

    query, error = run(spark, tmp_path)
    assert error is None
    assert replayed(query) == [1]
    assert committed(out) == EXPECTED
    assert staging(out) == []
    assert os.listdir(log / "pending") == []
    assert sorted(os.listdir(log / "committed")) == ["0.json", "1.json"]


def test_foreach_batch_commits_once_and_skips_a_replayed_batch(spark: Any, tmp_path: Path) -> None:
    source_dir(tmp_path)
    out = tmp_path / "out"
    _, error = run(spark, tmp_path, "foreachBatch")
    assert error is None
    assert committed(out) == EXPECTED
    forget_last_commit(tmp_path, 1)
    query, error = run(spark, tmp_path, "foreachBatch")
    assert error is None
    assert replayed(query) == [1]
    assert committed(out) == EXPECTED
    assert sorted(r.value for r in spark.read.json(str(out)).collect()) == EXPECTED
    assert staging(out) == []


def test_a_target_that_is_not_a_writable_directory_is_refused_before_the_query_starts(
    spark: Any, tmp_path: Path
) -> None:
    source_dir(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    df = spark.readStream.text(str(tmp_path / "in"))
    with pytest.raises(SinkConfigurationError, match="cannot write to the target directory"):
        file_sink_stream(df, str(blocker / "out"))
    with pytest.raises(SinkConfigurationError, match="cannot write to the log directory"):
        file_sink_stream(df, str(tmp_path / "out"), log=str(blocker / "log"))
    with pytest.raises(SinkConfigurationError, match="is a file, not a directory"):
        ForeachBatchFileSink(str(blocker))
    assert spark.streams.active == []


# -- the commit protocol without Spark ---------------------------------------------------------
@pytest.fixture
def committer(tmp_path: Path) -> StreamCommitter:
    sink = FileSink(tmp_path / "out", columns=("value",))
    return StreamCommitter(sink, str(tmp_path / "out" / LOG))


def write(committer: StreamCommitter, batch: int, partition: int, rows: list[str]) -> Staged:
    return committer.write([(r,) for r in rows], query="q", batch=batch, partition=partition)


def test_a_batch_committed_twice_is_visible_once(committer: StreamCommitter) -> None:
    first = [write(committer, 0, 0, ["a", "b"]), write(committer, 0, 1, ["c"])]
    committer.commit(first, 0)
    again = [write(committer, 0, 0, ["a", "b"]), write(committer, 0, 1, ["c"])]
    committer.commit(again, 0)
    committer.commit(first, 0)  # the very same messages again: idempotent
    assert sorted(committer.sink.committed()) == [("a",), ("b",), ("c",)]
    assert committer.sink.leftovers(again[0].task) == []
    assert committer.committed_batches("q") == [0]


def test_an_abort_cleans_the_orphan_of_a_task_whose_message_is_none(
    committer: StreamCommitter,
) -> None:
    lost = write(committer, 3, 0, ["lost"])  # pre-committed; its message never arrives
    kept = write(committer, 3, 1, ["kept"])
    assert len(committer.sink.leftovers(lost.task)) == 1
    committer.abort([None, kept], 3)
    assert committer.sink.leftovers(lost.task) == []
    assert committer.sink.leftovers(kept.task) == []
    assert committer.sink.committed() == []


def test_an_abort_with_no_message_at_all_leaves_the_orphans_to_the_next_commit(
    committer: StreamCommitter,
) -> None:
    lost = write(committer, 0, 0, ["lost"])
    committer.abort([None], 0)
    assert len(committer.sink.leftovers(lost.task)) == 1
    committer.commit([write(committer, 0, 0, ["replayed"])], 0)
    assert committer.sink.leftovers(lost.task) == []
    assert committer.sink.committed() == [("replayed",)]


def test_a_decision_left_pending_is_carried_out_by_the_replay(
    committer: StreamCommitter,
) -> None:
    staged = [write(committer, 5, 0, ["x"]), write(committer, 5, 1, ["y"])]
    log = committer.batch_log("q")
    log.decide(5, [s.txn for s in staged])
    committer.sink.commit(staged[0].txn)  # the driver died after the first rename
    replay = [write(committer, 5, 0, ["x"]), write(committer, 5, 1, ["y"])]
    committer.commit(replay, 5)
    assert sorted(committer.sink.committed()) == [("x",), ("y",)]
    assert log.pending() == {}
    assert committer.sink.leftovers(replay[0].task) == []


def test_an_empty_partition_begins_no_transaction(committer: StreamCommitter) -> None:
    staged = write(committer, 0, 0, [])
    assert staged.txn is None
    assert staged.rows == 0
    committer.commit([staged], 0)
    assert committer.sink.committed() == []
    assert committer.committed_batches("q") == [0]


def test_values_json_cannot_hold_are_written_in_a_form_spark_and_pandas_read(
    tmp_path: Path,
) -> None:
    import datetime
    import decimal

    from pyspark.sql import Row

    sink = FileSink(tmp_path / "out", columns=("when", "price", "raw", "nested", "structs"))
    committer = StreamCommitter(sink, str(tmp_path / "out" / LOG), json_values=True)
    row = Row(
        when=datetime.date(2024, 2, 29),
        price=decimal.Decimal("1.10"),
        raw=b"\x00\xff",
        nested=Row(t=(1, 2)),
        structs=[Row(z=1)],
    )
    committer.commit([committer.write([row], query="q", batch=0, partition=0)], 0)
    assert sink.committed() == [("2024-02-29", "1.10", "AP8=", {"t": [1, 2]}, [{"z": 1}])]


@pytest.mark.parametrize("cleaned", ["before-begin", "before-pre-commit"])
def test_a_zombie_task_of_a_cleaned_up_batch_aborts_its_own_transaction(
    committer: StreamCommitter, cleaned: str
) -> None:
    class Zombie(list):  # the batch is aborted and cleaned up while the task writes
        def __iter__(self) -> Any:
            if cleaned == "before-begin":
                original = committer.sink.begin_transaction

                def begin(task: str) -> Any:
                    committer.abort([], 7, query="q")  # after write() recorded the task
                    return original(task)

                committer.sink.begin_transaction = begin  # type: ignore[method-assign]
            yield ("late",)
            if cleaned == "before-pre-commit":
                committer.abort([], 7, query="q")

    with pytest.raises(StreamSinkError, match="zombie"):
        committer.write(Zombie(), query="q", batch=7, partition=0)
    assert os.listdir(committer.sink.staging) == []
