"""Which failures fired, read from a run's event log, and what is said of those that did
not (the Spark runtime's ``run.failures_not_fired``), without Spark."""

from __future__ import annotations

from absnb.core.events import EventRow
from absnb.runtime.failures import Failure, fired, not_fired


def row(kind: str, task: str, attempt: int = 0) -> EventRow:
    return EventRow(time=1.0, attempt=attempt, task=task, kind=kind)


RAISE = Failure("count[1]", after_records=5)
KILL = Failure("count[0]", after_records=5, kind="kill")
DECLINE = Failure("sink[0]", during_checkpoint=2, kind="decline")
LATER = Failure("count[1]", after_records=5, attempt=1)


def test_a_failure_fired_when_its_row_is_in_its_attempt() -> None:
    rows = [row("failure", "count[1]"), row("declined", "sink[0]")]
    assert fired(RAISE, rows, ["boom"])
    assert not fired(LATER, rows, ["boom"])  # its row would be in attempt 1
    assert fired(DECLINE, rows, [])  # a decline fires as a declined row, not a failure
    assert not fired(DECLINE, [row("failure", "sink[0]")], [])


def test_a_kill_fired_when_its_attempt_failed_even_without_a_row() -> None:
    assert fired(KILL, [], ["lost executor"])  # a killed process sends no log
    assert not fired(KILL, [], [])


def test_what_is_said_of_each_failure_that_did_not_fire() -> None:
    rows = [row("failure", "count[1]")]
    unfired = not_fired([RAISE, KILL, DECLINE, LATER], rows, [], {"count[0]": 3})
    assert list(unfired) == [KILL, DECLINE, LATER]
    assert "count[0] consumed 3 records in attempt 0" in unfired[KILL]
    assert "waited for 5 records" in unfired[KILL]
    assert "checkpoint 2 did not reach it" in unfired[DECLINE]
    assert "the run ended in attempt 0; fail an earlier attempt" in unfired[LATER]
