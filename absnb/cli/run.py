"""``absnb run`` in the simulator: a seeded random schedule, a crash, a saved trace."""

from __future__ import annotations

import argparse
import shlex
import sys

from absnb.cli.drive import drive
from absnb.cli.jobs import default_protocol, make_job
from absnb.cli.progress import Progress
from absnb.cli.report import Report, assess
from absnb.sim.schedulers import RandomScheduler, crash_not_fired
from absnb.sim.stepper import Stepper
from absnb.sim.trace import TraceHeader, save_trace
from absnb.sim.world import World

DEFAULT_INTERVAL = 5


def cmd_run(args: argparse.Namespace) -> int:
    """``absnb run`` (``--runtime sim``)."""
    if args.runtime == "spark":
        from absnb.cli.spark import run_on_spark

        return run_on_spark(args)
    spark_only: dict[str, object] = {
        "input": None,
        "master": "local[*]",
        "source_rate": None,
        "crash_kind": "raise",
        "crash_after_checkpoint": None,
        "save_events": None,
    }
    spark_only["max_restarts"] = 3
    spark_only["tolerable_failed_checkpoints"] = 0  # the simulator writes no storage
    for option, default in spark_only.items():
        if getattr(args, option) != default:
            flag = "--" + option.replace("_", "-")
            args.subparser.error(f"{flag} applies to --runtime spark only")
    interval = DEFAULT_INTERVAL if args.interval is None else args.interval
    if interval != int(interval):
        args.subparser.error(
            f"--interval {interval:g}: the simulator counts steps, so give a whole number"
        )
    interval = int(interval)
    job = make_job(args)
    world = World(
        job,
        args.protocol or default_protocol(job),
        checkpoint_interval=interval or None,
        allow_deadlock=args.allow_deadlock,
        alignment_timeout=steps(args, "alignment_timeout"),
        checkpoint_timeout=steps(args, "checkpoint_timeout"),
    )
    crash_task, crash_at = args.crash or (None, None)
    if crash_task is not None:
        world.graph.task(crash_task)  # a GraphError names the tasks there are
    scheduler = RandomScheduler(
        seed=args.seed, crash_at=crash_at, crash_task=crash_task, recovery=args.recovery
    )
    stepper = Stepper(world, scheduler, history=False)
    with Progress("run", "steps") as progress:
        aborted = drive(stepper, progress)
    header = TraceHeader.of(world)
    report = Report(stepper.world, header, assess(stepper.world), aborted=aborted)
    report.schedule = f"random schedule, seed {args.seed}, " + (
        f"periodic checkpoints more than {interval} steps apart while input remains"
        if interval
        else "no checkpoints"
    )
    report.extra = {"seed": args.seed, "checkpoint_interval": interval or None}
    if crash_task is not None and crash_at is not None:
        why = crash_not_fired(scheduler, stepper.world, stepper.trace)
        report.unfired = why is not None
        report.notes.append(
            f"crash: {crash_task} at step {crash_at}, {args.recovery} recovery"
            if why is None
            else f"crash: {crash_task} at step {crash_at} did not happen: the run ended at "
            f"step {stepper.world.clock}; choose an earlier step"
        )
        report.extra["crash"] = {
            "task": crash_task,
            "step": crash_at,
            "recovery": args.recovery,
            "happened": why is None,
        }
    if args.save_trace:
        command = "absnb " + shlex.join(sys.argv[1:] if args.argv is None else args.argv)
        save_trace(
            args.save_trace, header, stepper.actions, stepper.trace, info={"command": command}
        )
        report.notes.append(f"trace: {len(stepper.actions)} actions saved to {args.save_trace}")
        report.extra["trace"] = args.save_trace
    return report.print(as_json=args.json)


def steps(args: argparse.Namespace, option: str) -> int | None:
    """A timeout option for the simulator, which counts steps: a whole number, or None."""
    value = getattr(args, option)
    if value is None:
        return None
    if value != int(value):
        flag = "--" + option.replace("_", "-")
        args.subparser.error(
            f"{flag} {value:g}: the simulator counts steps, so give a whole number"
        )
    return int(value)
