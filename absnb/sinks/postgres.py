"""Exactly-once into PostgreSQL with real prepared transactions (seed 004; Flink:
``TwoPhaseCommitSinkFunction``, as its JDBC exactly-once sink uses XA).

Each sink subtask writes through a connection of its own (psycopg 3, imported only when
this sink is used). A transaction is a database transaction:

- begin (at the first record after a pre-commit): ``BEGIN`` on a connection of this
  process; records are buffered and inserted in batches (``INSERT`` into ``table``:
  ``id``, ``task``, ``record jsonb``);
- pre-commit for checkpoint n: insert the rest, insert a marker row into
  ``{table}_transactions``, then ``PREPARE TRANSACTION 'absnb:{job}:{task}:{n}:{nonce}'``:
  the transaction survives the connection, the process and a server restart, and stays
  invisible. The name is the handle kept in the checkpoint;
- commit: ``COMMIT PREPARED``. Idempotent: a prepared transaction ends only by COMMIT
  PREPARED or ROLLBACK PREPARED, so if its name is no longer in ``pg_prepared_xacts``, it
  has ended, and its marker row (written inside it) is visible exactly when it committed.
  Committing again finds the marker and does nothing; no marker means it was rolled back,
  and the sink raises :class:`~absnb.protocols.two_phase_commit.TransactionLostError`;
- abort: ``ROLLBACK`` of an open transaction held by this process, ``ROLLBACK PREPARED``
  of a prepared one (gone already: fine);
- on restore: commit the transactions named in the restored checkpoint, then roll back
  the task's other prepared transactions (found by name prefix in ``pg_prepared_xacts``)
  and its open ones held by this process.

An open transaction of a crashed process needs nothing: PostgreSQL rolls it back when its
connection closes. The simulator's crash closes nothing, so open transactions are kept per
process by handle (``_OPEN``) and :meth:`PostgresSink.leftovers` names them, so that the
restore rolls them back.

The server needs ``max_prepared_transactions`` > 0 (PostgreSQL's default is 0); at least
the sink's parallelism times the checkpoints that may be pending at once, plus one.
:meth:`PostgresSink.check` says so before the job starts.
:class:`~absnb.sinks.pg_server.PostgresServer` starts a throwaway server for tests.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from absnb.core.ids import CheckpointId
from absnb.protocols.two_phase_commit import (
    SinkConfigurationError,
    TransactionLostError,
    TwoPhaseCommitSink,
    TxnStatus,
)
from absnb.sinks.files import decode_record, encode_record
from absnb.sinks.memory import TransactionError

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow
    from psycopg.sql import Identifier

PREFIX = "absnb"
MAX_GID = 200  # PostgreSQL's limit on a prepared transaction's name, in bytes


def _psycopg() -> ModuleType:
    try:
        import psycopg
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise SinkConfigurationError(
            "PostgresSink needs psycopg 3: pip install 'psycopg[binary]'"
        ) from e
    return psycopg


@dataclass
class _Open:
    """An open transaction of this process: its connection and rows not yet inserted."""

    conn: Connection[TupleRow]
    task: str
    rows: list[dict[str, object]] = field(default_factory=list)
    written: int = 0


_IDLE: dict[str, list[Connection[TupleRow]]] = {}
"""Connections of this process with no transaction, by DSN."""
_OPEN: dict[tuple[str, str], _Open] = {}
"""Open transactions of this process, by (DSN, handle)."""


def _connect(dsn: str, timeout: int = 10) -> Connection[TupleRow]:
    idle = _IDLE.get(dsn)
    while idle:
        conn = idle.pop()
        if not conn.closed:
            return conn
    _psycopg()  # refuses with a message when psycopg is missing
    from psycopg import Connection

    return Connection.connect(dsn, autocommit=True, connect_timeout=timeout)


def _release(dsn: str, conn: Connection[TupleRow]) -> None:
    if not conn.closed:
        _IDLE.setdefault(dsn, []).append(conn)


def close_connections(dsn: str | None = None) -> None:
    """Close this process's connections (to ``dsn``, or all), rolling back what is open."""
    for key in [k for k in _OPEN if dsn is None or k[0] == dsn]:
        _OPEN.pop(key).conn.close()
    for d in [d for d in _IDLE if dsn is None or d == dsn]:
        for conn in _IDLE.pop(d):
            conn.close()


def safe_dsn(dsn: str) -> str:
    """``dsn`` without its password, for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        parts = conninfo_to_dict(dsn)
        parts.pop("password", None)
        return make_conninfo("", **parts)
    except Exception:
        return "<the DSN given>"


@dataclass(frozen=True, slots=True)
class PostgresTransaction:
    """A transaction seen in the database (rolled-back ones leave no trace)."""

    name: str
    task: str
    status: TxnStatus
    checkpoint_id: CheckpointId | None


class PostgresSink(TwoPhaseCommitSink[str]):
    """Exactly-once into the PostgreSQL table ``table`` (see the module docstring).

    Args:
        dsn: a libpq connection string or URL.
        table: the table the records go to (created if missing), and ``{table}_transactions``
            for the commit markers.
        job: names this job's transactions (``absnb:{job}:{task}:{n}:{nonce}``), so that
            jobs writing to one server find only their own on restore.
        batch: records inserted per statement.
        columns: names for the fields of tuple records in the JSON (see
            :func:`~absnb.sinks.files.encode_record`).
        connect_timeout: seconds to wait for a connection.

    The handle of an open transaction is ``absnb:{job}:{task}:{nonce}``; pre-commit returns
    the prepared name, which adds the checkpoint id.
    """

    clock = staticmethod(time.time)  # transaction ages (with_transaction_timeout)

    def __init__(
        self,
        dsn: str,
        table: str = "absnb_output",
        *,
        job: str = "absnb",
        batch: int = 500,
        columns: Sequence[str] | None = None,
        connect_timeout: int = 10,
    ) -> None:
        if not table or not all(part.isidentifier() for part in table.split(".")):
            raise SinkConfigurationError(
                f"PostgresSink: table name {table!r} is not a plain identifier: use letters, "
                "digits and underscores (optionally schema.table)"
            )
        self.dsn = dsn
        self.table = table
        self.job = job
        self.batch = max(1, batch)
        self.columns = tuple(columns) if columns is not None else None
        self.connect_timeout = connect_timeout
        if len(self._prefix("x" * 40)) + 50 > MAX_GID:
            raise SinkConfigurationError(
                f"PostgresSink: job name {job!r} is too long for a transaction name "
                f"({MAX_GID} bytes at most): use a shorter one"
            )

    # -- names -------------------------------------------------------------------------------
    def _prefix(self, task: str) -> str:
        return f"{PREFIX}:{quote(self.job, safe='')}:{quote(task, safe='')}:"

    @staticmethod
    def task_of(name: str) -> str:
        """The task a transaction name belongs to."""
        return unquote(name.split(":")[2])

    @staticmethod
    def checkpoint_of(name: str) -> CheckpointId | None:
        """The checkpoint a prepared transaction was prepared for (None: open)."""
        parts = name.split(":")
        return int(parts[3]) if len(parts) == 5 else None

    def _sql(self) -> ModuleType:
        from psycopg import sql

        return sql

    def _ident(self, suffix: str = "") -> Identifier:
        from psycopg.sql import Identifier

        parts = self.table.split(".")
        parts[-1] += suffix
        return Identifier(*parts)

    # -- configuration ---------------------------------------------------------------------
    def check(self) -> None:
        """The server accepts connections and can prepare transactions; the tables exist."""
        psycopg = _psycopg()
        try:
            conn = _connect(self.dsn, self.connect_timeout)
        except psycopg.Error as e:
            raise SinkConfigurationError(
                f"PostgresSink cannot connect to {safe_dsn(self.dsn)}: "
                f"{str(e).strip() or type(e).__name__}. Start the server (or a throwaway one: "
                "absnb.sinks.pg_server.PostgresServer) or fix the connection string"
            ) from e
        try:
            row = conn.execute("SHOW max_prepared_transactions").fetchone()
            assert row is not None  # SHOW answers one row
            (n,) = row
            if int(n) == 0:
                raise SinkConfigurationError(
                    f"the PostgreSQL server at {safe_dsn(self.dsn)} has "
                    "max_prepared_transactions = 0, so it cannot PREPARE TRANSACTION, which "
                    "two-phase commit needs: set max_prepared_transactions (at least the sink's "
                    "parallelism times 2, e.g. 20) in postgresql.conf, or with -c on the "
                    "server's command line, and restart the server"
                )
            self._create_tables(conn)
        finally:
            _release(self.dsn, conn)

    def _create_tables(self, conn: Connection[TupleRow]) -> None:
        sql = self._sql()
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (id bigserial PRIMARY KEY, task text NOT NULL, "
                "record jsonb NOT NULL)"
            ).format(self._ident())
        )
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (gid text PRIMARY KEY, task text NOT NULL, "
                "checkpoint bigint NOT NULL, rows bigint NOT NULL, "
                "prepared_at timestamptz NOT NULL DEFAULT now())"
            ).format(self._ident("_transactions"))
        )

    # -- the hooks ----------------------------------------------------------------------------
    def begin_transaction(self, task: str) -> str:
        conn = _connect(self.dsn, self.connect_timeout)
        try:
            conn.execute("BEGIN")
        except Exception:
            conn.close()
            raise
        name = f"{self._prefix(task)}{uuid.uuid4().hex}"
        _OPEN[(self.dsn, name)] = _Open(conn, task)
        return name

    def write(self, txn: str, value: object) -> None:
        o = _OPEN.get((self.dsn, txn))
        if o is None:
            raise TransactionError(
                f"cannot write to transaction {txn!r}: it is not open in this process"
            )
        o.rows.append(encode_record(value, self.columns))
        o.written += 1
        if len(o.rows) >= self.batch:
            self._flush(o)

    def _flush(self, o: _Open) -> None:
        if not o.rows:
            return
        from psycopg.types.json import Jsonb

        sql = self._sql()
        with o.conn.cursor() as cur:
            cur.executemany(
                sql.SQL("INSERT INTO {} (task, record) VALUES (%s, %s)").format(self._ident()),
                [(o.task, Jsonb(r)) for r in o.rows],
            )
        o.rows.clear()

    def pre_commit(self, txn: str, checkpoint_id: CheckpointId) -> str:
        """Insert the rest and the marker, then PREPARE TRANSACTION under the name that adds
        the checkpoint id."""
        o = _OPEN.pop((self.dsn, txn), None)
        if o is None:
            raise TransactionError(
                f"cannot pre-commit transaction {txn!r}: it is not open in this process"
            )
        head, nonce = txn.rsplit(":", 1)
        gid = f"{head}:{checkpoint_id}:{nonce}"
        sql = self._sql()
        try:
            self._flush(o)
            o.conn.execute(
                sql.SQL(
                    "INSERT INTO {} (gid, task, checkpoint, rows) VALUES (%s, %s, %s, %s)"
                ).format(self._ident("_transactions")),
                (gid, o.task, checkpoint_id, o.written),
            )
            o.conn.execute(sql.SQL("PREPARE TRANSACTION {}").format(sql.Literal(gid)))
        except Exception:
            o.conn.close()  # the server rolls the transaction back
            raise
        _release(self.dsn, o.conn)
        return gid

    def commit(self, txn: str) -> None:
        """COMMIT PREPARED; a transaction no longer prepared whose marker is visible was
        committed before: nothing to do (see the module docstring)."""
        if self.checkpoint_of(txn) is None:
            raise TransactionError(f"cannot commit transaction {txn!r}: it is not prepared")
        psycopg, sql = _psycopg(), self._sql()
        conn = _connect(self.dsn, self.connect_timeout)
        try:
            try:
                conn.execute(sql.SQL("COMMIT PREPARED {}").format(sql.Literal(txn)))
                return
            except psycopg.errors.UndefinedObject:
                pass  # not prepared (any more)
            marker = conn.execute(
                sql.SQL("SELECT 1 FROM {} WHERE gid = %s").format(self._ident("_transactions")),
                (txn,),
            ).fetchone()
            if marker is None:
                raise TransactionLostError(
                    f"{self!r}: the prepared transaction {txn} was rolled back (it is neither "
                    "prepared nor committed): its records are lost; was it rolled back by hand?"
                )
        finally:
            _release(self.dsn, conn)

    def abort(self, txn: str) -> None:
        """ROLLBACK an open transaction of this process, ROLLBACK PREPARED a prepared one;
        ended already (or open in a process that is gone): nothing to do."""
        o = _OPEN.pop((self.dsn, txn), None)
        if o is not None:
            try:
                o.conn.execute("ROLLBACK")
            except Exception:
                o.conn.close()
            else:
                _release(self.dsn, o.conn)
            return
        if self.checkpoint_of(txn) is None:
            return  # open in another process: the server rolls it back with its connection
        psycopg, sql = _psycopg(), self._sql()
        conn = _connect(self.dsn, self.connect_timeout)
        try:
            conn.execute(sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(txn)))
        except psycopg.errors.UndefinedObject:
            pass
        finally:
            _release(self.dsn, conn)

    def leftovers(self, task: str) -> list[str]:
        """The task's prepared transactions (``pg_prepared_xacts``) and its transactions
        open in this process."""
        prefix = self._prefix(task)
        conn = _connect(self.dsn, self.connect_timeout)
        try:
            rows = conn.execute(
                "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() "
                "AND starts_with(gid, %s) ORDER BY prepared",
                (prefix,),
            ).fetchall()
        finally:
            _release(self.dsn, conn)
        opened = [h for (d, h), o in _OPEN.items() if d == self.dsn and h.startswith(prefix)]
        return [gid for (gid,) in rows] + sorted(opened)

    def committed(self) -> list[object]:
        """Every committed record, from the table."""
        sql = self._sql()
        conn = _connect(self.dsn, self.connect_timeout)
        try:
            rows = conn.execute(
                sql.SQL("SELECT record FROM {} ORDER BY id").format(self._ident())
            ).fetchall()
        finally:
            _release(self.dsn, conn)
        return [decode_record(r, self.columns) for (r,) in rows]

    # -- looking at it ------------------------------------------------------------------------
    def transactions(self) -> list[PostgresTransaction]:
        """This job's transactions: committed (markers), prepared, and open in this process."""
        sql = self._sql()
        prefix = f"{PREFIX}:{quote(self.job, safe='')}:"
        conn = _connect(self.dsn, self.connect_timeout)
        try:
            done = conn.execute(
                sql.SQL(
                    "SELECT gid FROM {} WHERE starts_with(gid, %s) ORDER BY prepared_at, gid"
                ).format(self._ident("_transactions")),
                (prefix,),
            ).fetchall()
            prepared = conn.execute(
                "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() "
                "AND starts_with(gid, %s) ORDER BY prepared",
                (prefix,),
            ).fetchall()
        finally:
            _release(self.dsn, conn)
        found = [
            PostgresTransaction(g, self.task_of(g), "committed", self.checkpoint_of(g))
            for (g,) in done
        ]
        found += [
            PostgresTransaction(g, self.task_of(g), "pre-committed", self.checkpoint_of(g))
            for (g,) in prepared
        ]
        found += [
            PostgresTransaction(h, o.task, "open", None)
            for (d, h), o in _OPEN.items()
            if d == self.dsn and h.startswith(prefix)
        ]
        return found

    def reset(self) -> None:
        """Roll back this job's unfinished transactions and drop its tables (a fresh run)."""
        for t in self.transactions():
            if t.status != "committed":
                self.abort(t.name)
        sql = self._sql()
        conn = _connect(self.dsn, self.connect_timeout)
        try:
            for suffix in ("", "_transactions"):
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._ident(suffix)))
        finally:
            _release(self.dsn, conn)

    def __repr__(self) -> str:
        return f"PostgresSink({safe_dsn(self.dsn)!r}, {self.table!r})"
