"""A script that hands over to another scheduler: after its end, and where a step taken by
hand left it (the lab's stepper: the counterexample, then what follows)."""

from __future__ import annotations

import pytest

from absnb import Crash, RandomScheduler, Recover, ScriptedScheduler, Stepper, World, word_count
from absnb.core.errors import ActionNotEnabledError, InvalidTypeError


def _script(n: int) -> list:
    stepper = Stepper(World(word_count(), "abs", checkpoint_interval=3), RandomScheduler(seed=4))
    stepper.run(max_steps=n)
    return [e.action for e in stepper.trace]


def test_then_goes_on_after_the_script_as_it_would_alone() -> None:
    script = _script(6)
    job = World(word_count(), "abs", checkpoint_interval=3)
    handed = Stepper(job, ScriptedScheduler(script, then=RandomScheduler(seed=9)))
    handed.run(max_steps=20)
    assert [e.action for e in handed.trace[:6]] == script
    alone = Stepper(World(word_count(), "abs", checkpoint_interval=3), ScriptedScheduler(script))
    alone.run(max_steps=20)
    assert len(alone.trace) == 6  # without then, the run ends with the script
    assert len(handed.trace) == 20


def test_then_chooses_where_a_step_by_hand_left_the_script() -> None:
    script = _script(8)
    world = World(word_count(), "abs", checkpoint_interval=3)
    stepper = Stepper(world, ScriptedScheduler(script, then=RandomScheduler(seed=9)))
    stepper.step()
    stepper.step(Crash(world.graph.task("count[0]")))
    stepper.step(Recover("full"))
    stepper.run(max_steps=10)  # the script's later actions need not be enabled now
    assert len(stepper.trace) == 13
    lone = Stepper(World(word_count(), "abs", checkpoint_interval=3), ScriptedScheduler(script))
    lone.step()
    lone.step(Crash(lone.world.graph.task("count[0]")))
    lone.step(Recover("full"))
    with pytest.raises(ActionNotEnabledError):
        lone.run(max_steps=10)


def test_then_must_be_a_scheduler() -> None:
    with pytest.raises(InvalidTypeError, match="then must be a scheduler"):
        ScriptedScheduler([], then="random")  # type: ignore[arg-type]
