"""Recovery from the latest completed snapshot (paper section 5).

Full restart: every task loads its state from the latest completed global snapshot, every
channel is emptied and refilled with its recorded state (Chandy-Lamport channel states,
Alg. 2 backup logs), in order, and sources rewind to their recorded offsets.

Partial recovery: only the failed task and its upstream tasks restart. Each replays its
inputs in the order it first consumed them (the order log the runtime keeps), so it sends
the same records again under the same channel sequence numbers; downstream tasks drop
those they have already seen.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from absnb.core.errors import SnapshotMismatchError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import OnChannel, as_records
from absnb.core.snapshot import GlobalSnapshot, TaskSnapshot
from absnb.operators.base import Operator
from absnb.protocols.coordinator import CheckpointCoordinator
from absnb.sim.actions import Recover
from absnb.sim.events import Event
from absnb.task import StreamTask


class RecoverableWorld(Protocol):
    """What recovery reads and writes of a :class:`~absnb.sim.world.World` (declared here,
    so that this module does not import the world that calls it)."""

    tasks: dict[TaskId, StreamTask]
    blocked: set[ChannelId]
    coordinator: CheckpointCoordinator
    clock: int
    failed: TaskId | None
    replaying: int
    notices: dict[TaskId, tuple[CheckpointId, ...]]

    @property
    def graph(self) -> ExecutionGraph: ...

    def writable_task(self, t: TaskId) -> StreamTask: ...

    def writable_channel(self, c: ChannelId) -> deque[OnChannel]: ...


def check_snapshot_matches(world: RecoverableWorld, snapshot: GlobalSnapshot) -> None:
    """Raise if ``snapshot`` was not taken from ``world``'s job."""
    if snapshot.fingerprint != world.graph.fingerprint:
        raise SnapshotMismatchError(
            f"snapshot {snapshot.checkpoint_id} was taken from job {snapshot.job!r} "
            f"(graph fingerprint {snapshot.fingerprint}), not from this job "
            f"{world.graph.name!r} (fingerprint {world.graph.fingerprint}): restore it into a "
            "world built from the same job with the same parameters"
        )


def part_key(fn: Operator, part: TaskSnapshot) -> object:
    """A hashable value of everything :meth:`StreamTask.restore <absnb.task.StreamTask.restore>`
    reads from ``part``."""
    return (
        fn.freeze(part.state),
        part.offset,
        tuple((c, as_records(rs)) for c, rs in part.channel_states.items()),
        tuple(part.sent.items()),
        tuple(part.received.items()),
        part.consumed,
    )


PartKeys = dict[int, tuple[TaskSnapshot, object]]
""":func:`part_key` of task snapshots by identity, each with its snapshot (which keeps its id
from being reused): a snapshot never changes, and the clones of a world share its parts."""


def _part_key(fn: Operator, part: TaskSnapshot, cache: PartKeys) -> object:
    hit = cache.get(id(part))
    if hit is not None and hit[0] is part:
        return hit[1]
    key = part_key(fn, part)
    cache[id(part)] = (part, key)
    return key


def acknowledged_key(world: RecoverableWorld, cache: PartKeys) -> object:
    """The parts acknowledged so far of pending checkpoints: they make up the snapshot
    when it completes, so they decide what it holds (and what a recovery restores)."""
    fn = world.graph.function
    return tuple(
        [
            (
                n,
                tuple(
                    [
                        (t, _part_key(fn(t), p, cache))
                        for t, p in sorted(pending.acknowledged.items())
                    ]
                ),
            )
            for n, pending in sorted(world.coordinator.pending.items())
        ]
    )


def recovery_key(world: RecoverableWorld, cache: PartKeys) -> object:
    """Equal for worlds that recover alike: what a recovery would read.

    The contents of the checkpoint it restores
    (:meth:`CheckpointCoordinator.latest <absnb.CheckpointCoordinator.latest>`) and each task's
    inputs consumed since that checkpoint, in order, which partial recovery replays (Flink: the
    upstream backup a task replays from).
    """
    fn = world.graph.function
    latest = world.coordinator.latest()
    tasks = latest.snapshot.tasks if latest else {}
    restored = tuple(_part_key(fn(t), p, cache) for t, p in tasks.items())
    since: list[tuple[object, ...]] = []
    for t, task in world.tasks.items():
        entries: list[object] = []
        log = task.log
        for _ in range(task.consumed - (tasks[t].consumed if t in tasks else 0)):
            if log is None:
                break
            entries.append(log[0])
            log = log[1]
        since.append(tuple(entries))
    return restored, tuple(since)


def recover(world: RecoverableWorld, action: Recover) -> Event:
    """Apply a :class:`~absnb.sim.actions.Recover` action to ``world`` (which has a failed task)."""
    failed = world.failed
    assert failed is not None
    latest = world.coordinator.latest()
    snapshot = latest.snapshot if latest else None
    if action.mode == "full":
        restart = world.graph.tasks
    else:
        restart = tuple(t for t in world.graph.tasks if t in world.graph.upstream(failed))
    event = Event(world.clock, action, failed)
    restore(world, snapshot, restart, replay=action.mode == "partial")
    world.failed = None
    event.restored = (snapshot.checkpoint_id if snapshot else 0, restart)
    return event


def restore(
    world: RecoverableWorld,
    snapshot: GlobalSnapshot | None,
    tasks: tuple[TaskId, ...] | None = None,
    *,
    replay: bool = False,
) -> None:
    """Load ``snapshot`` (None: the initial state) into ``tasks`` of ``world`` (default all).

    ``tasks`` must be closed upstream (every task feeding one of them is one of them), as
    partial recovery's restart set is. With ``replay`` the restarted tasks replay their
    inputs in their original order.

    Raises:
        SnapshotMismatchError: the snapshot was taken from another job.
    """
    if snapshot is not None:
        check_snapshot_matches(world, snapshot)
    restart = set(world.graph.tasks if tasks is None else tasks)
    world.replaying = sum(1 for t in world.tasks.values() if t.replay and t.id not in restart)
    for t in world.graph.tasks:
        if t not in restart:
            continue
        world.notices.pop(t, None)
        task = world.writable_task(t)
        since = task.restore(snapshot.tasks[t] if snapshot else None)
        if replay and since:
            task.replay = since
            world.replaying += 1
    states = snapshot.channel_states if snapshot else {}
    for c in world.graph.channels:
        if c.dst in restart:
            q = world.writable_channel(c)
            q.clear()
            q.extend(states.get(c, ()))
            world.blocked.discard(c)
