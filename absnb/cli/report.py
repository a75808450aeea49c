"""The report of a simulated run or replay: verdicts, the text report and the JSON object.

Exit codes: 0 when every verdict holds (feasible, termination, exactly-once and, for the
bank, conserved); 1 when one fails, or when the run stops while a checkpoint is pending or
with a task failed and not recovered; 2 for bad input. A script that stops with records
left but no checkpoint pending exits 0: exactly-once is then "not judged".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from absnb.core.format import show_value
from absnb.core.ids import ChannelId, TaskId
from absnb.i18n import gettext as _
from absnb.protocols.coordinator import CompletedCheckpoint, PendingCheckpoint
from absnb.sim.checks import (
    exactly_once,
    find_deadlock,
    snapshot_problems,
    snapshot_total,
    world_total,
)
from absnb.sim.trace import TraceHeader
from absnb.sim.world import World

K = TypeVar("K")

OUTPUT_SHOWN = 12
"""How many output records the text report lists before it says how many more."""


# -- verdicts ----------------------------------------------------------------------------------
@dataclass
class Verdicts:
    """What the checks say about a finished (or stopped) run.

    ``terminated`` is None when the run stops while a checkpoint is pending (it cannot be
    judged then), ``exactly_once`` None when it stops with work left or a task failed.
    ``conserved`` is None for jobs other than the bank.
    """

    problems: list[str]
    terminated: bool | None
    deadlock: str | None
    exactly_once: bool | None
    why: str
    conserved: bool | None
    total: int | None
    pending: list[str] = field(default_factory=list)
    """Why each checkpoint still pending at the end has not completed."""
    failed: bool = False
    """The run stops with a task failed and not recovered."""

    @property
    def feasible(self) -> bool:
        return not self.problems

    def hold(self) -> bool:
        """True when no verdict fails, no checkpoint is left pending and no task is left
        failed. (A script that stops with records left but nothing pending holds: its
        exactly-once is not judged, the rest is.)"""
        return (
            self.feasible
            and self.terminated is True
            and self.exactly_once is not False
            and self.conserved is not False
            and not self.failed
        )


def assess(world: World) -> Verdicts:
    """Check every completed snapshot, termination, exactly-once and (bank) the total."""
    problems = [p for s in world.snapshots for p in snapshot_problems(world.job, s)]
    deadlock = find_deadlock(world)
    stopped = world.failed is not None or bool(world.progress_actions())
    pending = [pending_line(world, p) for p in world.coordinator.pending.values()]
    terminated = False if deadlock else None if pending else True
    once, why = judge_exactly_once(world, stopped)
    return Verdicts(
        problems,
        terminated,
        str(deadlock) if deadlock else None,
        once,
        why,
        conserved(world),
        world.job.total,
        pending,
        world.failed is not None,
    )


def pending_line(world: World, p: PendingCheckpoint, when: str = "") -> str:
    """``checkpoint 2 is still pending at the end: ... waiting for B``."""
    missing = [str(t) for t in world.graph.tasks if t not in p.acknowledged]
    return (
        f"checkpoint {p.checkpoint_id} is still pending at the end: triggered at "
        f"{when or f'step {p.triggered_at}'}, acknowledged by {len(p.acknowledged)} of "
        f"{len(world.graph.tasks)} tasks (waiting for {', '.join(missing)})"
    )


def judge_exactly_once(world: World, stopped: bool) -> tuple[bool | None, str]:
    """(verdict, explanation): the output against the failure-free output."""
    if world.failed is not None:
        return None, _("not judged: the run stops with {task} failed").format(task=world.failed)
    if stopped:
        why = _("not judged: the run stops at step {n} with work left to do")
        return None, why.format(n=world.clock)
    if exactly_once(world):
        return True, _("yes, the output equals the failure-free output")
    if not world.is_finished():
        return False, _("no, the run stopped before it consumed all its input")
    return False, _("no, the output differs from the failure-free output")


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
    """A run's world, its header (job and protocol) and verdicts, ready to print.

    ``aborted`` says why each aborted checkpoint was aborted; ``times``, when the trace
    gave times, is every step's time."""

    world: World
    header: TraceHeader
    verdicts: Verdicts
    schedule: str = ""
    notes: list[str] = field(default_factory=list)
    extra: dict[str, object] = field(default_factory=dict)
    aborted: dict[int, str] = field(default_factory=dict)
    times: list[float] | None = None
    unfired: bool = False

    def print(self, *, as_json: bool) -> int:
        """Print the report; returns the exit code (0 when every verdict holds and every
        crash asked for happened, else 1)."""
        if as_json:
            print(json.dumps(report_json(self), indent=2, ensure_ascii=False))
        else:
            print("\n".join(report_lines(self)))
        return 0 if self.verdicts.hold() and not self.unfired else 1

    def at(self, step: int) -> str:
        """``step 3``, or ``step 3 (t=2.5)`` when the trace gave times."""
        if self.times is None or not 0 <= step < len(self.times):
            return f"step {step}"
        return f"step {step} (t={show_value(self.times[step])})"


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
        lines.extend(snapshot_lines(report, done))
    for n, why in sorted(report.aborted.items()):
        lines.append(f"checkpoint {n}: {why}")
    for p in world.coordinator.pending.values():
        lines.append(pending_line(world, p, report.at(p.triggered_at)))
    lines.append(f"output: {show_output(world.output())}")
    for label, values in in_transit(world).items():
        lines.append(f"in transit on {label}: [{', '.join(show_state(x) for x in values)}]")
    lines.extend(verdict_lines(report.verdicts, len(report.aborted)))
    lines.append(f"{world.clock} steps")
    return lines


def in_transit(world: World) -> dict[str, list[object]]:
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


def snapshot_lines(report: Report, done: CompletedCheckpoint) -> list[str]:
    """One completed snapshot: every task's state and every recorded channel."""
    world = report.world
    snap = done.snapshot
    g = world.graph
    lines = [
        f"checkpoint {snap.checkpoint_id}: triggered at {report.at(done.triggered_at)}, "
        f"complete at {report.at(done.completed_at)}"
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
    state_kind = world.protocol.channel_state_kind
    word = "channel" if state_kind == "channel state" else state_kind
    for label, vs in values.items():
        lines.append(f"  {word} {label}: [{', '.join(show_state(v) for v in vs)}]")
    return lines


def verdict_lines(v: Verdicts, aborted: int = 0) -> list[str]:
    """The verdicts, one per line (with details indented)."""
    lines = [
        _("feasible: yes, every completed snapshot is consistent")
        if v.feasible
        else _("feasible: no")
    ]
    lines.extend(f"  {p}" for p in v.problems)
    if v.deadlock:
        lines.append(_("termination: no, {why}").format(why=v.deadlock))
    elif v.terminated is None:
        pending = (
            _("termination: not judged: the run stops while {n} checkpoints are pending")
            if len(v.pending) > 1
            else _("termination: not judged: the run stops while {n} checkpoint is pending")
        )
        lines.append(pending.format(n=len(v.pending)))
    elif aborted:
        left = _("termination: yes, no checkpoint is left pending ({n} aborted, see above)")
        lines.append(left.format(n=aborted))
    else:
        lines.append(_("termination: yes, every checkpoint completed"))
    lines.append(_("exactly-once: {why}").format(why=v.why))
    if v.conserved is not None:
        total = show_value(v.total)
        conserved = (
            _("conserved: yes, {total} in every snapshot and at the end")
            if v.conserved
            else _("conserved: no, the money does not add up to {total}")
        )
        lines.append(conserved.format(total=total))
    return lines


def show_state(value: object) -> str:
    """An operator state or record for the text report."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return "{" + ", ".join(f"{show_value(k)}: {show_state(x)}" for k, x in items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(show_state(x) for x in value) + "]"
    return show_value(value)


def show_output(output: object) -> str:
    """The job's output: ``A=6,800, B=8,200`` or ``11 records: (be, 1), ...``."""
    if isinstance(output, dict):
        return ", ".join(f"{k}={show_state(x)}" for k, x in output.items())
    if isinstance(output, list):
        shown = ", ".join(show_state(x) for x in output[:OUTPUT_SHOWN])
        more = f", ... ({len(output) - OUTPUT_SHOWN} more)" if len(output) > OUTPUT_SHOWN else ""
        return f"{len(output)} records: {shown}{more}"
    return show_state(output)


# -- JSON --------------------------------------------------------------------------------------
def report_json(report: Report) -> dict[str, object]:
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
        "snapshots": [snapshot_json(c, report.times) for c in world.coordinator.completed],
        "aborted": [{"checkpoint_id": n, "why": why} for n, why in sorted(report.aborted.items())],
        "pending": v.pending,
        "output": json_safe(world.output()),
        "in_transit": json_safe(in_transit(world)),
        "verdicts": {
            "feasible": v.feasible,
            "problems": v.problems,
            "terminated": v.terminated,
            "deadlock": v.deadlock,
            "exactly_once": v.exactly_once,
            "conserved": v.conserved,
            "all_hold": v.hold(),
        },
        "steps": world.clock,
        **json_object(report.extra),
    }


def snapshot_json(done: CompletedCheckpoint, times: list[float] | None = None) -> dict[str, object]:
    """One completed snapshot as a JSON-ready object (with times, when the trace gave them)."""
    snap = done.snapshot
    when: dict[str, object] = {}
    if times is not None:
        when = {
            "triggered_time": times[done.triggered_at],
            "completed_time": times[done.completed_at],
        }
    return {
        "checkpoint_id": snap.checkpoint_id,
        "triggered_at": done.triggered_at,
        "completed_at": done.completed_at,
        **when,
        "tasks": {
            str(t): {"state": json_safe(part.state), "offset": part.offset}
            for t, part in snap.tasks.items()
        },
        "channels": json_safe(snap.channel_values()),
    }


def json_safe(value: object) -> object:
    """``value`` with dict keys as strings, tuples and sets as lists, ids as their names."""
    if isinstance(value, float) and value != value:
        return None  # NaN (an unknown duration) is not JSON
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, dict):
        return json_safe(value.item())  # a numpy number
    if isinstance(value, (TaskId, ChannelId)):
        return str(value)
    if isinstance(value, dict):
        return json_object(value)
    if isinstance(value, (list, tuple)):
        return [json_safe(x) for x in value]
    if isinstance(value, (set, frozenset)):
        return sorted((json_safe(x) for x in value), key=repr)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return str(value)


def json_object(value: Mapping[K, object]) -> dict[str, object]:
    """A dict as a JSON object: :func:`json_key` of its keys, :func:`json_safe` of its values."""
    return {json_key(k): json_safe(x) for k, x in value.items()}


def json_key(key: object) -> str:
    """A dict key as a JSON object key: names as they are, numbers as digits, others as JSON."""
    if isinstance(key, (str, TaskId, ChannelId)):
        return str(key)
    if isinstance(key, (bool, int, float)) or key is None:
        return json.dumps(key)
    return json.dumps(json_safe(key))
