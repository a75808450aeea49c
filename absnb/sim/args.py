"""Checks of the arguments of :class:`~absnb.sim.world.World`, the schedulers and the
:class:`~absnb.sim.stepper.Stepper`, made when they are called (see
:mod:`absnb.core.validate`)."""

from __future__ import annotations

from absnb.core import validate
from absnb.core.errors import InvalidTypeError
from absnb.core.job import runnable_job


def check_world(
    job: object,
    checkpoint_interval: object,
    max_checkpoints: object,
    allow_deadlock: object,
    notify_steps: object,
) -> None:
    """The arguments of ``World(...)``."""
    runnable_job(job, "World")
    validate.optional_whole("checkpoint_interval", checkpoint_interval, minimum=1)
    validate.optional_whole("max_checkpoints", max_checkpoints, minimum=0)
    validate.flag("allow_deadlock", allow_deadlock)
    if notify_steps is not None:
        validate.flag("notify_steps (or None)", notify_steps)


def check_policy(seed: object, crash_at: object, recovery: object) -> None:
    """The arguments of the automatic schedulers."""
    validate.whole("seed", seed, minimum=0)
    validate.optional_whole("crash_at", crash_at, minimum=0)
    validate.choice("recovery", recovery, ("full", "partial"))


def check_run(until: object, max_steps: object) -> None:
    """The arguments of ``Stepper.run(...)``."""
    if until is not None and not callable(until):
        validate.whole("until (a number of steps, a function of the world, or None)", until)
    validate.whole("max_steps", max_steps, minimum=0)


def check_script(actions: object, start: object) -> None:
    """The arguments of ``ScriptedScheduler(...)``: a list of actions."""
    from absnb.sim.actions import (
        Crash,
        DeclineCheckpoint,
        Deliver,
        Emit,
        EndInput,
        Notify,
        Recover,
        Transfer,
        TriggerCheckpoint,
        Wait,
    )

    kinds = (
        Deliver,
        Emit,
        Transfer,
        TriggerCheckpoint,
        Notify,
        Crash,
        Recover,
        Wait,
        DeclineCheckpoint,
        EndInput,
    )
    if isinstance(actions, str | bytes) or not hasattr(actions, "__iter__"):
        raise InvalidTypeError(f"a script must be a list of actions, not {actions!r:.80}")
    for i, action in enumerate(actions):
        if not isinstance(action, kinds):
            raise InvalidTypeError(
                f"script entry {i} is {action!r:.80}, not an action: use Deliver, Emit, "
                "Transfer, TriggerCheckpoint, Notify, Crash, Recover, Wait, DeclineCheckpoint or "
                "EndInput "
                "(absnb.sim.actions)"
            )
    validate.whole("start", start, minimum=0)


def check_chooser(chooser: object) -> None:
    """``ManualScheduler``'s chooser: a function of (world, enabled actions)."""
    if not callable(chooser):
        raise InvalidTypeError(
            f"ManualScheduler needs a function chooser(world, enabled) -> action or None, "
            f"not {chooser!r:.80}"
        )
