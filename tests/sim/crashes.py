"""Property tests' crashes that happen: a drawn crash point folded into the crash-free run
of the same schedule, so that "after a crash" is what the test checks."""

from __future__ import annotations

from collections.abc import Callable

import absnb
from absnb.sim.actions import PROGRESS, Crash


def run_with_crash(
    world: Callable[[], absnb.World],
    scheduler: Callable[[int | None], object],
    crash: int | None,
) -> absnb.Stepper:
    """Run ``world()`` to the end under ``scheduler(crash_at)``: no crash for ``crash``
    None, else a crash at the ``crash``-th step (modulo their number) of the crash-free run
    at which records could move, the steps the schedulers crash at (the schedule up to the
    crash is the crash-free one: the schedulers are functions of seed and world). ``world``
    makes a new world each time: a two-phase-commit sink's external store belongs to its
    job. Fails if the crash did not happen."""
    crash_at = None
    if crash is not None:
        free = absnb.Stepper(world(), scheduler(None), history=False)
        steps = [i for i, e in enumerate(free.run()) if type(e.action) in PROGRESS]
        crash_at = steps[crash % len(steps)]
    stepper = absnb.Stepper(world(), scheduler(crash_at), history=False)
    stepper.run()
    if crash_at is not None:
        assert any(isinstance(a, Crash) for a in stepper.actions), f"no crash at {crash_at}"
    return stepper
