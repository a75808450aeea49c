"""Two-phase commit of Structured Streaming micro-batches into a sink, without Spark.

What :mod:`absnb.runtime.spark.structured_streaming`'s writers call: each task's
:meth:`StreamCommitter.write` writes its rows into a new transaction of the sink and
pre-commits it; the driver's :meth:`StreamCommitter.commit` records its decision, commits
every transaction and records the batch as committed, once per batch id, and
:meth:`StreamCommitter.abort` aborts. The records (:class:`BatchLog`: ``committed/``,
``pending/`` and ``tasks/`` of one query) are files, written atomically and durably; the
module docstring of :mod:`absnb.runtime.spark.structured_streaming` says how they make each
micro-batch exactly once. Nothing here imports pyspark: tests drive it with plain tuples.
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from absnb.core.errors import AbsnbError
from absnb.protocols.two_phase_commit import TwoPhaseCommitSink
from absnb.sinks.files import fsync_directory

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
