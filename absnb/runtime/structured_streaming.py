"""Spark Structured Streaming into a two-phase-commit sink: each micro-batch exactly once.

A micro-batch is a checkpoint: Structured Streaming logs the batch's offsets before running
it and marks it done in its commit log afterwards, and after a restart it replays the last
batch not marked done, with the same batch id and the same input. The adapter maps two-phase
commit onto that:

- each task's ``write()`` writes its rows into a new transaction of the sink (for
  :class:`~absnb.sinks.files.FileSink`, a file in the staging directory) and pre-commits it
  (flush, fsync, close), returning the handle to the driver in its commit message;
- the driver's ``commit(messages, batchId)`` records its decision (``pending/<batch>.json``,
  naming the transactions), commits every transaction (the atomic renames), then records the
  batch as committed (``committed/<batch>.json``). A replayed batch that is already committed
  aborts its new transactions instead, and a decision left pending by a driver that crashed
  in the middle of committing is carried out (rolled forward) by the next commit or abort;
- ``abort(messages, batchId)`` aborts the transactions it is told about.

The records live in ``<log>/<query id>/``: the query id is stable across restarts from the
same checkpoint location, so a new query writing into the same directory starts afresh.
Every task first records its task name in ``tasks/``, so that the transactions of a task
whose message never reached the driver can still be found (``sink.leftovers(task)``).

Limits of this pyspark (4.x), and how they are handled:

- ``write()`` is not told the batch id (nor the query). Structured Streaming does put both
  into the task's local properties (``streaming.sql.batchId``, ``sql.streaming.queryId``),
  which ``write()`` reads; without them (a batch write, continuous processing) it raises
  :class:`StreamSinkError`.
- ``abort()`` gets None for a failed task's message, so the failed task's own transaction
  (a staging file it pre-committed before it crashed) is not named anywhere. Each
  ``commit()`` and ``abort()`` therefore also aborts every leftover transaction of the
  query's recorded tasks: an orphan is cleaned by the same abort or, if the driver died
  too, at the next batch. If every task failed, abort has no message to learn the query id
  from and cleans nothing: the next batch does.
- ``commit()`` and ``abort()`` run in a Python worker process on the driver's machine, on a
  writer made afresh for each call: the adapter keeps nothing in memory between calls, only
  files, which the driver and the executors must share (one machine, or a shared file
  system).
- A task still running after its batch was aborted (a zombie) may begin its transaction
  after the cleanup: it checks its task record after pre-committing and, finding it gone,
  aborts its own transaction.
- Exactly-once needs what Structured Streaming needs: a checkpoint location, a replayable
  source, and a deterministic query (a replayed batch must hold the same rows). One query
  writes into one log; queries with different ids keep separate logs.
- Only the append output mode (``overwrite`` is refused).

:func:`file_sink_stream` starts the usual path (format :data:`FORMAT`);
:class:`ForeachBatchFileSink` does the same through ``foreachBatch``, which is told the batch
id. The classes that subclass pyspark's (:class:`TwoPhaseCommitStreamWriter`,
:class:`FileSinkDataSource`, :class:`StagedMessage`) are made at first use, so that importing
this module does not import pyspark.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import json
import os
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from absnb.core.errors import AbsnbError
from absnb.protocols.two_phase_commit import SinkConfigurationError, TwoPhaseCommitSink
from absnb.sinks.files import FileSink, check_directory, fsync_directory

FORMAT = "absnb_files"
"""The Structured Streaming format name of :class:`FileSinkDataSource`."""

LOG = "_streaming"
"""The adapter's records inside the target directory (Spark and pandas readers skip names
starting with ``_``)."""

QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
"""Local properties Structured Streaming gives the tasks of a micro-batch."""

RETAIN = 100
"""Committed batches remembered per query (a restart replays only the last one)."""


class StreamSinkError(AbsnbError, RuntimeError):
    """The streaming adapter cannot go on safely; the message says why and what to do."""


@dataclass(frozen=True)
class Staged:
    """What one task of a micro-batch tells the driver.

    Attributes:
        query: the streaming query id.
        batch: the micro-batch id.
        partition: the task's partition.
        task: the task name the transaction was begun with (unique per task attempt).
        txn: the pre-committed transaction; None if the partition had no rows.
        rows: records written.
    """

    query: str
    batch: int
    partition: int
    task: str
    txn: Any
    rows: int


def _key(txn: Any) -> str:
    return json.dumps(txn, sort_keys=True)


def _atomic_json(path: str, value: Any) -> None:
    """Write ``value`` as JSON to ``path`` atomically and durably."""
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_directory(os.path.dirname(path))


class BatchLog:
    """The adapter's records for one query: ``committed/``, ``pending/`` and ``tasks/``."""

    def __init__(self, root: str, query: str) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", query) or query in (".", ".."):
            raise StreamSinkError(
                f"streaming query id {query!r} cannot name a directory: expected a UUID as "
                "Structured Streaming makes them"
            )
        self.path = os.path.join(root, query)

    def _dir(self, kind: str) -> str:
        path = os.path.join(self.path, kind)
        os.makedirs(path, exist_ok=True)
        return path

    def _read(self, kind: str, batch: int) -> list[Any] | None:
        try:
            with open(os.path.join(self.path, kind, f"{batch}.json"), encoding="utf-8") as f:
                return list(json.load(f)["transactions"])
        except FileNotFoundError:
            return None

    def _batches(self, kind: str) -> list[int]:
        names = os.listdir(self._dir(kind))
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    # tasks
    def add_task(self, task: str) -> None:
        path = self._dir("tasks")
        with open(os.path.join(path, task), "w"):
            pass
        fsync_directory(path)

    def tasks(self) -> list[str]:
        return sorted(n for n in os.listdir(self._dir("tasks")) if not n.endswith(".tmp"))

    def has_task(self, task: str) -> bool:
        return os.path.exists(os.path.join(self.path, "tasks", task))

    def remove_task(self, task: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.path, "tasks", task))

    # batches
    def committed(self, batch: int) -> list[Any] | None:
        """The transactions batch ``batch`` committed (None: not committed)."""
        return self._read("committed", batch)

    def committed_batches(self) -> list[int]:
        return self._batches("committed")

    def pending(self) -> dict[int, list[Any]]:
        """Decisions to commit that were not carried out to the end, by batch."""
        found = {}
        for batch in self._batches("pending"):
            txns = self._read("pending", batch)
            if txns is not None:
                found[batch] = txns
        return found

    def decide(self, batch: int, txns: list[Any]) -> None:
        try:
            record = {"batch": batch, "transactions": txns}
            json.dumps(record)
        except TypeError as e:
            raise StreamSinkError(
                f"the sink's transaction handles {txns!r} are not JSON values ({e}): the "
                "streaming adapter logs them, so the sink must return strings, numbers or "
                "lists of them from pre_commit"
            ) from e
        _atomic_json(os.path.join(self._dir("pending"), f"{batch}.json"), record)

    def mark_committed(self, batch: int, txns: list[Any]) -> None:
        record = {"batch": batch, "transactions": txns}
        _atomic_json(os.path.join(self._dir("committed"), f"{batch}.json"), record)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.path, "pending", f"{batch}.json"))
        for old in self.committed_batches():
            if old <= batch - RETAIN:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.path, "committed", f"{old}.json"))


def _plain(value: Any) -> Any:
    """A Spark value as plain Python: nested rows become dicts."""
    if isinstance(value, tuple) and hasattr(value, "asDict"):
        return value.asDict(recursive=True)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _json_value(value: Any) -> Any:
    """``value`` as something ``json.dumps`` writes: dates and times in ISO format, decimals
    as strings (exact), bytes in base64."""
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    return value


def _zombie(task: str) -> StreamSinkError:
    return StreamSinkError(
        f"task {task}: its batch was aborted and cleaned up while it ran (a zombie task): "
        "its transaction is aborted; the batch runs again after a restart"
    )


class StreamCommitter:
    """Two-phase commit of micro-batches into ``sink``, without Spark (the writers call it).

    Args:
        sink: any :class:`~absnb.protocols.two_phase_commit.TwoPhaseCommitSink` whose
            transaction handles are JSON values, ``begin_transaction(task)`` unique per call
            and ``leftovers(task)`` complete (every uncommitted transaction of ``task``).
        log: the directory for the adapter's records, readable and writable by the driver
            and every executor (a shared file system on a cluster).
        json_values: convert each record's values for JSON (for a JSON-writing sink).
    """

    def __init__(self, sink: TwoPhaseCommitSink[Any], log: str, *, json_values: bool = False):
        self.sink = sink
        self.log = os.path.abspath(log)
        self.json_values = json_values

    def batch_log(self, query: str) -> BatchLog:
        return BatchLog(self.log, query)

    # -- on the executors ------------------------------------------------------------------
    def write(
        self, rows: Iterable[Any], *, query: str, batch: int, partition: int, attempt: int = 0
    ) -> Staged:
        """Write ``rows`` (tuples or Spark rows) into a new transaction and pre-commit it."""
        task = f"b{batch}-p{partition}-a{attempt}-{uuid.uuid4().hex[:12]}"
        txn = None
        written = 0
        try:
            for row in rows:
                record = tuple(_plain(v) for v in row)
                if self.json_values:
                    record = tuple(_json_value(v) for v in record)
                if txn is None:
                    self.batch_log(query).add_task(task)  # first: cleanup can find the txn
                    txn = self.sink.begin_transaction(task)
                self.sink.write(txn, record)
                written += 1
            if txn is not None:
                txn = self.sink.pre_commit(txn, batch)
                if not self.batch_log(query).has_task(task):
                    raise _zombie(task)
        except BaseException as e:
            if txn is not None:
                with contextlib.suppress(Exception):
                    self.sink.abort(txn)
                if isinstance(e, OSError) and not self.batch_log(query).has_task(task):
                    raise _zombie(task) from e  # the cleanup took the file from under it
            raise
        return Staged(query, batch, partition, task, txn, written)

    # -- on the driver -----------------------------------------------------------------------
    def commit(self, staged: Sequence[Staged | None], batch: int) -> None:
        """Commit the batch once: a replay of a committed batch aborts its new transactions."""
        if any(s is None for s in staged):
            raise StreamSinkError(
                f"batch {batch}: asked to commit with a failed task's message missing; "
                "Spark aborts such a batch, so this is a bug in the caller"
            )
        done = [s for s in staged if s is not None]
        if not done:
            return  # no partitions: nothing to commit and no query id to log it under
        log = self._log_for(done, batch)
        self._roll_forward(log)
        txns = [s.txn for s in done if s.txn is not None]
        before = log.committed(batch)
        if before is not None:  # a replay of a batch committed before: the same rows again
            keep = {_key(t) for t in before}
            for txn in txns:
                if _key(txn) not in keep:
                    self.sink.abort(txn)
        else:
            log.decide(batch, txns)
            for txn in txns:
                self.sink.commit(txn)
            log.mark_committed(batch, txns)
        self._clean(log)

    def abort(self, staged: Sequence[Staged | None], batch: int, query: str | None = None) -> None:
        """Abort the batch's transactions and every orphan of the query's earlier tasks."""
        known = [s for s in staged if s is not None]
        if query is None and not known:
            return  # every task failed: no query id to look under; the next batch cleans
        log = self._log_for(known, batch) if known else self.batch_log(str(query))
        self._roll_forward(log)
        keep = {_key(t) for t in log.committed(batch) or ()}
        for s in known:
            if s.txn is not None and _key(s.txn) not in keep:
                self.sink.abort(s.txn)
        self._clean(log)

    def committed_batches(self, query: str) -> list[int]:
        """The batches of ``query`` committed (the last :data:`RETAIN`)."""
        return self.batch_log(query).committed_batches()

    def _log_for(self, staged: Sequence[Staged], batch: int) -> BatchLog:
        queries = {s.query for s in staged}
        batches = {s.batch for s in staged}
        if len(queries) != 1 or batches != {batch}:
            raise StreamSinkError(
                f"batch {batch}: the tasks' messages come from queries {sorted(queries)} and "
                f"batches {sorted(batches)}: one writer instance must serve one query"
            )
        return self.batch_log(queries.pop())

    def _roll_forward(self, log: BatchLog) -> None:
        """Finish the commits a crashed driver decided but did not carry out to the end."""
        for batch, txns in log.pending().items():
            if log.committed(batch) is None:
                for txn in txns:
                    self.sink.commit(txn)
            log.mark_committed(batch, txns)

    def _clean(self, log: BatchLog) -> None:
        """Abort every uncommitted transaction of the recorded tasks (no decision is pending
        now), then forget the tasks."""
        for task in log.tasks():
            for txn in self.sink.leftovers(task):
                self.sink.abort(txn)
            log.remove_task(task)


# -- the Spark side ------------------------------------------------------------------------
def spark_task() -> tuple[str, int, int, int]:
    """Query id, batch id, partition and attempt of the Spark task this runs in."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise StreamSinkError("not in a Spark task: the stream writer's write() runs in one")
    query = ctx.getLocalProperty(QUERY_ID_PROPERTY)
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY)
    if query is None or batch is None:
        raise StreamSinkError(
            f"the task has no {QUERY_ID_PROPERTY!r} or {BATCH_ID_PROPERTY!r} local property: "
            "the transactional stream writer works only in a micro-batch streaming query "
            "(df.writeStream, not df.write, and not trigger(continuous=...))"
        )
    return query, int(batch), ctx.partitionId(), ctx.attemptNumber()


def file_sink(
    directory: str, staging: str | None = None, columns: Sequence[str] | None = None
) -> FileSink:
    """A :class:`FileSink` into ``directory``, checked writable (else SinkConfigurationError)."""
    if not directory:
        raise SinkConfigurationError(
            f"the {FORMAT} sink needs a target directory: pass .option('path', directory) "
            "or .start(directory)"
        )
    sink = FileSink(directory, staging, columns=columns)
    sink.check()
    return sink


_SPARK_CLASSES = ("StagedMessage", "TwoPhaseCommitStreamWriter", "FileSinkDataSource")


def __getattr__(name: str) -> Any:
    # The classes that subclass pyspark's are made on first use (importing this module must
    # not import pyspark); they live in this module's namespace so that pickle finds them.
    if name in _SPARK_CLASSES:
        _define_spark_classes()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _define_spark_classes() -> None:
    if all(name in globals() for name in _SPARK_CLASSES):
        return
    from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, WriterCommitMessage
    from pyspark.sql.types import StructType

    @dataclass(frozen=True)
    class StagedMessage(WriterCommitMessage):
        """A task's commit message: its :class:`Staged` transaction."""

        staged: Staged

    class TwoPhaseCommitStreamWriter(DataSourceStreamWriter):
        """A Python data source stream writer over any two-phase-commit sink (see the
        module docstring). Return one from ``DataSource.streamWriter``."""

        def __init__(
            self, sink: TwoPhaseCommitSink[Any], log: str, *, json_values: bool = False
        ) -> None:
            self.committer = StreamCommitter(sink, log, json_values=json_values)

        def write(self, iterator: Iterable[Any]) -> StagedMessage:
            query, batch, partition, attempt = spark_task()
            staged = self.committer.write(
                iterator, query=query, batch=batch, partition=partition, attempt=attempt
            )
            return StagedMessage(staged)

        def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
            self.committer.commit(_staged(messages), batchId)

        def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
            self.committer.abort(_staged(messages), batchId)

    def _staged(messages: list[WriterCommitMessage | None]) -> list[Staged | None]:
        """Each task's :class:`Staged` transaction (None for a task that sent no message:
        Spark passes None for a task that failed before committing)."""
        return [m.staged if isinstance(m, StagedMessage) else None for m in messages]

    class FileSinkDataSource(DataSource):
        """Format :data:`FORMAT`: exactly-once JSON-lines files. Options: ``path`` (the
        target directory), ``staging`` (default ``path/_staging``), ``log`` (default
        ``path/_streaming``)."""

        @classmethod
        def name(cls) -> str:
            return FORMAT

        def streamWriter(self, schema: StructType, overwrite: bool) -> TwoPhaseCommitStreamWriter:
            if overwrite:
                raise StreamSinkError(
                    f"the {FORMAT} sink only appends: use outputMode('append') (complete "
                    "mode would rewrite the directory, which two-phase commit cannot take back)"
                )
            path = self.options.get("path") or ""
            sink = file_sink(path, self.options.get("staging"), schema.fieldNames())
            log = self.options.get("log") or os.path.join(sink.directory, LOG)
            check_directory(log, "log directory", f"the {FORMAT} sink")
            return TwoPhaseCommitStreamWriter(sink, log, json_values=True)

    for cls in (StagedMessage, TwoPhaseCommitStreamWriter, FileSinkDataSource):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
        globals()[cls.__name__] = cls


def register(spark: Any) -> str:
    """Register format :data:`FORMAT` with ``spark``; returns the name."""
    _define_spark_classes()
    spark.dataSource.register(globals()["FileSinkDataSource"])
    return FORMAT


def file_sink_stream(
    df: Any, directory: str, *, staging: str | None = None, log: str | None = None
) -> Any:
    """``df.writeStream`` into ``directory`` exactly once, ready for ``checkpointLocation``,
    a trigger and ``start()``. Checks the directory first (SinkConfigurationError)."""
    file_sink(directory, staging)
    if log is not None:
        check_directory(log, "log directory", f"the {FORMAT} sink")
    register(df.sparkSession)
    writer = df.writeStream.format(FORMAT).outputMode("append").option("path", directory)
    if staging is not None:
        writer = writer.option("staging", staging)
    if log is not None:
        writer = writer.option("log", log)
    return writer


class ForeachBatchFileSink:
    """The same through ``df.writeStream.foreachBatch(ForeachBatchFileSink(directory))``.

    ``foreachBatch`` is told the batch id; the query id comes from the driver's local
    property. The tasks run as ``df.rdd.mapPartitions`` (classic Spark, not Spark Connect);
    if the job fails, the abort knows the query, so even a batch whose tasks all failed is
    cleaned at once.
    """

    def __init__(
        self, directory: str, *, staging: str | None = None, log: str | None = None
    ) -> None:
        sink = file_sink(directory, staging)
        self.directory = sink.directory
        self.staging = staging
        self.log = log or os.path.join(sink.directory, LOG)
        check_directory(self.log, "log directory", "ForeachBatchFileSink")

    def committer(self, columns: Sequence[str]) -> StreamCommitter:
        sink = FileSink(self.directory, self.staging, columns=columns)
        return StreamCommitter(sink, self.log, json_values=True)

    def __call__(self, df: Any, batch_id: int) -> None:
        query = df.sparkSession.sparkContext.getLocalProperty(QUERY_ID_PROPERTY)
        if query is None:
            raise StreamSinkError(
                f"no {QUERY_ID_PROPERTY!r} local property: call this only as "
                "df.writeStream.foreachBatch(...) in a micro-batch query"
            )
        committer = self.committer(df.columns)
        write_partition = _partition_writer(committer, query, batch_id)
        try:
            staged = df.rdd.mapPartitions(write_partition).collect()
        except BaseException:
            committer.abort([], batch_id, query)
            raise
        committer.commit(staged, batch_id)


def _partition_writer(
    committer: StreamCommitter, query: str, batch: int
) -> Callable[[Iterable[Any]], Iterable[Staged]]:
    def write_partition(rows: Iterable[Any]) -> Iterable[Staged]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        yield committer.write(
            rows,
            query=query,
            batch=batch,
            partition=ctx.partitionId() if ctx else 0,
            attempt=ctx.attemptNumber() if ctx else 0,
        )

    return write_partition


def committed_frame(directory: str) -> Any:
    """The committed files of ``directory`` as one pandas DataFrame (files in batch order)."""
    import pandas as pd

    files = FileSink(directory).committed_files()
    if not files:
        return pd.DataFrame()
    return pd.concat([pd.read_json(f, lines=True) for f in files], ignore_index=True)


__all__ = [
    "FORMAT",
    "LOG",
    "BatchLog",
    "ForeachBatchFileSink",
    "Staged",
    "StreamCommitter",
    "StreamSinkError",
    "committed_frame",
    "file_sink",
    "file_sink_stream",
    "register",
    "spark_task",
]
