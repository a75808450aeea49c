"""Two-phase commit with a transaction timeout (Flink: setTransactionTimeout,
enableTransactionTimeoutWarnings, ignoreFailuresAfterTransactionTimeout)."""

from __future__ import annotations

import warnings

import pytest

from absnb.core.ids import TaskId
from absnb.protocols.two_phase_commit import SinkConfigurationError, TransactionTimeoutWarning
from absnb.sinks.memory import MemorySink, TransactionStore

TASK = TaskId("sink", 0, 1)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def sink_with_timeout(**kwargs):
    clock = Clock()
    store = TransactionStore()
    sink = MemorySink(store).with_transaction_timeout(10, clock=clock, **kwargs)
    state = sink.initialize_state(TASK, sink.initial_state(), False)
    state, _ = sink.process(state, "a")
    return sink, store, clock, sink.snapshot_state(state, 1)


def test_a_commit_in_time_gives_no_warning():
    sink, store, clock, state = sink_with_timeout()
    clock.now += 5  # half the timeout, below the 0.9 warning ratio
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state = sink.notify_checkpoint_complete(state, 1)
    assert list(store.rows) == ["a"]
    assert state.begun == ()


def test_a_commit_close_to_the_timeout_warns():
    sink, store, clock, state = sink_with_timeout()
    clock.now += 9.5
    with pytest.warns(TransactionTimeoutWarning, match="close to or past the transaction timeout"):
        sink.notify_checkpoint_complete(state, 1)
    assert list(store.rows) == ["a"]


def test_recovery_fails_when_a_timed_out_transaction_cannot_be_committed():
    sink, store, clock, state = sink_with_timeout()
    ((_, txn),) = state.pending
    store.abort(txn)  # the external system's timeout aborted it
    clock.now += 60
    with pytest.raises(Exception, match="cannot commit transaction"):
        sink.initialize_state(TASK, state, True)


def test_recovery_ignores_the_failure_after_the_timeout_when_told_to():
    sink, store, clock, state = sink_with_timeout(ignore_failures_after_timeout=True)
    ((_, txn),) = state.pending
    store.abort(txn)
    clock.now += 60
    with pytest.warns(TransactionTimeoutWarning, match="failure is ignored"):
        restored = sink.initialize_state(TASK, state, True)
    assert restored.pending == ()
    assert list(store.rows) == []


def test_a_failure_before_the_timeout_is_never_ignored():
    sink, store, clock, state = sink_with_timeout(ignore_failures_after_timeout=True)
    ((_, txn),) = state.pending
    store.abort(txn)
    clock.now += 3  # within the timeout: losing it is a real error
    with pytest.raises(Exception, match="cannot commit transaction"):
        sink.initialize_state(TASK, state, True)


@pytest.mark.parametrize(
    ("timeout", "ratio", "match"),
    [(0, 0.9, "above 0, not 0"), ("10", 0.9, "not '10'"), (10, 1.5, "not 1.5")],
)
def test_bad_settings_name_the_value(timeout, ratio, match):
    with pytest.raises(SinkConfigurationError, match=match):
        MemorySink().with_transaction_timeout(timeout, warning_ratio=ratio)


def test_a_sink_without_a_clock_refuses_a_transaction_timeout() -> None:
    class Clockless(MemorySink):
        clock = None  # the template's own default: protocols read no clock

    with pytest.raises(SinkConfigurationError, match="no clock"):
        Clockless().with_transaction_timeout(10)
    assert Clockless().with_transaction_timeout(10, clock=lambda: 0.0).transaction_timeout == 10
