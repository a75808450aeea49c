"""Driving a stepper to the end while noting why each aborted checkpoint was aborted."""

from __future__ import annotations

from absnb.cli.progress import Progress
from absnb.sim.actions import Crash
from absnb.sim.events import Event
from absnb.sim.stepper import Stepper

MAX_STEPS = 10_000_000


def drive(stepper: Stepper, progress: Progress | None = None) -> dict[int, str]:
    """Step until the scheduler stops (what :meth:`Stepper.run <absnb.Stepper.run>` does); returns,
    for every checkpoint aborted on the way, why: a crash, or a newer checkpoint that subsumed it.

    Raises:
        ActionNotEnabledError: (from the world) a scripted action is not enabled.
    """
    why: dict[int, str] = {}
    for _ in range(MAX_STEPS):
        event = stepper.step()
        if event is None:
            break
        if event.aborted:
            reason = abort_reason(event)
            for n in event.aborted:
                why[n] = f"aborted at step {event.step}: {reason}"
        if progress is not None:
            progress.update()
    return why


def abort_reason(event: Event) -> str:
    """Why the step of ``event`` aborted checkpoints."""
    if type(event.action) is Crash:
        return f"{event.action.task} crashed before every task had taken its part"
    if event.completed:
        newer = ", ".join(str(n) for n in event.completed)
        return f"subsumed: the newer checkpoint {newer} completed first"
    return "aborted by the coordinator"
