"""``Failure(task, after_checkpoint=k)``: armed when the task hears that checkpoint k (or
a newer one) completed, fired at the records it consumes after that."""

from __future__ import annotations

import pytest

import absnb
from absnb import datasets
from absnb.core.errors import InvalidValueError
from absnb.jobs.word_count import word_count
from absnb.runtime.failures import Failure, InjectedFailure, Injections, committing_to
from absnb.runtime.host.pacing import HOLD_SECONDS, SourcePacing
from absnb.runtime.plan import HostPlan
from absnb.runtime.spark import SparkRuntime, final_counts, quiet_task_failures, word_count_answer


def test_fires_only_after_the_checkpoint_completed_and_the_records_more() -> None:
    fired = []
    f = Failure("count[1]", after_checkpoint=2, after_records=10)
    inj = Injections([f], 0, on_fire=lambda failure, why: fired.append(why))
    inj.after_records("count[1]", 1_000)  # many records, no checkpoint yet: nothing
    inj.notified("count[1]", 1, after_commit=True)  # an older checkpoint: nothing
    inj.after_records("count[1]", 2_000)
    inj.notified("count[1]", 2, after_commit=False)  # before its commit: not yet armed
    inj.notified("count[1]", 2, after_commit=True)
    inj.notified("count[0]", 2, after_commit=True)  # another task's notify arms nothing
    inj.after_records("count[1]", 2_009)
    assert fired == []
    with pytest.raises(InjectedFailure, match="after checkpoint 2 completed and 10 records"):
        inj.after_records("count[1]", 2_010)
    assert len(fired) == 1


def test_a_newer_checkpoint_arms_it_and_one_record_fires_it() -> None:
    inj = Injections([Failure("sink[0]", after_checkpoint=2)], 0)
    inj.notified("sink[0]", 3, after_commit=True)
    with pytest.raises(InjectedFailure):
        inj.after_records("sink[0]", 1)


def test_another_attempt_never_fires() -> None:
    inj = Injections([Failure("sink[0]", after_checkpoint=1)], 1)
    inj.notified("sink[0]", 1, after_commit=True)
    inj.after_records("sink[0]", 100)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"after_checkpoint": 0}, "after_checkpoint"),
        ({"after_checkpoint": 1, "during_checkpoint": 1}, "takes only after_records"),
        ({"after_checkpoint": 1, "notified": 1}, "takes only after_records"),
    ],
)
def test_bad_after_checkpoint_specs_are_refused(kwargs, message) -> None:
    with pytest.raises(InvalidValueError, match=message):
        Failure("count[1]", **kwargs)


class _Sink:  # a two-phase-commit sink's state: what it has pre-committed, per checkpoint
    def __init__(self, *pending: int) -> None:
        self.pending = tuple((n, f"txn-{n}") for n in pending)


def test_a_sink_fails_between_its_two_phases_only_with_a_transaction_to_commit() -> None:
    f = Failure("sink[0]", notified=1)
    inj = Injections([f], 0)
    # checkpoint 1 completes, but sink[0] had no record to pre-commit by its snapshot
    inj.notified("sink[0]", 1, after_commit=False, committing=committing_to(_Sink(), 1))
    # checkpoint 1's notice was subsumed: 3 completes, and sink[0] holds checkpoint 2's
    with pytest.raises(InjectedFailure, match="notified of checkpoint 3, before its commit"):
        inj.notified("sink[0]", 3, after_commit=False, committing=committing_to(_Sink(2), 3))


def test_what_a_notice_has_to_commit() -> None:
    assert not committing_to(_Sink(), 1)
    assert not committing_to(_Sink(4), 3)  # pre-committed for a newer checkpoint only
    assert committing_to(_Sink(1, 4), 3)
    assert committing_to(object(), 1)  # not a two-phase-commit sink: always


def test_notified_fires_at_a_newer_checkpoint_for_any_other_task() -> None:
    inj = Injections([Failure("count[0]", notified=2, after_commit=True)], 0)
    inj.notified("count[0]", 2, after_commit=False)
    with pytest.raises(InjectedFailure):
        inj.notified("count[0]", 5, after_commit=True)


def pacing(*failures: Failure, attempt: int = 0) -> SourcePacing:
    plan = HostPlan(word_count(), "abs", 0, (), b"s", ("127.0.0.1", 1), "file:///x", "job")
    plan.failures, plan.attempt = failures, attempt
    return SourcePacing(plan)


def test_sources_hold_half_their_input_until_the_checkpoint_completes(monkeypatch) -> None:
    clock = [1_000.0]
    monkeypatch.setattr("absnb.runtime.host.pacing.time.monotonic", lambda: clock[0])
    p = pacing(Failure("count[1]", after_checkpoint=3), Failure("sink[0]", after_checkpoint=2))
    assert p.hold_for == 2  # the first checkpoint any failure waits for
    assert p.before_hold(0, 100, notified=0) == 50  # up to half of the 100 entries
    assert p.before_hold(40, 60, notified=1) == 10
    assert p.before_hold(50, 50, notified=1) == 0  # held at half
    assert p.before_hold(50, 50, notified=2) == 50  # checkpoint 2 completed: the rest
    clock[0] += HOLD_SECONDS - 0.1
    assert p.before_hold(50, 50, notified=1) == 0
    clock[0] += HOLD_SECONDS + 0.1  # held too long: the run goes on, the failure unfired
    assert p.before_hold(50, 50, notified=1) == 50


def test_no_hold_without_an_after_checkpoint_failure_in_this_attempt() -> None:
    assert pacing().before_hold(50, 50, notified=0) == 50
    assert pacing(Failure("count[1]", after_records=5)).before_hold(50, 50, notified=0) == 50
    # during or told of a checkpoint: it may be the final one, which comes only once the
    # input has ended (a hold would wait out HOLD_SECONDS for it)
    for waits in ({"during_checkpoint": 1}, {"notified": 1}):
        assert pacing(Failure("sink[0]", **waits)).before_hold(50, 50, notified=0) == 50
    later = Failure("count[1]", after_checkpoint=1, attempt=1)
    assert pacing(later).before_hold(50, 50, notified=0) == 50
    assert pacing(later, attempt=1).before_hold(50, 50, notified=0) == 0


def test_a_failure_waiting_for_a_late_checkpoint_fires_on_a_short_input(spark, tmp_path) -> None:
    """1,000 lines read in a blink and checkpoint 2 due only after 2 s: without the hold the
    input ended long before it and the failure never fired (a run on a loaded machine)."""
    lines = datasets.text_partitions("large")[:2]
    runtime = SparkRuntime(spark, checkpoint_dir=str(tmp_path / "checkpoints"))
    with quiet_task_failures(spark):
        run = runtime.run(
            absnb.word_count(lines),
            "abs",
            checkpoint_interval=1.0,
            failures=[Failure("count[1]", after_checkpoint=2)],
        )
    assert run.failures_not_fired == {}
    assert run.restarts == 1
    df = run.events
    failed = df[df.kind == "failure"].time.min()
    assert 2 in set(df[(df.kind == "completed") & (df.time < failed)].checkpoint)
    assert final_counts(run.output) == word_count_answer(spark, lines)
