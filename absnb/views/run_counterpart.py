"""The simulated counterpart of a real run: the same job and protocol, stepped to its end
by the simulator under a seeded random scheduler, for :func:`absnb.views.show_run` to draw
beside the real run."""

from __future__ import annotations

from absnb.core.job import Job
from absnb.jobs import build_job
from absnb.sim.events import Event
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World


def simulate_like(
    run: object, *, job: Job | None = None, seed: int = 0, checkpoint_interval: int = 5
) -> tuple[list[Event], World]:
    """``(trace, world)`` of ``job`` (default: the real run's job, built by its name with
    the classroom-sized input) under the real run's protocol, run to its end with
    ``RandomScheduler(seed)`` and a checkpoint every ``checkpoint_interval`` steps. Same
    run, seed and interval: the same trace.

    Raises:
        ValueError: ``run`` names no protocol or no job (a log read back from a file):
            pass ``job=`` and build the world yourself, or ``simulated=(trace, world)``.
    """
    protocol = getattr(run, "protocol", "")
    name = getattr(getattr(run, "graph", None), "name", "")
    if not protocol or (job is None and not name):
        raise ValueError(
            f"{run!r:.60} names no protocol or job to simulate: pass show_run "
            "simulated=(stepper.trace, stepper.world) of a run you stepped yourself"
        )
    job = build_job(name) if job is None else job
    world = World(job, protocol, checkpoint_interval=checkpoint_interval)
    stepper = Stepper(world, RandomScheduler(seed=seed), history=False)
    stepper.run()
    return stepper.trace, stepper.world
