"""The coordinator server's checkpoint bookkeeping: what it does for each pending checkpoint.

The sans-IO :class:`~absnb.protocols.coordinator.CheckpointCoordinator` decides when a
checkpoint is due, complete, timed out, declined or subsumed. :class:`PendingCheckpoints`
carries those decisions out on the driver: it sends the trigger to the hosts of the
initiator tasks, keeps every task's :class:`~absnb.runtime.control_plane.messages.Ack` of a pending
checkpoint (Flink: ``PendingCheckpoint``), makes a checkpoint durable before it completes (Flink:
``completePendingCheckpoint``), and tells every host when one completes or is aborted.
It holds no connection: :class:`~absnb.runtime.control_plane.server.CoordinatorServer` decides which
acknowledgements count and passes the sending in.

A checkpoint aborted because storage refused a write (a task's snapshot, declined with
``write_failed``, or the manifest ``on_complete`` writes) is a failed checkpoint: its files
are discarded (``on_failed``) and the coordinator counts it
(:meth:`~absnb.CheckpointCoordinator.failed`); once more have failed in
a row than it tolerates, ``stop`` is called with the
:class:`~absnb.runtime.storage.fs.StorageError` the run ends with.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from absnb.core.ids import CheckpointId, TaskId
from absnb.core.snapshot import TaskSnapshot
from absnb.protocols.coordinator import CheckpointCoordinator
from absnb.runtime.control_plane.messages import Aborted, Ack, Notify, Trigger
from absnb.runtime.storage.fs import StorageError

Event = tuple[float, str, dict[str, object]]


class PendingCheckpoints:
    """The acknowledgements of every pending checkpoint, and what completing or aborting
    one sends.

    Args:
        coordinator: the sans-IO coordinator; this is the only object to drive its
            checkpoints.
        initiators: the tasks a trigger is injected into (the sources).
        on_complete: called with the checkpoint id and every task's
            :class:`~absnb.runtime.control_plane.messages.Ack` (in the coordinator's task order)
            when every task acknowledged a checkpoint, to make it durable: the checkpoint completes
            (its end time, the notify to every host, the min pause) when it returns. If it raises,
            the checkpoint is aborted instead.
        clock: the time for the coordinator and the events (seconds).
        events: where ``(time, kind, details)`` events go (the server's list).
        broadcast: sends a message to every connected host of the current attempt.
        send: sends a message to one host by id (nothing if it is not connected).
        on_failed: called with the id of a checkpoint aborted because storage refused a
            write, to discard what of it was written.
        stop: called, once, with the error to stop the run with, when more checkpoints
            failed in a row than the coordinator tolerates.
    """

    def __init__(
        self,
        coordinator: CheckpointCoordinator,
        initiators: Sequence[TaskId],
        on_complete: Callable[[CheckpointId, dict[TaskId, Ack]], None] | None,
        clock: Callable[[], float],
        events: list[Event],
        broadcast: Callable[[object], None],
        send: Callable[[int, object], None],
        on_failed: Callable[[CheckpointId], None] | None = None,
        stop: Callable[[StorageError], None] | None = None,
    ) -> None:
        unknown = [str(t) for t in initiators if t not in coordinator.tasks]
        if unknown:
            raise ValueError(
                f"initiators {unknown} are not tasks of job {coordinator.job!r}: pass the "
                "job graph's own initiators"
            )
        self.coordinator = coordinator
        self.initiators = tuple(initiators)
        self.on_complete = on_complete
        self.clock = clock
        self.events = events
        self._broadcast = broadcast
        self._send = send
        self.on_failed = on_failed
        self.stop = stop
        self.stopped: StorageError | None = None
        """The error the run stops with, once more checkpoints failed than tolerated."""
        self.notified: CheckpointId = 0
        """The newest checkpoint whose notify-checkpoint-complete went to the hosts in this
        attempt (0: none yet)."""
        self._acks: dict[CheckpointId, dict[TaskId, Ack]] = {}
        self._triggered_at: dict[CheckpointId, float] = {}

    def expire(self, now: float) -> None:
        """Abort every pending checkpoint that outlived the coordinator's timeout (Flink's
        checkpoint timeout)."""
        for late in self.coordinator.expire(now):
            self.abort(late, "timed out", now)

    def trigger(
        self,
        now: float,
        task_host: dict[TaskId, int],
        attempt: int,
        *,
        joining: Collection[int] = (),
        final: bool = False,
    ) -> CheckpointId:
        """Trigger the next checkpoint and return its id: one
        :class:`~absnb.runtime.control_plane.messages.Trigger` per host of initiator tasks,
        and one naming no task to each host of ``joining`` (hosts whose tasks have all
        finished, which no barrier reaches: their tasks join it, FLIP-147). ``final``: the
        job's final checkpoint (its ``triggered`` event says so)."""
        n = self.coordinator.trigger(now)
        self._triggered_at[n] = now
        self._acks[n] = {}
        info: dict[str, object] = {"checkpoint_id": n, "attempt": attempt}
        if final:
            info["final"] = True
        self.events.append((now, "triggered", info))
        by_host: dict[int, list[TaskId]] = {h: [] for h in joining}
        for t in self.initiators:
            by_host.setdefault(task_host[t], []).append(t)
        for h, tasks in sorted(by_host.items()):
            self._send(h, Trigger(n, tuple(tasks)))
        return n

    def acknowledge(self, ack: Ack) -> None:
        """Count a task's acknowledgement (or decline); the last one completes the
        checkpoint."""
        n, now = ack.checkpoint_id, self.clock()
        if ack.declined and self.coordinator.decline(n, ack.task, ack.declined):
            self.abort(n, f"declined by {ack.task}: {ack.declined}", now)
            if ack.write_failed:
                self._failed(n, ack.declined)
        if ack.declined or n not in self.coordinator.pending:
            return  # declined, or aborted or subsumed meanwhile
        self._acks.setdefault(n, {})[ack.task] = ack
        info = {
            "checkpoint_id": n,
            "task": ack.task,
            "snapshot_key": ack.snapshot_key,
            "alignment_s": ack.alignment_s,
            "state_bytes": ack.state_bytes,
            "metrics": dict(ack.metrics),
        }
        self.events.append((now, "acknowledged", info))
        if self.coordinator.acknowledge_task(TaskSnapshot(ack.task, n, state=None, offset=0), now):
            self.complete(n)

    def complete(self, n: CheckpointId) -> None:
        """Every task acknowledged ``n``: make it durable (``on_complete`` writes the
        manifest), and only then complete it, notify every host and start the min pause
        (Flink: ``completePendingCheckpoint`` finalizes the location before the checkpoint
        is completed). A crash before the write returns restores the previous checkpoint.
        If ``on_complete`` raises, the checkpoint is aborted instead."""
        acks = self._acks.pop(n)
        acks = {t: acks[t] for t in self.coordinator.tasks}
        started = self._triggered_at.pop(n, self.clock())
        if self.on_complete is not None:
            try:
                self.on_complete(n, acks)
            except Exception as e:
                # Not durable: the checkpoint must not count as completed.
                self.coordinator.store_failed(n)
                self.abort(n, f"on_complete failed: {e!r}", self.clock())
                if isinstance(e, OSError):  # StorageError is one
                    self._failed(n, str(e))
                return
        now = self.clock()
        decided = self.coordinator.complete(n, now)
        for old in decided.subsumed:
            self.abort(old, "subsumed", now)
        self.events.append((now, "completed", {"checkpoint_id": n, "duration": now - started}))
        self.notified = max(self.notified, n)
        self._broadcast(Notify(n))

    def abort(self, n: CheckpointId, reason: str, now: float) -> None:
        """Forget checkpoint ``n`` (the coordinator already aborted it) and send
        :class:`~absnb.runtime.control_plane.messages.Aborted` to every host."""
        self._acks.pop(n, None)
        self._triggered_at.pop(n, None)
        self.events.append((now, "aborted", {"checkpoint_id": n, "reason": reason}))
        self._broadcast(Aborted(n))

    def _failed(self, n: CheckpointId, why: str) -> None:
        """Checkpoint ``n`` was aborted because storage refused a write (``why``): discard
        its files, count it, and stop the run once more failed in a row than tolerated."""
        if self.on_failed is not None:
            self.on_failed(n)
        if not self.coordinator.failed(n) or self.stopped is not None:
            return
        k, limit = self.coordinator.failed_in_a_row, self.coordinator.tolerable_failed_checkpoints
        told = (
            f"checkpoint {n} failed and no failed checkpoint is tolerated"
            if not limit
            else f"{k} checkpoints in a row failed (the last {n}), more than {limit} tolerated"
        )
        self.stopped = StorageError(
            f"{why}. The run stops: {told} (tolerable_failed_checkpoints={limit}). Free space "
            "in checkpoint storage (or make it reachable), or tolerate more failed checkpoints "
            "in a row: SparkRuntime.run(tolerable_failed_checkpoints=N), or "
            "--tolerable-failed-checkpoints N"
        )
        self.events.append(
            (
                self.clock(),
                "stopped",
                {"checkpoint_id": n, "reason": str(self.stopped), "failed_in_a_row": k},
            )
        )
        if self.stop is not None:
            self.stop(self.stopped)

    def abort_all(self, reason: str, *, tell_hosts: bool = True) -> list[CheckpointId]:
        """Abort every pending checkpoint; their ids. ``tell_hosts=False`` only records the
        events (the caller sends :class:`~absnb.runtime.control_plane.messages.Aborted` itself)."""
        now = self.clock()
        ids = self.coordinator.abort_all()
        for n in ids:
            if tell_hosts:
                self.abort(n, reason, now)
            else:
                self.events.append((now, "aborted", {"checkpoint_id": n, "reason": reason}))
        return ids

    def clear(self) -> None:
        """Forget every acknowledgement (a new attempt begins)."""
        self.notified = 0
        self._acks.clear()
        self._triggered_at.clear()
