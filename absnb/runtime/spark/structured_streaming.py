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
  :class:`~absnb.runtime.spark.stream_committer.StreamSinkError`.
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
this module does not import pyspark. The Spark-free part,
:class:`~absnb.runtime.spark.stream_committer.StreamCommitter` and its records, is
:mod:`absnb.runtime.spark.stream_committer`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from absnb.protocols.two_phase_commit import SinkConfigurationError, TwoPhaseCommitSink
from absnb.runtime.spark.stream_committer import BatchLog, Staged, StreamCommitter, StreamSinkError
from absnb.sinks.files import FileSink, check_directory

FORMAT = "absnb_files"
"""The Structured Streaming format name of :class:`FileSinkDataSource`."""

LOG = "_streaming"
"""The adapter's records inside the target directory (Spark and pandas readers skip names
starting with ``_``)."""

QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
"""Local properties Structured Streaming gives the tasks of a micro-batch."""


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
    """A :class:`~absnb.sinks.files.FileSink` into ``directory``, checked writable (else
    SinkConfigurationError)."""
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


def _staged(messages: Sequence[object]) -> list[Staged | None]:
    """Each task's :class:`Staged` transaction from its commit message (None for a task
    that sent none: Spark passes None for a task that failed before committing)."""
    staged = [getattr(m, "staged", None) for m in messages]
    return [s if isinstance(s, Staged) else None for s in staged]


def _define_spark_classes() -> None:
    if all(name in globals() for name in _SPARK_CLASSES):
        return
    from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, WriterCommitMessage
    from pyspark.sql.types import StructType

    @dataclass(frozen=True)
    class StagedMessage(WriterCommitMessage):
        """A task's commit message: its
        :class:`~absnb.runtime.spark.stream_committer.Staged` transaction."""

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
