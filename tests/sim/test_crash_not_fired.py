"""A crash asked of the simulator's schedulers that cannot happen is refused or reported:
a task that does not exist at the Stepper's call, a step after the run's end by a warning
at the end of ``run()`` (as the Spark runtime warns of a failure that never fired)."""

from __future__ import annotations

import warnings

import pytest

import absnb
from absnb.core.errors import FailureNotFiredWarning
from absnb.sim.actions import Crash
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper


def run(crash_at: int) -> tuple[Stepper, list[warnings.WarningMessage]]:
    stepper = Stepper(
        absnb.World(absnb.word_count()),
        RandomScheduler(seed=1, crash_at=crash_at, crash_task="count[1]"),
        history=False,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stepper.run()
    return stepper, caught


def test_a_crash_after_the_end_is_warned_of_with_the_step_the_run_ended_at() -> None:
    stepper, caught = run(10_000)
    assert not any(isinstance(a, Crash) for a in stepper.actions)
    (w,) = caught
    assert w.category is FailureNotFiredWarning
    end = stepper.world.clock
    assert str(w.message) == (
        f"crash_at=10000: the run ended at step {end}, before the crash was due, so no task "
        f"crashed; use a crash_at below {end}"
    )
    assert w.filename == __file__  # points at the caller's run(), not into absnb


def test_a_crash_that_happens_is_not_warned_of() -> None:
    stepper, caught = run(10)
    assert [str(a) for a in stepper.actions if isinstance(a, Crash)] == ["crash count[1]"]
    assert caught == []


def test_a_run_stopped_early_by_the_caller_is_not_warned_of() -> None:
    stepper = Stepper(absnb.World(absnb.word_count()), RandomScheduler(seed=1, crash_at=10_000))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stepper.run(until=5)  # the run has not ended: the crash may still come
    with pytest.warns(FailureNotFiredWarning):
        stepper.run()
