"""The ``absnb`` command line: run a teaching job in the simulator, or replay a trace.

    absnb run --job bank_transfer --seed 3 --crash B@30 --save-trace run.jsonl
    absnb replay run.jsonl --json
    absnb bench --scale 2 --only fig6

``run`` and ``replay`` print every completed snapshot and the verdicts (feasible,
termination, exactly-once, and for the bank the conserved total). Exit code 0 when every
verdict holds, 1 when one fails, 2 for bad input. ``bench`` runs the paper's experiments on
Spark and prints tables (:mod:`absnb.experiments.bench`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from absnb.core.errors import AbsnbError
from absnb.core.ids import ChannelId, TaskId
from absnb.experiments.bench import DEFAULT_SCALE
from absnb.experiments.paper import BASE_REPEAT
from absnb.jobs import BUILDERS, build_job
from absnb.protocols import PROTOCOLS
from absnb.protocols.coordinator import CompletedCheckpoint
from absnb.sim.actions import Crash
from absnb.sim.checks import (
    exactly_once,
    find_deadlock,
    snapshot_problems,
    snapshot_total,
    world_total,
)
from absnb.sim.format import show_value
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.trace import TraceHeader, load_trace, run_trace, save_trace
from absnb.sim.world import World

DEFAULT_PROTOCOL = {"bank_transfer": "chandy-lamport", "word_count": "abs", "cyclic": "abs-cyclic"}
OUTPUT_SHOWN = 12
"""How many output records the text report lists before it says how many more."""


# -- arguments ---------------------------------------------------------------------------------
def crash_spec(text: str) -> tuple[str, int]:
    """``count[1]@40`` -> ("count[1]", 40)."""
    task, sep, step = text.rpartition("@")
    if not sep or not task or not step.isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not TASK@STEP: write the task as printed and the step it crashes "
            "at, e.g. count[1]@40 or B@12"
        )
    return task, int(step)


def accounts_spec(text: str) -> dict[str, int]:
    """``A=10000,B=5000`` -> {"A": 10000, "B": 5000}."""
    accounts: dict[str, int] = {}
    for part in text.split(","):
        name, sep, balance = part.strip().partition("=")
        if not sep or not name or not balance.strip().lstrip("-").isdigit():
            raise argparse.ArgumentTypeError(
                f"{part.strip()!r} is not NAME=BALANCE: write the accounts as A=10000,B=5000"
            )
        accounts[name.strip()] = int(balance)
    return accounts


def natural(text: str) -> int:
    """A whole number >= 0."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    """The ``absnb`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="absnb", description="Distributed snapshots you can step through."
    )
    commands = parser.add_subparsers(dest="command", metavar="{run,replay,bench}", required=True)
    run = commands.add_parser("run", help="run a teaching job with a seeded random schedule")
    run.add_argument("--job", choices=list(BUILDERS), default="bank_transfer")
    run.add_argument(
        "--protocol",
        help=f"one of {', '.join(PROTOCOLS)} (default: chandy-lamport for the bank, abs for "
        "word_count, abs-cyclic for cyclic)",
    )
    run.add_argument(
        "--interval",
        type=natural,
        default=5,
        metavar="N",
        help="steps between periodic checkpoints; 0 for none (default 5)",
    )
    run.add_argument(
        "--seed",
        type=natural,
        default=1,
        metavar="N",
        help="seed of the schedule and of the bank's transfers (default 1)",
    )
    run.add_argument(
        "--crash",
        type=crash_spec,
        metavar="TASK@STEP",
        help="crash a task at a step, e.g. count[1]@40",
    )
    run.add_argument("--recovery", choices=["full", "partial"], default="full")
    run.add_argument(
        "--transfers",
        type=natural,
        metavar="N",
        help="bank: random transfers in the accounts' input logs (default 20)",
    )
    run.add_argument(
        "--accounts",
        type=accounts_spec,
        metavar="A=10000,B=5000",
        help="bank: accounts and their balances",
    )
    run.add_argument(
        "--sink",
        choices=["collect", "two-phase-commit", "at-least-once"],
        help="word_count: what the sinks write to (default collect; two-phase-commit and "
        "at-least-once write to an in-memory external store)",
    )
    run.add_argument(
        "--alignment-timeout",
        type=natural,
        metavar="N",
        help="with abs: switch to unaligned at a task whose alignment lasts N steps",
    )
    run.add_argument(
        "--checkpoint-timeout",
        type=natural,
        metavar="N",
        help="abort a checkpoint still pending N steps after its trigger",
    )
    run.add_argument(
        "--allow-deadlock",
        action="store_true",
        help="run ABS Algorithm 1 on a cyclic graph anyway (it deadlocks)",
    )
    run.add_argument("--save-trace", metavar="FILE", help="write the run as a trace file")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.set_defaults(func=cmd_run, subparser=run)
    rep = commands.add_parser("replay", help="replay a trace file (JSON lines)")
    rep.add_argument("file", help="the trace file")
    rep.add_argument("--json", action="store_true", help="print one JSON object")
    rep.set_defaults(func=cmd_replay, subparser=rep)
    bench = commands.add_parser(
        "bench", help="run the paper's experiments on Spark (local[4]) and print tables"
    )
    bench.add_argument(
        "--scale",
        type=positive,
        default=DEFAULT_SCALE,
        metavar="X",
        help="input size: the 12,086-word text sample read "
        f"{BASE_REPEAT}*X times per run (default {DEFAULT_SCALE:g})",
    )
    bench.add_argument(
        "--only",
        choices=["fig6", "fig7", "alignment", "recovery"],
        action="append",
        help="run only this experiment (repeatable; default: all)",
    )
    bench.add_argument(
        "--repeats",
        type=natural,
        default=1,
        metavar="N",
        help="run Figures 6 and 7 N times over and print medians (default 1)",
    )
    bench.add_argument(
        "--backpressure",
        action="store_true",
        help="run the checkpointing-under-backpressure experiment instead (aligned, "
        "unaligned, aligned with a timeout, at-least-once; simulator and Spark)",
    )
    bench.set_defaults(func=cmd_bench, subparser=bench)
    return parser


def positive(text: str) -> float:
    """A number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number > 0")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        args.argv = None if argv is None else list(argv)
        return args.func(args)
    except SystemExit as e:  # argparse: --help, or a usage error
        return e.code if isinstance(e.code, int) else 2
    except (AbsnbError, OSError) as e:
        print(f"absnb: error: {e}", file=sys.stderr)
        return 2


# -- commands ----------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace) -> int:
    """``absnb run``."""
    world = World(
        build_job(args.job, **job_params(args)),
        args.protocol or DEFAULT_PROTOCOL[args.job],
        checkpoint_interval=args.interval or None,
        allow_deadlock=args.allow_deadlock,
        alignment_timeout=args.alignment_timeout,
        checkpoint_timeout=args.checkpoint_timeout,
    )
    crash_task, crash_at = args.crash or (None, None)
    if crash_task is not None:
        world.graph.task(crash_task)  # a GraphError names the tasks there are
    scheduler = RandomScheduler(
        seed=args.seed, crash_at=crash_at, crash_task=crash_task, recovery=args.recovery
    )
    stepper = Stepper(world, scheduler, history=False)
    stepper.run()
    header = TraceHeader.of(world)
    report = Report(stepper.world, header, assess(stepper.world))
    report.schedule = f"random schedule, seed {args.seed}, " + (
        f"a checkpoint every {args.interval} steps" if args.interval else "no checkpoints"
    )
    report.extra = {"seed": args.seed, "checkpoint_interval": args.interval or None}
    if args.crash:
        report.notes.append(crash_note(stepper, crash_task, crash_at, args.recovery))
        report.extra["crash"] = {
            "task": crash_task,
            "step": crash_at,
            "recovery": args.recovery,
            "happened": any(type(a) is Crash for a in stepper.actions),
        }
    if args.save_trace:
        command = "absnb " + shlex.join(sys.argv[1:] if args.argv is None else args.argv)
        save_trace(
            args.save_trace, header, stepper.actions, stepper.trace, info={"command": command}
        )
        report.notes.append(f"trace: {len(stepper.actions)} actions saved to {args.save_trace}")
        report.extra["trace"] = args.save_trace
    return report.print(as_json=args.json)


def job_params(args: argparse.Namespace) -> dict[str, Any]:
    """The builder arguments ``run`` passes to the job."""
    if args.sink is not None and args.job != "word_count":
        args.subparser.error("--sink applies to --job word_count only")
    if args.job != "bank_transfer":
        for option, value in (("--transfers", args.transfers), ("--accounts", args.accounts)):
            if value is not None:
                args.subparser.error(f"{option} applies to --job bank_transfer only")
        return {} if args.sink is None else {"sink": args.sink}
    params: dict[str, Any] = {"transfers": 20 if args.transfers is None else args.transfers}
    params["seed"] = args.seed
    if args.accounts is not None:
        params["accounts"] = args.accounts
    return params


def crash_note(stepper: Stepper, task: str, step: int, recovery: str) -> str:
    """Whether the requested crash happened."""
    if any(type(a) is Crash for a in stepper.actions):
        return f"crash: {task} at step {step}, {recovery} recovery"
    return (
        f"crash: {task} at step {step} did not happen: the run ended at step "
        f"{stepper.world.clock}; choose an earlier step"
    )


def cmd_replay(args: argparse.Namespace) -> int:
    """``absnb replay FILE``."""
    trace = load_trace(args.file)
    stepper = run_trace(trace)
    report = Report(stepper.world, trace.header, assess(stepper.world))
    report.schedule = f"replay of {args.file}: {len(trace.actions)} actions"
    report.extra = {"trace": args.file}
    return report.print(as_json=args.json)


def cmd_bench(args: argparse.Namespace) -> int:
    """``absnb bench``."""
    from absnb.experiments.bench import print_bench, run_bench
    from absnb.experiments.paper import EXPERIMENTS

    if args.repeats < 1:
        args.subparser.error("--repeats must be at least 1")
    if args.backpressure:
        from absnb.experiments.backpressure import on_spark, print_backpressure, simulate
        from absnb.runtime.spark import SparkRuntime

        sim = simulate()
        runtime = SparkRuntime(master="local[4]")
        try:
            spark = on_spark(runtime, lines=max(20, int(40 * args.scale)))
        finally:
            runtime.spark.stop()
        print_backpressure(sim, spark)
        return 0
    result = run_bench(scale=args.scale, only=args.only or EXPERIMENTS, repeats=args.repeats)
    print_bench(result)
    return 0


# -- verdicts ----------------------------------------------------------------------------------
@dataclass
class Verdicts:
    """What the checks say about a finished (or stopped) run.

    ``terminated`` and ``exactly_once`` are None when a replayed script stops while work
    remains: they cannot be judged then. ``conserved`` is None for jobs other than the bank.
    """

    problems: list[str]
    terminated: bool | None
    deadlock: str | None
    exactly_once: bool | None
    why: str
    conserved: bool | None
    total: int | None

    @property
    def feasible(self) -> bool:
        return not self.problems

    def hold(self) -> bool:
        """True when no verdict failed."""
        return self.feasible and False not in (self.terminated, self.exactly_once, self.conserved)


def assess(world: World) -> Verdicts:
    """Check every completed snapshot, termination, exactly-once and (bank) the total."""
    problems = [p for s in world.snapshots for p in snapshot_problems(world.job, s)]
    deadlock = find_deadlock(world)
    stopped = world.failed is not None or bool(world.progress_actions())
    terminated = False if deadlock else None if world.coordinator.pending and stopped else True
    once, why = judge_exactly_once(world, stopped)
    return Verdicts(
        problems,
        terminated,
        str(deadlock) if deadlock else None,
        once,
        why,
        conserved(world),
        world.job.total,
    )


def judge_exactly_once(world: World, stopped: bool) -> tuple[bool | None, str]:
    """(verdict, explanation): the output against the failure-free output."""
    if world.failed is not None:
        return None, f"not judged: the run stops with {world.failed} failed"
    if stopped:
        return None, f"not judged: the run stops at step {world.clock} with work left to do"
    if exactly_once(world):
        return True, "yes, the output equals the failure-free output"
    if not world.is_finished():
        return False, "no, the run stopped before it consumed all its input"
    return False, "no, the output differs from the failure-free output"


def conserved(world: World) -> bool | None:
    """Bank: every snapshot and the world now add up to the total (None for other jobs)."""
    total = world.job.total
    if total is None:
        return None
    if any(snapshot_total(s) != total for s in world.snapshots):
        return False
    return world.failed is not None or world_total(world) == total


# -- the report --------------------------------------------------------------------------------
@dataclass
class Report:
    """A run's world, its header (job and protocol) and verdicts, ready to print."""

    world: World
    header: TraceHeader
    verdicts: Verdicts
    schedule: str = ""
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def print(self, *, as_json: bool) -> int:
        """Print the report; returns the exit code (0 when every verdict holds, else 1)."""
        if as_json:
            print(json.dumps(report_json(self), indent=2, ensure_ascii=False))
        else:
            print("\n".join(report_lines(self)))
        return 0 if self.verdicts.hold() else 1


def report_lines(report: Report) -> list[str]:
    """The text report."""
    world = report.world
    lines = [topology_line(world)]
    if report.schedule:
        lines.append(report.schedule)
    lines.extend(report.notes)
    if not world.coordinator.completed:
        lines.append("no checkpoint completed")
    for done in world.coordinator.completed:
        lines.extend(snapshot_lines(world, done))
    lines.append(f"output: {show_output(world.output())}")
    for label, values in in_transit(world).items():
        lines.append(f"in transit on {label}: [{', '.join(show_state(x) for x in values)}]")
    lines.extend(verdict_lines(report.verdicts))
    lines.append(f"{world.clock} steps")
    return lines


def in_transit(world: World) -> dict[str, list[Any]]:
    """What is still in transit at the end (a stopped script, a deadlock), by channel."""
    return {str(c): world.channel_values(c) for c, q in world.channels.items() if q}


def topology_line(world: World) -> str:
    """``bank_transfer with chandy-lamport: 2 tasks, 2 channels``."""
    g = world.graph
    line = f"{world.job.builder} with {world.protocol.name}: {len(g.tasks)} tasks, "
    line += f"{len(g.channels)} channels"
    loops = [str(c) for c in g.channels if c in g.back_edges]
    if loops and world.protocol.capabilities.treats_loops_apart:
        line += f", {len(loops)} loop channel{'s' if len(loops) > 1 else ''} ({', '.join(loops)})"
    return line


def snapshot_lines(world: World, done: CompletedCheckpoint) -> list[str]:
    """One completed snapshot: every task's state and every recorded channel."""
    snap = done.snapshot
    g = world.graph
    lines = [
        f"checkpoint {snap.checkpoint_id}: triggered at step {done.triggered_at}, "
        f"complete at step {done.completed_at}"
    ]
    width = max(len(str(t)) for t in snap.tasks)
    for t, part in snap.tasks.items():
        kind = g.kind(t)
        if kind == "source":
            shown = f"offset {part.offset}"
        elif kind == "process":
            shown = f"{show_state(part.state)}  (offset {part.offset})"
        else:
            shown = show_state(part.state)
        lines.append(f"  {t!s:<{width}}  {shown}")
    values = snap.channel_values()
    if not values:
        lines.append(f"  channels: none ({world.protocol.without_channel_state})")
    word = (
        "channel"
        if world.protocol.channel_state_kind == "channel state"
        else (world.protocol.channel_state_kind)
    )
    for label, vs in values.items():
        lines.append(f"  {word} {label}: [{', '.join(show_state(v) for v in vs)}]")
    return lines


def verdict_lines(v: Verdicts) -> list[str]:
    """The verdicts, one per line (with details indented)."""
    lines = ["feasible: " + ("yes, every completed snapshot is consistent" if v.feasible else "no")]
    lines.extend(f"  {p}" for p in v.problems)
    if v.deadlock:
        lines.append(f"termination: no, {v.deadlock}")
    elif v.terminated is None:
        lines.append("termination: not judged: the run stops while a checkpoint is pending")
    else:
        lines.append("termination: yes, every checkpoint completed")
    lines.append(f"exactly-once: {v.why}")
    if v.conserved is not None:
        total = show_value(v.total)
        lines.append(
            f"conserved: yes, {total} in every snapshot and at the end"
            if v.conserved
            else f"conserved: no, the money does not add up to {total}"
        )
    return lines


def show_state(value: Any) -> str:
    """An operator state or record for the text report."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return "{" + ", ".join(f"{show_value(k)}: {show_state(x)}" for k, x in items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(show_state(x) for x in value) + "]"
    return show_value(value)


def show_output(output: Any) -> str:
    """The job's output: ``A=6,800, B=8,200`` or ``11 records: (be, 1), ...``."""
    if isinstance(output, dict):
        return ", ".join(f"{k}={show_state(x)}" for k, x in output.items())
    if isinstance(output, list):
        shown = ", ".join(show_state(x) for x in output[:OUTPUT_SHOWN])
        more = f", ... ({len(output) - OUTPUT_SHOWN} more)" if len(output) > OUTPUT_SHOWN else ""
        return f"{len(output)} records: {shown}{more}"
    return show_state(output)


# -- JSON --------------------------------------------------------------------------------------
def report_json(report: Report) -> dict[str, Any]:
    """The report as one JSON-ready object."""
    world, v = report.world, report.verdicts
    g = world.graph
    return {
        "job": report.header.job,
        "params": json_safe(report.header.params),
        "protocol": world.protocol.name,
        "topology": {
            "tasks": [str(t) for t in g.tasks],
            "channels": [str(c) for c in g.channels],
            "back_edges": [str(c) for c in g.channels if c in g.back_edges],
        },
        "snapshots": [snapshot_json(c) for c in world.coordinator.completed],
        "output": json_safe(world.output()),
        "in_transit": json_safe(in_transit(world)),
        "verdicts": {
            "feasible": v.feasible,
            "problems": v.problems,
            "terminated": v.terminated,
            "deadlock": v.deadlock,
            "exactly_once": v.exactly_once,
            "conserved": v.conserved,
        },
        "steps": world.clock,
        **json_safe(report.extra),
    }


def snapshot_json(done: CompletedCheckpoint) -> dict[str, Any]:
    """One completed snapshot as a JSON-ready object."""
    snap = done.snapshot
    return {
        "checkpoint_id": snap.checkpoint_id,
        "triggered_at": done.triggered_at,
        "completed_at": done.completed_at,
        "tasks": {
            str(t): {"state": json_safe(part.state), "offset": part.offset}
            for t, part in snap.tasks.items()
        },
        "channels": json_safe(snap.channel_values()),
    }


def json_safe(value: Any) -> Any:
    """``value`` with dict keys as strings, tuples and sets as lists, ids as their names."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (TaskId, ChannelId)):
        return str(value)
    if isinstance(value, dict):
        return {json_key(k): json_safe(x) for k, x in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(x) for x in value]
    if isinstance(value, (set, frozenset)):
        return sorted((json_safe(x) for x in value), key=repr)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return str(value)


def json_key(key: Any) -> str:
    """A dict key as a JSON object key: names as they are, numbers as digits, others as JSON."""
    if isinstance(key, (str, TaskId, ChannelId)):
        return str(key)
    if isinstance(key, (bool, int, float)) or key is None:
        return json.dumps(key)
    return json.dumps(json_safe(key))
