"""A :class:`~absnb.sinks.TransactionStore` in a directory, for sinks on several processes.

The simulator's :class:`~absnb.sinks.TransactionStore` lives in one Python process; the
hosts of a Spark run are several. :class:`FileTransactionStore` offers the same calls
(``begin``, ``write``, ``prepare``, ``commit``, ``abort``, ``unfinished``, ``status``,
``rows``, ``table``) over a directory that every executor opens by its path, so that a
:class:`~absnb.sinks.MemorySink` (or a lab's subclass of it) runs there unchanged.

A transaction is a file laid out as :class:`~absnb.sinks.files.FileSink` lays them out,
and moved by its code (its renames, its fsyncs):

- open: ``_staging/{task}.{nonce}.jsonl``, one JSON line per record; its name is the
  transaction's handle, which stays the same whatever happens to the file;
- pre-committed for checkpoint n: renamed to ``_staging/part-{n:06d}.{task}.{nonce}.jsonl``
  after a flush and an fsync, and its records' number and SHA-256 written, atomically, to
  ``_staging/_sums/{task}.{nonce}.json``;
- committed: renamed, atomically, into the directory, under the same name (Spark reads
  the directory: ``_staging`` is hidden from it);
- aborted: deleted, with its sums (so a store shows no aborted transaction; asked of one,
  it says there is no such one).

A file whose records do not match its sums (cut short, or changed after its pre-commit)
is refused with :class:`CorruptTransactionError`: a commit does not make it visible, and
reading the committed rows stops at it. Committed rows come in the order of their files'
names (checkpoint id first), not the order of the commits, which processes do not share.

Neither :meth:`~absnb.sinks.TransactionStore.save` nor ``load``: the files are outside
the simulated world, and the stepper and the explorer cannot take them back.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

from absnb.sinks.files import (
    PART,
    SUFFIX,
    FileSink,
    checkpoint_of,
    decode_record,
    fsync_directory,
    task_of,
)
from absnb.sinks.memory import Transaction, TransactionError

if TYPE_CHECKING:
    from absnb.core.ids import CheckpointId
    from absnb.protocols.two_phase_commit import TxnStatus

SUMS = "_sums"
"""The staging directory's folder of pre-committed files' sums."""


class CorruptTransactionError(TransactionError):
    """A transaction's file does not hold what was pre-committed (cut short, a line torn,
    changed since): it is refused rather than committed or read."""


class FileTransactionStore:
    """The calls of :class:`~absnb.sinks.TransactionStore` on files in ``directory``.

    Args:
        directory: where committed transactions appear (created if missing); open and
            pre-committed ones are in its ``_staging`` folder.
        name: the store's name, for views.

    The store holds paths only: it pickles to every Spark executor, each opening the same
    directory (on a cluster, a file system every executor mounts).
    """

    def __init__(self, directory: str | os.PathLike[str], name: str = "store") -> None:
        self.name = name
        self.files = FileSink(directory)

    @property
    def directory(self) -> str:
        """Where committed transactions appear."""
        return self.files.directory

    def check(self) -> None:
        """The directory and its staging folder exist (or can be made) and are writable.

        Raises:
            SinkConfigurationError: either cannot be written, saying why.
        """
        self.files.check()

    # -- what sinks call -------------------------------------------------------------------
    def begin(self, task: str) -> str:
        return self.files.begin_transaction(task)

    def write(self, name: str, value: object) -> None:
        try:
            self.files.write(name, value)
        except TransactionError:
            self._located(name, "write to", ("open",))
            raise

    def prepare(self, name: str, checkpoint_id: CheckpointId) -> None:
        """Flush, fsync and rename the file for ``checkpoint_id``, then write its sums."""
        self._located(name, "pre-commit", ("open",))
        path = self.files.pre_commit(name, checkpoint_id)
        records, digest = _sums(os.path.join(self.files.staging, path))
        sums = os.path.join(self.files.staging, SUMS)
        os.makedirs(sums, exist_ok=True)
        _write_atomically(
            os.path.join(sums, _sums_name(name)),
            json.dumps({"checkpoint_id": checkpoint_id, "records": records, "sha256": digest}),
        )

    def commit(self, name: str) -> None:
        """Idempotent, as :meth:`TransactionStore.commit <absnb.sinks.TransactionStore.commit>`:
        committing a committed transaction does nothing.

        Raises:
            TransactionError: no such transaction, or one still open.
            CorruptTransactionError: its file does not hold what was pre-committed.
        """
        status, path = self._located(name, "commit", ("pre-committed", "committed"))
        if status == "committed":
            return
        self._verified(name, path)
        self.files.commit(os.path.basename(path))

    def abort(self, name: str) -> None:
        """Delete the file and its sums; a transaction already gone is fine (idempotent).

        Raises:
            TransactionError: the transaction is committed.
        """
        status, path = self._find(name)
        if status == "committed":
            raise TransactionError(f"cannot abort transaction {name!r}: it is committed")
        if status is not None:
            self.files.abort(os.path.basename(path))
        try:
            os.unlink(os.path.join(self.files.staging, SUMS, _sums_name(name)))
        except FileNotFoundError:
            return

    def unfinished(self, task: str) -> list[str]:
        """Open and pre-committed transactions of ``task``."""
        return [_handle(n) for n in self.files.leftovers(task)]

    def status(self, name: str) -> TxnStatus | None:
        """Where transaction ``name`` is (None: never begun, or aborted)."""
        return self._find(name)[0]

    @property
    def rows(self) -> tuple[object, ...]:
        """Committed (visible) rows, their files in name order (checkpoint id first).

        Raises:
            CorruptTransactionError: a committed file does not hold what was pre-committed.
        """
        found: list[object] = []
        for path in self.files.committed_files():
            found.extend(self._verified(_handle(os.path.basename(path)), path))
        return tuple(found)

    def table(self) -> list[Transaction]:
        """Every transaction there is (aborted ones are deleted), in name order."""
        table = []
        for txn in self.files.transactions():
            handle = _handle(txn.name)
            rows = (
                self._verified(handle, txn.path)
                if txn.status != "open"
                else self._read(handle, txn.path)
            )
            table.append(Transaction(handle, txn.task, txn.status, rows, txn.checkpoint_id))
        return table

    # -- finding and reading a transaction's file ------------------------------------------
    def _find(self, name: str) -> tuple[TxnStatus | None, str]:
        """The status of transaction ``name`` and its file's path ('' for none)."""
        if task_of(name) is None or checkpoint_of(name) is not None:
            return None, ""
        staged = os.path.join(self.files.staging, name)
        if os.path.exists(staged):
            return "open", staged
        tail = f".{name}"
        places: tuple[tuple[str, TxnStatus], ...] = (
            (self.files.staging, "pre-committed"),
            (self.directory, "committed"),
        )
        for where, status in places:
            try:
                names = os.listdir(where)
            except FileNotFoundError:
                continue
            for n in names:
                if n.startswith(PART) and n.endswith(tail) and checkpoint_of(n) is not None:
                    return status, os.path.join(where, n)
        return None, ""

    def _located(
        self, name: str, what: str, allowed: tuple[TxnStatus, ...]
    ) -> tuple[TxnStatus, str]:
        """:meth:`_find`, or the memory store's error for ``what`` (it names the status)."""
        status, path = self._find(name)
        if status is None:
            raise TransactionError(
                f"cannot {what} transaction {name!r}: there is no such one in {self.directory} "
                "(never begun, or aborted: an aborted transaction's file is deleted)"
            )
        if status not in allowed:
            raise TransactionError(f"cannot {what} transaction {name!r}: it is {status}")
        return status, path

    def _read(self, name: str, path: str) -> tuple[object, ...]:
        """The records of transaction ``name``'s file at ``path``."""
        rows = []
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                try:
                    rows.append(decode_record(json.loads(line)))
                except (ValueError, KeyError, TypeError) as e:
                    raise CorruptTransactionError(
                        f"transaction {name!r}: line {number} of {path} is no record "
                        f"({e}): the file was cut short or changed after it was written; "
                        "its records cannot be trusted, so start the run again with a new "
                        "directory"
                    ) from None
        return tuple(rows)

    def _verified(self, name: str, path: str) -> tuple[object, ...]:
        """The records of the pre-committed or committed file at ``path``, checked against
        the sums its pre-commit wrote."""
        sums_path = os.path.join(self.files.staging, SUMS, _sums_name(name))
        try:
            with open(sums_path, encoding="utf-8") as f:
                sums = json.load(f)
        except FileNotFoundError:
            raise CorruptTransactionError(
                f"transaction {name!r}: its sums ({sums_path}) are missing, so {path} cannot "
                "be checked: something outside the store deleted them; start the run again "
                "with a new directory"
            ) from None
        records, digest = _sums(path)
        if (records, digest) != (sums["records"], sums["sha256"]):
            raise CorruptTransactionError(
                f"transaction {name!r}: {path} holds {records} record(s) (SHA-256 "
                f"{digest[:12]}...), but its pre-commit wrote {sums['records']} "
                f"({sums['sha256'][:12]}...): the file was cut short or changed after its "
                "pre-commit, so it is refused; start the run again with a new directory"
            )
        return self._read(name, path)

    def __repr__(self) -> str:
        return f"FileTransactionStore({self.directory!r})"


def _handle(file_name: str) -> str:
    """A transaction's handle from its file's name (``part-000002.t.x.jsonl`` → ``t.x.jsonl``)."""
    return file_name.split(".", 1)[1] if checkpoint_of(file_name) is not None else file_name


def _sums_name(name: str) -> str:
    return name.removesuffix(SUFFIX) + ".json"


def _sums(path: str) -> tuple[int, str]:
    """How many records (lines) the file at ``path`` holds, and its SHA-256."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        data = f.read()
    digest.update(data)
    return data.count(b"\n"), digest.hexdigest()


def _write_atomically(path: str, text: str) -> None:
    """Write ``text`` to a temporary file, fsync it, rename it to ``path``, fsync the
    directory: readers see the whole file or none."""
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
    fsync_directory(os.path.dirname(path))


__all__ = ["CorruptTransactionError", "FileTransactionStore"]
