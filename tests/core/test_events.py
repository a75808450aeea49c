"""The event vocabulary and the consistent-cut check read from snapshot rows alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.core.events import KINDS, EventRow, cut_problems


def snapshot(task: str, n: int, sent=None, consumed=None, recorded=None) -> EventRow:
    return EventRow(0.0, 0, task, "snapshot", None, n, None, sent or {}, consumed or {}, recorded)


@given(
    sent=st.integers(min_value=0, max_value=10_000),
    recorded=st.integers(min_value=0, max_value=10_000),
)
def test_a_cut_is_consistent_when_sent_equals_consumed_plus_recorded(sent, recorded) -> None:
    recorded = min(recorded, sent)
    rows = [
        snapshot("a", 1, sent={"a->b": sent}),
        snapshot("b", 1, consumed={"a->b": sent - recorded}, recorded={"a->b": recorded}),
    ]
    assert cut_problems(rows, [1]) == []


@given(sent=st.integers(min_value=0, max_value=10_000), off=st.integers(1, 50))
def test_a_tampered_count_is_a_problem_naming_checkpoint_and_channel(sent, off) -> None:
    rows = [
        snapshot("a", 3, sent={"a->b": sent}),
        snapshot("b", 3, consumed={"a->b": sent + off}),
    ]
    (problem,) = cut_problems(rows, [3])
    assert problem.startswith("checkpoint 3, channel a->b:")


def test_a_completed_checkpoint_without_the_receivers_snapshot_is_a_problem() -> None:
    rows = [snapshot("a", 2, sent={"a->b": 4})]
    assert cut_problems(rows, [2]) == [
        "checkpoint 2, channel a->b: the receiver's snapshot is missing"
    ]
    assert cut_problems(rows, []) == []  # only completed checkpoints are checked
    assert "no task's snapshot" in cut_problems(rows, [5])[0]


def test_an_unknown_kind_is_refused_naming_the_kinds() -> None:
    with pytest.raises(ValueError, match="unknown event kind 'barier'"):
        EventRow(0.0, 0, "a", "barier")
    assert "barrier" in KINDS
    assert "abort_txn" in KINDS
