"""Sinks into a directory of JSON-lines files: exactly-once by two-phase commit, or
at-least-once (seed 004; Flink: ``TwoPhaseCommitSinkFunction``, its file sinks).

:class:`FileSink` runs each transaction as a file in a staging directory:

- begin: create ``_staging/{task}.{nonce}.jsonl`` (the task name is percent-encoded, so it
  can be read back from the file name);
- write: append one JSON line per record;
- pre-commit for checkpoint n: flush, fsync and close the file, then rename it within the
  staging directory to ``part-{n:06d}.{task}.{nonce}.jsonl`` (the name kept in the
  checkpoint now says which checkpoint it belongs to);
- commit: rename it into the target directory under the same name, atomically
  (``os.replace``; then fsync the directory). A file already moved is fine: commit is
  idempotent;
- abort: delete it (already gone: fine);
- on restore: commit the files named in the restored checkpoint, delete every other
  staging file of the task (:meth:`FileSink.leftovers <absnb.sinks.FileSink.leftovers>`).

Records are written as JSON objects, so that ``pandas.read_json(path, lines=True)`` and
``spark.read.json(directory)`` read the output as a table: a tuple becomes
``{"_1": ..., "_2": ...}`` (Spark's names for tuple fields), or the names given as
``columns``; any other value ``v`` becomes ``{"value": v}``.
:meth:`FileSink.committed <absnb.sinks.FileSink.committed>` turns them back into tuples and values.
Values nested inside a record go through JSON as they are (a nested tuple comes back as a list).
Spark ignores the ``_staging`` directory (names starting with ``_`` are hidden from it).

Open files are kept per process (a module dict keyed by path), never in the state: the
state holds file names only, so it pickles into a checkpoint. In the simulator a crashed
task's open file stays open until the restore aborts it.

The files are outside the simulated world: :meth:`Stepper.back
<absnb.Stepper.back>` and the explorer cannot take a write back. Use
:class:`~absnb.sinks.MemorySink` to step backwards.
"""

from __future__ import annotations

import atexit
import json
import os
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO
from urllib.parse import quote, unquote

from absnb.core.ids import CheckpointId, TaskId
from absnb.operators.base import Operator
from absnb.protocols.two_phase_commit import (
    SinkConfigurationError,
    TransactionLostError,
    TwoPhaseCommitSink,
    TxnStatus,
)
from absnb.sinks.memory import TransactionError

SUFFIX = ".jsonl"
PART = "part-"

_OPEN: dict[str, IO[str]] = {}
"""Open transaction files of this process, by absolute path."""


# -- records as JSON objects -------------------------------------------------------------
def encode_record(value: object, columns: Sequence[str] | None = None) -> dict[str, object]:
    """The JSON object a record is written as (see the module docstring)."""
    if columns is not None:
        if not isinstance(value, tuple | list) or len(value) != len(columns):
            raise ValueError(
                f"record {value!r} does not have the {len(columns)} fields {tuple(columns)}: "
                "give the sink columns that match the records, or none"
            )
        return dict(zip(columns, value, strict=True))
    if isinstance(value, tuple):
        return {f"_{i}": v for i, v in enumerate(value, 1)}
    return {"value": value}


def decode_record(obj: Mapping[str, object], columns: Sequence[str] | None = None) -> object:
    """The record :func:`encode_record` wrote as ``obj``."""
    if columns is not None:
        return tuple(obj[c] for c in columns)
    if len(obj) == 1 and "value" in obj:
        return obj["value"]
    return tuple(obj[f"_{i}"] for i in range(1, len(obj) + 1))


def dumps_record(value: object, columns: Sequence[str] | None = None) -> str:
    """One JSON line (with its newline)."""
    return json.dumps(encode_record(value, columns), ensure_ascii=False) + "\n"


# -- names ---------------------------------------------------------------------------------
def encode_task(task: str) -> str:
    """A task name as a file name part with no ``.`` or ``/`` (``sink[0]`` → ``sink%5B0%5D``)."""
    return quote(task, safe="").replace(".", "%2E")


def task_of(name: str) -> str | None:
    """The task a transaction file belongs to (None: not a transaction file)."""
    parts = name.split(".")
    if len(parts) == 4 and parts[0].startswith(PART) and parts[3] == SUFFIX[1:]:
        return unquote(parts[1])
    if len(parts) == 3 and parts[2] == SUFFIX[1:] and not parts[0].startswith(PART):
        return unquote(parts[0])
    return None


def checkpoint_of(name: str) -> CheckpointId | None:
    """The checkpoint a pre-committed or committed file was pre-committed for."""
    head = name.split(".", 1)[0]
    if head.startswith(PART) and head[len(PART) :].isdigit():
        return int(head[len(PART) :])
    return None


def fsync_directory(path: str) -> None:
    """Make the renames and deletions in directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_directory(path: str, what: str, sink: str) -> None:
    """Create ``path`` if needed and prove it writable, or raise SinkConfigurationError."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise SinkConfigurationError(
            f"{sink}: the {what} {path} is a file, not a directory: pass a directory path "
            "(it is created if missing), or move the file away"
        )
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".absnb-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise SinkConfigurationError(
            f"{sink}: cannot write to the {what} {path} ({e.strerror or e}): pass a directory "
            "this process may create files in (check its permissions and that its file "
            "system is not read-only)"
        ) from e


def _read_lines(path: str, columns: Sequence[str] | None) -> list[object]:
    with open(path, encoding="utf-8") as f:
        return [decode_record(json.loads(line), columns) for line in f if line.strip()]


@dataclass(frozen=True, slots=True)
class FileTransaction:
    """A transaction file seen in the file system (aborted ones are deleted, so absent)."""

    name: str
    task: str
    status: TxnStatus
    checkpoint_id: CheckpointId | None
    path: str


class FileSink(TwoPhaseCommitSink[str]):
    """Exactly-once into ``directory``: one JSON-lines file per committed transaction.

    Args:
        directory: where committed files appear (created if missing).
        staging: where transaction files live until they commit; by default
            ``directory/_staging``. It must be on the same file system as ``directory``
            (the commit is a rename).
        columns: names for the fields of tuple records (``("word", "count")``); by default
            ``_1``, ``_2``, ...

    The transaction handle is the file's name in the staging directory.
    """

    clock = staticmethod(time.time)  # transaction ages (with_transaction_timeout)

    def __init__(
        self,
        directory: str | os.PathLike[str],
        staging: str | os.PathLike[str] | None = None,
        *,
        columns: Sequence[str] | None = None,
    ) -> None:
        self.directory = os.path.abspath(os.fspath(directory))
        self.staging = (
            os.path.abspath(os.fspath(staging))
            if staging is not None
            else os.path.join(self.directory, "_staging")
        )
        self.columns = tuple(columns) if columns is not None else None

    # -- configuration ----------------------------------------------------------------------
    def check(self) -> None:
        """Both directories exist (or can be made) and are writable, on one file system."""
        check_directory(self.directory, "target directory", repr(self))
        check_directory(self.staging, "staging directory", repr(self))
        if os.stat(self.directory).st_dev != os.stat(self.staging).st_dev:
            raise SinkConfigurationError(
                f"{self!r}: the staging directory {self.staging} is on another file system "
                f"than {self.directory}, so a commit could not rename atomically: put the "
                "staging directory inside the target directory (the default)"
            )

    def _staged(self, txn: str) -> str:
        return os.path.join(self.staging, txn)

    # -- the hooks ----------------------------------------------------------------------------
    def begin_transaction(self, task: str) -> str:
        os.makedirs(self.staging, exist_ok=True)
        name = f"{encode_task(task)}.{uuid.uuid4().hex}{SUFFIX}"
        path = self._staged(name)
        _OPEN[path] = open(path, "x", encoding="utf-8")  # noqa: SIM115 (closed at pre-commit)
        return name

    def write(self, txn: str, value: object) -> None:
        path = self._staged(txn)
        f = _OPEN.get(path)
        if f is None:  # opened by an earlier incarnation of this process's state
            if not os.path.exists(path):
                raise TransactionError(f"cannot write to transaction {txn!r}: its file is gone")
            f = _OPEN[path] = open(path, "a", encoding="utf-8")  # noqa: SIM115
        f.write(dumps_record(value, self.columns))

    def pre_commit(self, txn: str, checkpoint_id: CheckpointId) -> str:
        """Flush, fsync, close; rename to the name that carries the checkpoint id."""
        path = self._staged(txn)
        f = _OPEN.pop(path, None)
        if f is not None:
            f.flush()
            os.fsync(f.fileno())
            f.close()
        else:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        name = f"{PART}{checkpoint_id:06d}.{txn}"
        os.replace(path, self._staged(name))
        fsync_directory(self.staging)
        return name

    def commit(self, txn: str) -> None:
        """Rename into the target directory; already there: nothing to do."""
        if checkpoint_of(txn) is None:
            raise TransactionError(f"cannot commit transaction {txn!r}: it is not pre-committed")
        target = os.path.join(self.directory, txn)
        try:
            os.replace(self._staged(txn), target)
        except FileNotFoundError:
            if os.path.exists(target):
                return  # committed before (a restore commits again): idempotent
            raise TransactionLostError(
                f"{self!r}: the pre-committed file {txn} is neither in {self.staging} nor in "
                f"{self.directory}: something outside the job deleted it, and its records "
                "are lost"
            ) from None
        fsync_directory(self.directory)

    def abort(self, txn: str) -> None:
        """Close (if open here) and delete the staging file; already gone: fine."""
        path = self._staged(txn)
        f = _OPEN.pop(path, None)
        if f is not None:
            f.close()
        try:
            os.unlink(path)
        except FileNotFoundError:
            return

    def leftovers(self, task: str) -> list[str]:
        """The task's staging files: open or pre-committed, never committed or aborted."""
        try:
            names = os.listdir(self.staging)
        except FileNotFoundError:
            return []
        return sorted(n for n in names if task_of(n) == task)

    def committed(self) -> list[object]:
        """Every record of every committed file, files in name order (checkpoint first)."""
        return [v for path in self.committed_files() for v in _read_lines(path, self.columns)]

    # -- looking at it ------------------------------------------------------------------------
    def committed_files(self) -> list[str]:
        """Paths of the committed files, sorted by name (checkpoint id first)."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return [
            os.path.join(self.directory, n)
            for n in sorted(names)
            if n.startswith(PART) and n.endswith(SUFFIX)
        ]

    def transactions(self) -> list[FileTransaction]:
        """Transaction files in the staging and target directories (for views)."""
        found = []
        for where, committed in ((self.staging, False), (self.directory, True)):
            try:
                names = sorted(os.listdir(where))
            except FileNotFoundError:
                continue
            for n in names:
                task = task_of(n)
                if task is None:
                    continue
                n_id = checkpoint_of(n)
                status: TxnStatus = (
                    "committed" if committed else "open" if n_id is None else "pre-committed"
                )
                found.append(FileTransaction(n, task, status, n_id, os.path.join(where, n)))
        return found

    def reset(self) -> None:
        """Delete every transaction file, committed or not (start a fresh run)."""
        for txn in self.transactions():
            if txn.status != "committed":
                self.abort(txn.name)
            else:
                os.unlink(txn.path)

    def __repr__(self) -> str:
        return f"FileSink({self.directory!r})"


_APPEND: dict[str, IO[str]] = {}
"""Files the at-least-once sink appends to in this process, by absolute path."""


@atexit.register
def _close_files() -> None:
    """At exit, close what is still open (flushed; an open transaction's file stays in
    staging, as a crashed process's would)."""
    for files in (_OPEN, _APPEND):
        for f in files.values():
            f.close()
        files.clear()


class FileAtLeastOnceSink(Operator[str]):
    """Appends every record at once to ``directory/part-{task}.jsonl``, no transactions.

    Each record is flushed (visible to readers) as soon as it is written, and nothing
    written is taken back when the job rolls back to a checkpoint: the records replayed
    after a failure appear twice. At-least-once, for contrast with :class:`FileSink`.
    """

    kind = "sink"
    external = True

    def __init__(
        self, directory: str | os.PathLike[str], *, columns: Sequence[str] | None = None
    ) -> None:
        self.directory = os.path.abspath(os.fspath(directory))
        self.columns = tuple(columns) if columns is not None else None

    def check(self) -> None:
        check_directory(self.directory, "target directory", repr(self))

    def initial_state(self) -> str:
        return ""

    def initialize_state(self, task: TaskId, state: str, recovering: bool) -> str:
        """The state is the task's name: it names the file to append to."""
        return str(task)

    def process(self, state: str, value: object) -> tuple[str, Sequence[object]]:
        path = os.path.join(self.directory, f"{PART}{encode_task(state)}{SUFFIX}")
        f = _APPEND.get(path)
        if f is None or f.closed:
            os.makedirs(self.directory, exist_ok=True)
            f = _APPEND[path] = open(path, "a", encoding="utf-8")  # noqa: SIM115
        f.write(dumps_record(value, self.columns))
        f.flush()
        return state, ()

    def output(self, states: Sequence[str]) -> list[object]:
        return self.committed()

    def committed(self) -> list[object]:
        """Every record written so far."""
        for f in _APPEND.values():
            f.flush()
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        return [
            v
            for n in names
            if n.startswith(PART) and n.endswith(SUFFIX)
            for v in _read_lines(os.path.join(self.directory, n), self.columns)
        ]

    def __repr__(self) -> str:
        return f"FileAtLeastOnceSink({self.directory!r})"
