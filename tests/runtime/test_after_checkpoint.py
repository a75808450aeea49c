"""``Failure(task, after_checkpoint=k)``: armed when the task hears that checkpoint k (or
a newer one) completed, fired at the records it consumes after that."""

from __future__ import annotations

import pytest

from absnb.core.errors import InvalidValueError
from absnb.runtime.failures import Failure, InjectedFailure, Injections


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
