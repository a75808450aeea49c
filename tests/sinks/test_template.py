"""The two-phase-commit template, script by script against a recording external system."""

from __future__ import annotations

from typing import Any

import pytest

from absnb.core.ids import TaskId
from absnb.protocols.two_phase_commit import TwoPhaseCommitSink, TwoPhaseCommitState
from absnb.sinks import MemorySink, TransactionError, TransactionStore

TASK = TaskId("sink", 0, 2)


class Recording(TwoPhaseCommitSink[str]):
    """Logs every hook call; its external system is a TransactionStore."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.inner = MemorySink()

    def begin_transaction(self, task: str) -> str:
        txn = self.inner.begin_transaction(task)
        self.calls.append(("begin", txn))
        return txn

    def write(self, txn: str, value: Any) -> None:
        self.inner.write(txn, value)

    def pre_commit(self, txn: str, checkpoint_id: int) -> str:
        self.calls.append(("pre_commit", txn))
        return self.inner.pre_commit(txn, checkpoint_id)

    def commit(self, txn: str) -> None:
        self.calls.append(("commit", txn))
        self.inner.commit(txn)

    def abort(self, txn: str) -> None:
        self.calls.append(("abort", txn))
        self.inner.abort(txn)

    def leftovers(self, task: str) -> list[str]:
        return self.inner.leftovers(task)

    def committed(self) -> list[Any]:
        return self.inner.committed()


def started(sink: TwoPhaseCommitSink) -> TwoPhaseCommitState:
    return sink.initialize_state(TASK, sink.initial_state(), False)


def write(sink: TwoPhaseCommitSink, state: TwoPhaseCommitState, *values: Any):
    for v in values:
        state, out = sink.process(state, v)
        assert out == ()
    return state


def test_a_checkpoint_pre_commits_and_its_completion_commits() -> None:
    sink = Recording()
    s = write(sink, started(sink), "a", "b")
    assert sink.committed() == []
    s = sink.snapshot_state(s, 1)
    assert s.pending == ((1, "sink[0]/t1"),)
    assert s.current is None
    assert sink.committed() == []  # pre-committed is not visible
    s = sink.notify_checkpoint_complete(s, 1)
    assert sink.committed() == ["a", "b"]
    assert s.pending == ()


def test_a_checkpoint_without_new_records_pre_commits_nothing() -> None:
    sink = Recording()
    s = sink.snapshot_state(started(sink), 1)
    assert s.pending == ()
    assert sink.calls == []


def test_a_skipped_notification_commits_everything_up_to_n_in_order() -> None:
    sink = Recording()
    s = sink.snapshot_state(write(sink, started(sink), "a"), 1)
    s = sink.snapshot_state(write(sink, s, "b"), 2)
    s = sink.snapshot_state(write(sink, s, "c"), 3)
    s = sink.notify_checkpoint_complete(s, 2)  # the notification of 1 was lost
    assert [c for c in sink.calls if c[0] == "commit"] == [
        ("commit", "sink[0]/t1"),
        ("commit", "sink[0]/t2"),
    ]
    assert s.pending == ((3, "sink[0]/t3"),)
    s = sink.notify_checkpoint_complete(s, 1)  # late: nothing left to commit for 1
    assert s.pending == ((3, "sink[0]/t3"),)
    assert sink.committed() == ["a", "b"]


def test_an_aborted_checkpoint_keeps_its_transaction_for_the_next_one() -> None:
    sink = Recording()
    s = sink.snapshot_state(write(sink, started(sink), "a"), 1)
    s = sink.notify_checkpoint_aborted(s, 1)
    s = sink.snapshot_state(write(sink, s, "b"), 2)
    s = sink.notify_checkpoint_complete(s, 2)
    assert sink.committed() == ["a", "b"]


def test_restore_commits_the_restored_transactions_and_aborts_the_rest() -> None:
    sink = Recording()
    s = sink.snapshot_state(write(sink, started(sink), "a"), 1)
    restored = s  # checkpoint 1 completes, but the sink fails before it hears so
    s = sink.snapshot_state(write(sink, s, "b"), 2)  # pre-committed for 2, never complete
    write(sink, s, "c")  # open when the task fails
    s = sink.initialize_state(TASK, restored, True)
    assert s.pending == ()
    assert s.current is None
    assert sink.committed() == ["a"]
    statuses = {t.name: t.status for t in sink.inner.store.table()}
    assert statuses == {
        "sink[0]/t1": "committed",
        "sink[0]/t2": "aborted",
        "sink[0]/t3": "aborted",
    }
    # a second restore of the same checkpoint commits nothing twice
    sink.initialize_state(TASK, restored, True)
    assert sink.committed() == ["a"]


def test_restore_touches_only_its_own_tasks_transactions() -> None:
    sink = Recording()
    other = sink.initialize_state(TaskId("sink", 1, 2), sink.initial_state(), False)
    write(sink, other, "x")  # sink[1]'s open transaction
    sink.initialize_state(TASK, started(sink), True)
    assert [t.status for t in sink.inner.store.table()] == ["open"]


def test_the_store_refuses_what_transactions_forbid() -> None:
    store = TransactionStore()
    name = store.begin("sink[0]")
    with pytest.raises(TransactionError, match="it is open"):
        store.commit(name)
    store.prepare(name, 1)
    store.abort(name)
    with pytest.raises(TransactionError, match="it is aborted"):
        store.commit(name)
    with pytest.raises(TransactionError, match="no such one"):
        store.write("sink[9]/t9", 1)


def test_end_of_input_pre_commits_for_the_final_checkpoint() -> None:
    """The input ends: the open transaction is pre-committed for END_OF_INPUT, which the
    completion of a checkpoint taken before does not commit; the run's success
    (END_OF_INPUT complete) commits everything pending, in order."""
    from absnb.protocols.two_phase_commit import END_OF_INPUT

    sink = Recording()
    s = sink.snapshot_state(write(sink, started(sink), "a"), 1)
    s, out = sink.end_input(write(sink, s, "b"))
    assert out == ()
    assert s.pending == ((1, "sink[0]/t1"), (END_OF_INPUT, "sink[0]/t2"))
    s = sink.notify_checkpoint_complete(s, 1)  # checkpoint 1 was taken before the end
    assert s.pending == ((END_OF_INPUT, "sink[0]/t2"),)
    assert sink.committed() == ["a"]
    s = sink.notify_checkpoint_complete(s, END_OF_INPUT)
    assert s.pending == ()
    assert sink.committed() == ["a", "b"]
    assert sink.end_input(s) == (s, ())  # nothing open: nothing to pre-commit


def test_the_first_checkpoint_after_the_end_of_input_is_the_final_one() -> None:
    """FLIP-147: a checkpoint taken after the input ended keeps the last transaction
    pending for itself, and its completion commits it."""
    from absnb.protocols.two_phase_commit import END_OF_INPUT

    sink = Recording()
    s, _ = sink.end_input(write(sink, started(sink), "a"))
    assert s.pending == ((END_OF_INPUT, "sink[0]/t1"),)
    s = sink.snapshot_state(s, 3)
    assert s.pending == ((3, "sink[0]/t1"),)
    s = sink.notify_checkpoint_complete(s, 3)
    assert s.pending == ()
    assert sink.committed() == ["a"]
