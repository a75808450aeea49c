"""The PostgreSQL sink against a throwaway server: prepared transactions named by job, task
and checkpoint, idempotent COMMIT PREPARED, ROLLBACK (PREPARED), the restore, and clear
errors before the job starts for a server that refuses the connection or cannot prepare
transactions. (Crash at every phase and the Hypothesis property run it too:
test_sim_phases.py, test_sim_properties.py.)"""

from __future__ import annotations

import json
import pickle
import socket
import subprocess
import sys

import pytest

import absnb
from absnb.core.ids import TaskId
from absnb.sim.world import World
from absnb.sinks import SinkConfigurationError, TransactionLostError
from absnb.sinks.pg_server import PostgresServer
from tests.sinks.harness import LINES, postgres_sinks, unfinished
from tests.sinks.pg import postgres_missing, skip_or_fail

TASK = TaskId("sink", 0, 2)


@pytest.fixture
def sink(pg_server):
    return postgres_sinks(pg_server.dsn)()


@pytest.fixture
def db(pg_server):
    """A connection of the test's own (autocommit): what another client sees."""
    import psycopg

    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        yield conn


def started(sink, task: TaskId = TASK):
    sink.check()
    return sink.initialize_state(task, sink.initial_state(), False)


def write(sink, state, *values):
    for v in values:
        state, _ = sink.process(state, v)
    return state


def prepared(db) -> list[str]:
    return [g for (g,) in db.execute("SELECT gid FROM pg_prepared_xacts ORDER BY gid")]


def visible(db, sink) -> int:
    return db.execute(f"SELECT count(*) FROM {sink.table}").fetchone()[0]


def test_pre_commit_prepares_a_named_transaction_and_commit_makes_it_visible(sink, db) -> None:
    s = write(sink, started(sink), ("to", 1), ("be", 1))
    assert visible(db, sink) == 0  # open: nobody else sees the rows
    s = sink.snapshot_state(s, 3)
    ((n, gid),) = s.pending
    assert n == 3
    assert gid.startswith(f"absnb:{sink.job}:sink%5B0%5D:3:")  # job, task, checkpoint
    assert gid in prepared(db)
    assert visible(db, sink) == 0  # prepared: durable, still invisible
    s = sink.notify_checkpoint_complete(s, 3)
    assert gid not in prepared(db)
    assert sorted(sink.committed()) == [("be", 1), ("to", 1)]
    sink.commit(gid)  # again: the marker says it committed, nothing happens
    assert visible(db, sink) == 2
    (marker,) = db.execute(f"SELECT gid, task, checkpoint, rows FROM {sink.table}_transactions")
    assert marker == (gid, "sink[0]", 3, 2)


def test_rows_are_inserted_in_batches_inside_the_transaction(pg_server, db) -> None:
    from absnb.sinks.postgres import PostgresSink

    sink = PostgresSink(pg_server.dsn, "batched", job="batched", batch=2)
    s = write(sink, started(sink), *range(5))
    assert visible(db, sink) == 0
    (busy,) = db.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'"
    ).fetchone()
    assert busy >= 1  # the open transaction holds its inserted batches
    s = sink.notify_checkpoint_complete(sink.snapshot_state(s, 1), 1)
    assert sorted(sink.committed()) == [0, 1, 2, 3, 4]


def test_abort_rolls_back_open_and_prepared_transactions_idempotently(sink, db) -> None:
    s = sink.snapshot_state(write(sink, started(sink), "a"), 1)
    ((_, gid),) = s.pending
    s = write(sink, s, "b")
    sink.abort(gid)
    sink.abort(gid)
    sink.abort(s.current)
    sink.abort(s.current)
    assert prepared(db) == []
    assert unfinished(sink) == []
    assert sink.committed() == []


def test_committing_a_rolled_back_transaction_is_an_error(sink, db) -> None:
    ((_, gid),) = sink.snapshot_state(write(sink, started(sink), "a"), 1).pending
    db.execute(f"ROLLBACK PREPARED '{gid}'")  # behind the job's back
    with pytest.raises(TransactionLostError, match="rolled back"):
        sink.commit(gid)


def test_restore_commits_the_restored_and_rolls_back_the_rest(sink, db) -> None:
    other = write(sink, started(sink, TaskId("sink", 1, 2)), "x")  # sink[1]: not touched
    other = sink.snapshot_state(other, 1)
    s = sink.snapshot_state(write(sink, started(sink), "a"), 1)
    restored = s  # checkpoint 1 completes, the task fails before it hears so
    s = sink.snapshot_state(write(sink, s, "b"), 2)  # prepared for 2, never complete
    write(sink, s, "c")  # open when the task fails (its connection stays open here)
    assert len(sink.leftovers("sink[0]")) == 3
    sink.initialize_state(TASK, restored, True)
    assert sink.committed() == ["a"]
    assert sink.leftovers("sink[0]") == []
    assert prepared(db) == [other.pending[0][1]]
    sink.initialize_state(TASK, restored, True)  # a second restore commits nothing twice
    assert sink.committed() == ["a"]


def test_an_open_transaction_of_a_dead_connection_is_rolled_back_by_the_server(sink, db) -> None:
    from absnb.sinks import postgres

    s = write(sink, started(sink), "a", "b")
    postgres._OPEN[(sink.dsn, s.current)].conn.close()  # as when its process dies
    s = sink.initialize_state(TASK, sink.initial_state(), True)  # no checkpoint to restore
    assert unfinished(sink) == []
    s = sink.notify_checkpoint_complete(sink.snapshot_state(write(sink, s, "c"), 1), 1)
    assert sink.committed() == ["c"]


def test_the_sink_pickles_without_its_connections(sink) -> None:
    write(sink, started(sink), "a")
    again = pickle.loads(pickle.dumps(sink))
    assert (again.dsn, again.table, again.job) == (sink.dsn, sink.table, sink.job)


# -- bad input ---------------------------------------------------------------------------
def test_a_server_that_refuses_the_connection_fails_before_the_job_starts(pg_server) -> None:
    from absnb.sinks.postgres import PostgresSink

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sink = PostgresSink(f"host=127.0.0.1 port={port} user=absnb password=secret dbname=x", "t")
    with pytest.raises(SinkConfigurationError, match="cannot connect") as err:
        World(absnb.word_count(LINES, sink=sink))
    assert "Start the server" in str(err.value)
    assert "secret" not in str(err.value)


def test_a_server_without_prepared_transactions_fails_before_the_job_starts() -> None:
    if postgres_missing():
        skip_or_fail(postgres_missing())
    from absnb.sinks.postgres import PostgresSink

    with PostgresServer(max_prepared_transactions=0) as server:
        sink = PostgresSink(server.dsn, "t")
        with pytest.raises(SinkConfigurationError, match="max_prepared_transactions = 0"):
            World(absnb.word_count(LINES, sink=sink))


def test_a_table_name_that_is_not_an_identifier_is_refused() -> None:
    from absnb.sinks.postgres import PostgresSink

    with pytest.raises(SinkConfigurationError, match="identifier"):
        PostgresSink("host=x", "words; DROP TABLE x")


def test_psycopg_is_imported_only_when_the_postgres_sink_is_used() -> None:
    probe = (
        "import json, sys, absnb, absnb.sinks\n"
        "absnb.sinks.FileSink\n"
        "before = 'psycopg' in sys.modules\n"
        "sink = absnb.sinks.PostgresSink('host=x', 't')\n"
        "print(json.dumps([before, 'absnb.sinks.postgres' in sys.modules,\n"
        "                  'psycopg' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == [False, True, False]  # used: check() imports it


def test_the_throwaway_server_flushes_to_disk_only_when_durable(db) -> None:
    """A commit waits a few milliseconds for the disk only on a durable server (the test
    runs' thousands of ``PREPARE TRANSACTION`` do not)."""
    flushing = ("fsync", "synchronous_commit", "full_page_writes")
    assert [db.execute(f"SHOW {name}").fetchone()[0] for name in flushing] == ["off"] * 3
    import psycopg

    with PostgresServer(durable=True) as server, psycopg.connect(server.dsn) as durable:
        assert [durable.execute(f"SHOW {name}").fetchone()[0] for name in flushing] == ["on"] * 3
