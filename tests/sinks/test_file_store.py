"""The file-backed transaction store: the memory store's calls on files that several
processes share, a second commit refused through the lab's sink (recover_and_commit
accepts one), and a transaction file cut short or changed refused with a clear error.
(Crash at every phase and the Hypothesis property run it too, as the ``file-store`` sink
kind: test_sim_phases.py, test_sim_properties.py.)"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import re
from pathlib import Path

import pytest

from absnb.labs import TransactionalSink
from absnb.sinks import MemorySink, SinkConfigurationError, TransactionError
from absnb.sinks.file_store import CorruptTransactionError, FileTransactionStore
from absnb.sinks.files import SUFFIX


def prepared(store: FileTransactionStore, *values: object, n: int = 1) -> str:
    txn = store.begin("sink[0]")
    for v in values:
        store.write(txn, v)
    store.prepare(txn, n)
    return txn


def test_a_transaction_goes_open_pre_committed_committed(tmp_path: Path) -> None:
    store = FileTransactionStore(tmp_path / "out")
    store.check()
    txn = store.begin("sink[0]")
    store.write(txn, ("to", 1))
    store.write(txn, "be")
    assert store.status(txn) == "open"
    assert store.unfinished("sink[0]") == [txn]
    assert store.unfinished("sink[1]") == []
    store.prepare(txn, 2)
    assert store.status(txn) == "pre-committed"
    assert store.unfinished("sink[0]") == [txn]  # the handle stays the same
    assert store.rows == ()  # durable, not visible
    (row,) = store.table()
    assert (row.name, row.task, row.status, row.rows, row.checkpoint_id) == (
        txn,
        "sink[0]",
        "pre-committed",
        (("to", 1), "be"),
        2,
    )
    store.commit(txn)
    store.commit(txn)  # the store's commit is idempotent, as the memory store's
    assert store.status(txn) == "committed"
    assert store.rows == (("to", 1), "be")
    assert store.unfinished("sink[0]") == []
    assert sorted(os.listdir(tmp_path / "out")) == ["_staging", f"part-000002.{txn}"]


def test_a_transaction_in_the_wrong_status_is_refused_as_the_memory_store_does(
    tmp_path: Path,
) -> None:
    store = FileTransactionStore(tmp_path)
    txn = store.begin("sink[0]")
    with pytest.raises(TransactionError, match=r"cannot commit transaction .*: it is open"):
        store.commit(txn)
    store.write(txn, 1)
    store.prepare(txn, 1)
    with pytest.raises(TransactionError, match=r"cannot write to .*: it is pre-committed"):
        store.write(txn, 2)
    with pytest.raises(TransactionError, match=r"cannot pre-commit .*: it is pre-committed"):
        store.prepare(txn, 2)
    store.commit(txn)
    with pytest.raises(TransactionError, match=r"cannot abort .*: it is committed"):
        store.abort(txn)
    gone = prepared(store, 3)
    store.abort(gone)
    store.abort(gone)  # idempotent
    assert store.status(gone) is None
    with pytest.raises(TransactionError, match=r"no such one .*never begun, or aborted"):
        store.commit(gone)
    assert store.rows == (1,)


def test_the_lab_s_sink_refuses_a_second_commit_but_recover_and_commit_takes_it(
    tmp_path: Path,
) -> None:
    sink = TransactionalSink(FileTransactionStore(tmp_path))
    txn = prepared(sink.store, "a")  # type: ignore[arg-type]
    sink.commit(txn)
    with pytest.raises(TransactionError, match=r"it is committed already .*recover_and_commit"):
        sink.commit(txn)
    sink.recover_and_commit(txn)  # committed before the failure: nothing to do
    sink.recover_and_commit(txn)
    other = prepared(sink.store, "b")  # type: ignore[arg-type]
    sink.recover_and_commit(other)  # pre-committed: committed now
    assert sorted(sink.committed()) == ["a", "b"]


@pytest.mark.parametrize("cut", ["a line", "a byte"])
def test_a_pre_committed_file_cut_short_is_refused_at_its_commit(tmp_path: Path, cut) -> None:
    store = FileTransactionStore(tmp_path)
    txn = prepared(store, ("to", 1), ("be", 2))
    (path,) = (t for t in store.files.transactions() if t.status == "pre-committed")
    data = Path(path.path).read_bytes()
    Path(path.path).write_bytes(data[: data.index(b"\n") + 1] if cut == "a line" else data[:-1])
    with pytest.raises(CorruptTransactionError, match="cut short or changed after its pre-commit"):
        store.commit(txn)
    assert store.status(txn) == "pre-committed"  # not made visible
    assert store.rows == ()


def test_a_committed_file_changed_or_without_its_sums_is_refused_when_read(
    tmp_path: Path,
) -> None:
    store = FileTransactionStore(tmp_path)
    txn = prepared(store, ("to", 1))
    store.commit(txn)
    (path,) = (t.path for t in store.files.transactions())
    Path(path).write_text('{"_1": "to", "_2": 1}\n{"_1": "or", "_')  # a torn last line
    with pytest.raises(
        CorruptTransactionError, match=rf"transaction '{re.escape(txn)}': .* holds 1 record\(s\)"
    ):
        store.rows  # noqa: B018
    os.unlink(tmp_path / "_staging" / "_sums" / txn.replace(SUFFIX, ".json"))
    with pytest.raises(CorruptTransactionError, match=r"its sums .* are missing"):
        store.rows  # noqa: B018


def test_a_torn_line_of_an_open_transaction_is_named(tmp_path: Path) -> None:
    store = FileTransactionStore(tmp_path)
    txn = store.begin("sink[0]")
    (tmp_path / "_staging" / txn).write_text('{"value": "a"}\n{"val')
    with pytest.raises(CorruptTransactionError, match=r"line 2 of .* is no record"):
        store.table()


def _pre_commit_in_a_child(directory: str, queue: multiprocessing.Queue) -> None:
    store = FileTransactionStore(directory)
    queue.put(prepared(store, "from the child", n=4))


def test_another_process_s_transaction_is_committed_here(tmp_path: Path) -> None:
    """What a Spark executor pre-committed, another (the restarted task's) commits."""
    store = pickle.loads(pickle.dumps(FileTransactionStore(tmp_path)))  # paths only
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_pre_commit_in_a_child, args=(str(tmp_path), queue))
    child.start()
    txn = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    assert store.unfinished("sink[0]") == [txn]
    store.commit(txn)
    assert store.rows == ("from the child",)


def test_a_directory_that_cannot_be_written_is_refused_by_the_sink_s_check(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SinkConfigurationError, match="is a file, not a directory"):
        MemorySink(FileTransactionStore(blocker)).check()
