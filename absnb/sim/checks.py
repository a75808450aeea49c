"""Checks usable by tests and notebooks: feasibility, termination, exactly-once.

- Feasibility (paper section 3.2): a snapshot is a consistent cut. For every channel, the
  records the sender had sent at its snapshot equal the records the receiver had consumed
  at its snapshot plus those recorded in transit: nothing lost, nothing counted twice.
  For the bank, recorded balances plus recorded transfers in transit equal the total.
- Termination: a started snapshot completes. When a run can make no progress while a
  checkpoint is pending or channels are blocked, :func:`find_deadlock` names the tasks that
  wait and the channels they wait on.
- Exactly-once: the output after crashes and recovery equals the failure-free output.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from absnb.core.ids import ChannelId, TaskId
from absnb.core.job import Job
from absnb.core.messages import Record
from absnb.core.snapshot import GlobalSnapshot
from absnb.operators.library import CollectSink
from absnb.protocols.base import Waiting
from absnb.sim.world import World


def snapshot_problems(job: Job, snapshot: GlobalSnapshot) -> list[str]:
    """Why ``snapshot`` is not a feasible global snapshot of ``job`` (empty when it is)."""
    problems: list[str] = []
    states = snapshot.channel_states
    for c in job.graph.channels:
        sent = snapshot.tasks[c.src].sent.get(c, 0)
        received = snapshot.tasks[c.dst].received.get(c, 0)
        in_transit = states.get(c, ())
        if received + len(in_transit) != sent:
            diff = sent - received - len(in_transit)
            what = f"{diff} record(s) lost" if diff > 0 else f"{-diff} record(s) counted twice"
            problems.append(
                f"checkpoint {snapshot.checkpoint_id}, channel {c}: {c.src} had sent {sent}, "
                f"{c.dst} had received {received} and {len(in_transit)} were recorded in "
                f"transit: {what}"
            )
        elif [r.seq for r in in_transit] != list(range(received + 1, sent + 1)):
            problems.append(
                f"checkpoint {snapshot.checkpoint_id}, channel {c}: the records recorded in "
                f"transit are not the ones sent after {c.dst}'s snapshot"
            )
    if job.total is not None:
        total = snapshot_total(snapshot)
        if total != job.total:
            problems.append(
                f"checkpoint {snapshot.checkpoint_id}: balances plus transfers in transit add up "
                f"to {total:,}, not {job.total:,}"
            )
    return problems


def snapshot_total(snapshot: GlobalSnapshot) -> int:
    """Bank: recorded balances plus recorded amounts in transit."""
    balances: int = sum(snapshot.task_states.values())
    in_transit: int = sum(r.value for rs in snapshot.channel_states.values() for r in rs)
    return balances + in_transit


def world_total(world: World) -> int:
    """Bank: balances plus amounts in transit now."""
    balances: int = sum(task.state for task in world.tasks.values())
    in_transit: int = sum(m.value for q in world.channels.values() for m in q if type(m) is Record)
    return balances + in_transit


def world_problems(world: World) -> list[str]:
    """Problems with every completed snapshot of ``world`` and, for the bank, with the
    total now."""
    problems = [p for s in world.snapshots for p in snapshot_problems(world.job, s)]
    if world.job.total is not None and world.failed is None:
        total = world_total(world)
        if total != world.job.total:
            problems.append(
                f"step {world.clock}: money now adds up to {total:,}, not {world.job.total:,}"
            )
    return problems


@dataclass(frozen=True)
class Deadlock:
    """A run that cannot go on while a snapshot waits: who waits for what."""

    step: int
    pending: tuple[int, ...]
    waiting: tuple[Waiting, ...]
    blocked: dict[ChannelId, int]

    def __str__(self) -> str:
        lines = [
            f"deadlock at step {self.step}: checkpoint(s) "
            f"{', '.join(map(str, self.pending)) or '-'} cannot complete"
        ]
        for w in self.waiting:
            on = ", ".join(map(str, w.channels))
            line = f"  {w.task} waits for barrier {w.checkpoint_id} on {on}"
            if w.blocked:
                held = ", ".join(f"{c} ({self.blocked.get(c, 0)} held)" for c in w.blocked)
                line += f"; it has blocked {held}"
            lines.append(line)
        return "\n".join(lines)


def find_deadlock(world: World) -> Deadlock | None:
    """A :class:`Deadlock` if no delivery or emit is enabled while a checkpoint is pending
    or a channel is blocked with messages in it; None otherwise."""
    if world.failed is not None or world.progress_actions():
        return None
    pending = tuple(sorted(world.coordinator.pending))
    blocked = {c: len(world.channels[c]) for c in world.graph.channels if c in world.blocked}
    if not pending and not any(blocked.values()):
        return None
    waiting = tuple(w for task in world.tasks.values() for w in task.handler.waiting())
    return Deadlock(world.clock, pending, waiting, blocked)


def collecting(job: Job) -> Job:
    """``job`` with every sink that writes outside the job replaced by a
    :class:`~absnb.operators.library.CollectSink` (for a reference run that must not write to
    the external system)."""
    ops = job.graph.operators
    if not any(op.function.external for op in ops.values()):
        return job
    graph = copy.copy(job.graph)
    graph.operators = {
        name: replace(op, function=CollectSink()) if op.function.external else op
        for name, op in ops.items()
    }
    return replace(job, graph=graph)


def reference_output(job: Job, inputs: Mapping[TaskId, Iterable[Any]] | None = None) -> Any:
    """The failure-free output of ``job``: run with no checkpoints and no crash, round robin,
    until every input is consumed. ``inputs`` replaces the input logs (e.g. a bank's logs
    after transfers were added during a run)."""
    from absnb.sim.schedulers import RoundRobinScheduler
    from absnb.sim.stepper import Stepper

    world = World(collecting(job), "none")
    if inputs is not None:
        world.inputs = {t: tuple(v) for t, v in inputs.items()}
    stepper = Stepper(world, RoundRobinScheduler(), history=False)
    stepper.run()
    return stepper.world.output()


def exactly_once(world: World) -> bool:
    """True when ``world`` has finished and its output equals the failure-free output of the
    same job on the same input logs."""
    return world.is_finished() and world.output() == reference_output(world.job, world.inputs)
