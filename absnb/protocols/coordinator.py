"""The checkpoint coordinator (paper section 4; Flink's ``CheckpointCoordinator``).

Sans-IO, like the task handlers: the runtime tells it the time, the triggers and the
acknowledgements, and it answers with values. It keeps pending and completed checkpoints,
decides when a periodic trigger is due, completes a checkpoint when every task has
acknowledged it, and aborts pending checkpoints on failure. The runtime sends the
notify-checkpoint-complete (or aborted) to every task.

Flink's documentation ("Checkpointing", *Enabling and Configuring Checkpointing*) names the
settings kept here: the checkpoint *timeout* ("the time after which a checkpoint-in-progress
is aborted, if it did not complete by then"), the *minimum time between checkpoints*
(``min_pause``), and the *number of concurrent checkpoints* (``max_concurrent``). A task may
*decline* a checkpoint (``CheckpointCoordinator.receiveDeclineMessage``), which aborts it.
A checkpoint that fails for want of storage (a snapshot or its metadata could not be written)
counts against ``tolerable_failed_checkpoints`` (Flink's
``execution.checkpointing.tolerable-failed-checkpoints``, kept by its
``CheckpointFailureManager``):
:meth:`CheckpointCoordinator.failed <absnb.CheckpointCoordinator.failed>` says when more
failed in a row than that; a completed checkpoint starts the count again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from absnb.core.errors import ProtocolError, ProtocolSettingError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import CheckpointId, TaskId
from absnb.core.snapshot import GlobalSnapshot, TaskSnapshot
from absnb.protocols.base import SnapshotProtocol


@dataclass
class PendingCheckpoint:
    """A triggered checkpoint: the task snapshots acknowledged so far."""

    checkpoint_id: CheckpointId
    triggered_at: int
    acknowledged: dict[TaskId, TaskSnapshot] = field(default_factory=dict)
    started: float = 0.0
    """The exact time of the trigger (``triggered_at`` is whole: a step, a second)."""


@dataclass(frozen=True)
class CompletedCheckpoint:
    """A checkpoint every task acknowledged: its global snapshot and when it was taken."""

    snapshot: GlobalSnapshot
    triggered_at: int
    completed_at: int

    @property
    def checkpoint_id(self) -> CheckpointId:
        return self.snapshot.checkpoint_id


@dataclass(frozen=True)
class Acknowledged:
    """What one acknowledgement decided
    (:meth:`CheckpointCoordinator.acknowledge <absnb.CheckpointCoordinator.acknowledge>`): the
    checkpoint it completed, if it was the last part, and the older pending checkpoints that
    completion subsumed (aborted), oldest first. The runtime notifies the tasks of both."""

    completed: CompletedCheckpoint | None = None
    subsumed: tuple[CheckpointId, ...] = ()


NOTHING = Acknowledged()


class CheckpointCoordinator:
    """Triggers checkpoints, collects acknowledgements, completes and aborts.

    Args:
        tasks: every task of the job; a checkpoint completes when all acknowledged it.
        job: the job's name, and ``fingerprint`` its graph's fingerprint, stored in every
            snapshot so that a snapshot cannot be restored into another job.
        protocol: the protocol's name, stored in every snapshot.
        interval: time between periodic triggers (any unit: the simulator counts steps,
            the Spark runtime seconds); None for no periodic triggers.
        max_concurrent: how many checkpoints may be pending at once; None for no limit.
        min_pause: time that must pass after a checkpoint completes before the next periodic
            trigger (Flink: minPauseBetweenCheckpoints), so that a job whose checkpoints take
            longer than the interval still makes progress between them.
        subsumes: whether a completed checkpoint aborts older pending ones (ABS, Flink);
            False for Chandy-Lamport, whose concurrent snapshots each complete.
        timeout: a pending checkpoint older than this is aborted (:meth:`expire`); None
            for no timeout (Flink: ``setCheckpointTimeout``).
        periodic_concurrent: how many checkpoints may be pending when a periodic trigger
            is due (Flink: maxConcurrentCheckpoints); None for ``max_concurrent``, or 1 when
            that is unlimited (Chandy-Lamport). Triggers on request may start more, up to
            ``max_concurrent``; periodic ones never pile up faster than they complete, which
            would grow every channel by a marker per interval and the run quadratically.
        tolerable_failed_checkpoints: how many checkpoints in a row may fail for want of
            storage (:meth:`failed`) before the runtime stops the job (Flink's
            ``tolerable-failed-checkpoints``; 0 there by default: the first failure is
            fatal); None for no limit (the simulator writes no storage).

    Raises:
        ProtocolSettingError: a negative interval, pause or timeout, or a limit of
            concurrent checkpoints below 0.
    """

    def __init__(
        self,
        tasks: tuple[TaskId, ...],
        job: str,
        fingerprint: str,
        protocol: str,
        interval: float | None = None,
        max_concurrent: int | None = 1,
        min_pause: float = 0,
        subsumes: bool = True,
        timeout: float | None = None,
        periodic_concurrent: int | None = None,
        tolerable_failed_checkpoints: int | None = None,
    ) -> None:
        for what, value in (("interval", interval), ("timeout", timeout), ("min_pause", min_pause)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
            ):
                raise ProtocolSettingError(
                    f"checkpoint {what} must be a number >= 0 (simulator steps, seconds on "
                    f"Spark){'' if what == 'min_pause' else ' or None'}, not {value!r}"
                )
        if max_concurrent is not None and (
            isinstance(max_concurrent, bool)
            or not isinstance(max_concurrent, int)
            or max_concurrent < 0
        ):
            raise ProtocolSettingError(
                f"max_concurrent must be a whole number >= 1 (or None for no limit), not "
                f"{max_concurrent!r}"
            )
        if tolerable_failed_checkpoints is not None and (
            isinstance(tolerable_failed_checkpoints, bool)
            or not isinstance(tolerable_failed_checkpoints, int)
            or tolerable_failed_checkpoints < 0
        ):
            raise ProtocolSettingError(
                f"tolerable_failed_checkpoints must be a whole number >= 0 (or None for no "
                f"limit), not {tolerable_failed_checkpoints!r}"
            )
        self.tolerable_failed_checkpoints = tolerable_failed_checkpoints
        self.failed_in_a_row = 0
        """Checkpoints that failed for want of storage since the last one completed."""
        self.failed_checkpoints: list[CheckpointId] = []
        """Every checkpoint that failed for want of storage (:meth:`failed`), in order."""
        self.tasks = tasks
        self._task_set = frozenset(tasks)
        self.job = job
        self.fingerprint = fingerprint
        self.protocol = protocol
        self.interval = interval
        self.max_concurrent = max_concurrent
        self.min_pause = min_pause
        self.subsumes = subsumes
        self.timeout = timeout
        self.declined: list[tuple[CheckpointId, TaskId, str]] = []
        self.expired: list[CheckpointId] = []
        self.periodic_concurrent = (
            periodic_concurrent
            if periodic_concurrent is not None
            else (max_concurrent if max_concurrent is not None else 1)
        )
        self.last_completed: float | None = None
        self.next_id: CheckpointId = 1
        self.last_trigger: float = 0
        self.pending: dict[CheckpointId, PendingCheckpoint] = {}
        # The history lists below (and declined, expired) are never changed in place: each
        # change makes a new list, so that clone() (every simulated step with history)
        # shares them rather than copying them.
        self.completed: list[CompletedCheckpoint] = []
        self.aborted: list[CheckpointId] = []

    @classmethod
    def for_graph(
        cls,
        graph: ExecutionGraph,
        protocol: SnapshotProtocol,
        interval: float | None = None,
        *,
        min_pause: float = 0,
        timeout: float | None = None,
        max_concurrent: int | str | None = "protocol",
        tolerable_failed_checkpoints: int | None = None,
    ) -> CheckpointCoordinator:
        """The coordinator of ``graph`` run under ``protocol`` (whose ``max_concurrent``
        applies unless one is given; a protocol that takes none keeps 0)."""
        if max_concurrent == "protocol" or protocol.max_concurrent == 0:
            limit = protocol.max_concurrent
        elif isinstance(max_concurrent, str) or (
            isinstance(max_concurrent, int)
            and not isinstance(max_concurrent, bool)
            and max_concurrent < 1
        ):
            raise ProtocolSettingError(
                f"max_concurrent must be a whole number >= 1, None for no limit or 'protocol' "
                f"for the protocol's own, not {max_concurrent!r}"
            )
        else:
            limit = max_concurrent
        return cls(
            graph.tasks,
            graph.name,
            graph.fingerprint,
            protocol.name,
            interval=interval,
            max_concurrent=limit,
            min_pause=min_pause,
            subsumes=protocol.subsumes,
            timeout=timeout,
            tolerable_failed_checkpoints=tolerable_failed_checkpoints,
        )

    # -- triggering --------------------------------------------------------------------------
    def can_trigger(self) -> bool:
        """True when one more checkpoint may start."""
        return self.max_concurrent is None or len(self.pending) < self.max_concurrent

    def is_due(self, now: float) -> bool:
        """True when a periodic checkpoint should be triggered at time ``now``: more than
        ``interval`` has passed since the last trigger (so at least ``interval`` simulator
        steps of other work lie between two triggers), after the pause since the last
        completion, and fewer than ``periodic_concurrent`` checkpoints are pending."""
        return (
            self.interval is not None
            and now - self.last_trigger > self.interval
            and (self.last_completed is None or now - self.last_completed > self.min_pause)
            and len(self.pending) < self.periodic_concurrent
            and self.can_trigger()
        )

    def trigger(self, now: float) -> CheckpointId:
        """Start the next checkpoint; the runtime injects it into the initiators."""
        n = self.next_id
        self.next_id += 1
        self.last_trigger = now
        self.pending[n] = PendingCheckpoint(n, int(now), started=now)
        return n

    def final_checkpoint_due(self, ended: bool, uncommitted: int) -> bool:
        """True when the final checkpoint is to be triggered now (Flink's final checkpoint,
        FLIP-147): the job's input has ended (``ended``: every task has consumed its input
        and nothing is in flight), its sinks hold ``uncommitted`` output (transactions
        pre-committed at the end of input, or still open) that only a completed checkpoint
        commits, no checkpoint is pending and one may start. A task's first snapshot after
        its input ended is its final one (a two-phase-commit sink then keeps its last
        transaction pending for that checkpoint)."""
        return ended and uncommitted > 0 and not self.pending and self.can_trigger()

    # -- acknowledgements --------------------------------------------------------------------
    def acknowledge(self, snapshot: TaskSnapshot, now: float) -> Acknowledged:
        """Take one task's part and, when it was the last, complete the checkpoint at once
        (:meth:`acknowledge_task` then :meth:`complete`): for a runtime whose completed
        checkpoints need no durable write, such as the simulator."""
        if not self.acknowledge_task(snapshot, now):
            return NOTHING
        return self.complete(snapshot.checkpoint_id, now)

    def acknowledge_task(self, snapshot: TaskSnapshot, now: float) -> bool:
        """Take one task's part (Flink: ``PendingCheckpoint.acknowledgeTask``); True when
        the checkpoint is now fully acknowledged, and so ready for :meth:`complete`.

        Parts of checkpoints that are no longer pending (aborted or subsumed) are ignored,
        as is a last part that came after the timeout (:meth:`expire` aborts it). A fully
        acknowledged checkpoint stays pending, and recovery does not restore it, until the
        runtime made it durable and called :meth:`complete`.
        """
        if snapshot.task not in self._task_set:
            raise ProtocolError(
                f"checkpoint {snapshot.checkpoint_id} was acknowledged by {snapshot.task}, which "
                f"is not a task of job {self.job!r}: acknowledge only with the job's own tasks"
            )
        pending = self.pending.get(snapshot.checkpoint_id)
        if pending is None:
            return False
        pending.acknowledged[snapshot.task] = snapshot
        if len(pending.acknowledged) < len(self.tasks):
            return False
        return self.timeout is None or now - pending.triggered_at <= self.timeout

    def complete(self, checkpoint_id: CheckpointId, now: float) -> Acknowledged:
        """Complete the fully acknowledged ``checkpoint_id`` at ``now``, once its location
        is durable (Flink: ``CheckpointCoordinator.completePendingCheckpoint`` finalizes the
        checkpoint's metadata, then adds it to the completed checkpoint store); returns it
        and the older pending checkpoints it subsumed, oldest first. The minimum pause
        before the next periodic trigger counts from ``now``.

        When the protocol subsumes, a completed checkpoint aborts older pending ones (Flink:
        ``PendingCheckpoint`` subsumed by a newer ``CompletedCheckpoint``).

        Raises:
            ProtocolError: ``checkpoint_id`` is not pending or not every task acknowledged it.
        """
        pending = self.pending.get(checkpoint_id)
        if pending is None or len(pending.acknowledged) < len(self.tasks):
            raise ProtocolError(
                f"checkpoint {checkpoint_id} is not fully acknowledged, so it cannot complete: "
                "call complete only after acknowledge_task returned True for it"
            )
        del self.pending[checkpoint_id]
        subsumed: tuple[CheckpointId, ...] = ()
        if self.subsumes:
            subsumed = tuple(sorted(n for n in self.pending if n < checkpoint_id))
            for older in subsumed:
                del self.pending[older]
            self.aborted = [*self.aborted, *subsumed]
        done = CompletedCheckpoint(
            GlobalSnapshot(
                checkpoint_id=pending.checkpoint_id,
                job=self.job,
                fingerprint=self.fingerprint,
                tasks={t: pending.acknowledged[t] for t in self.tasks},
                protocol=self.protocol,
            ),
            triggered_at=pending.triggered_at,
            completed_at=int(now),
        )
        self.completed = [*self.completed, done]
        self.last_completed = now
        self.failed_in_a_row = 0
        return Acknowledged(done, subsumed)

    def store_failed(self, checkpoint_id: CheckpointId) -> None:
        """``checkpoint_id`` could not be made durable (Flink: finalizing its location or
        adding it to the ``CompletedCheckpointStore`` failed): a fully acknowledged pending
        checkpoint, or one already completed, is aborted and does not count as completed.
        The runtime notifies the tasks of the abort."""
        pending = self.pending.get(checkpoint_id)
        if pending is not None and len(pending.acknowledged) == len(self.tasks):
            del self.pending[checkpoint_id]
            self.aborted = [*self.aborted, checkpoint_id]
            return
        kept = [c for c in self.completed if c.checkpoint_id != checkpoint_id]
        if len(kept) == len(self.completed):
            raise ProtocolError(
                f"checkpoint {checkpoint_id} is neither fully acknowledged nor completed, so "
                "its store cannot have failed: call store_failed only with the id "
                "acknowledge_task() or acknowledge() said was complete"
            )
        self.completed = kept
        self.aborted = [*self.aborted, checkpoint_id]

    def failed(self, checkpoint_id: CheckpointId) -> bool:
        """Aborted ``checkpoint_id`` failed for want of storage (a task's snapshot or the
        checkpoint's metadata could not be written: Flink's ``CHECKPOINT_ASYNC_EXCEPTION``,
        ``FINALIZE_CHECKPOINT_FAILURE``); True when more checkpoints in a row have now failed
        so than ``tolerable_failed_checkpoints`` allows, and the job must stop (Flink:
        ``CheckpointFailureManager.checkFailureCounter``)."""
        self.failed_in_a_row += 1
        self.failed_checkpoints = [*self.failed_checkpoints, checkpoint_id]
        limit = self.tolerable_failed_checkpoints
        return limit is not None and self.failed_in_a_row > limit

    def waiting_for(self, task: TaskId) -> list[CheckpointId]:
        """The pending checkpoints ``task`` has not acknowledged, oldest first: those it may
        decline, and those a task whose inputs have all ended joins (FLIP-147)."""
        return [n for n, p in sorted(self.pending.items()) if task not in p.acknowledged]

    def decline(self, checkpoint_id: CheckpointId, task: TaskId, reason: str) -> bool:
        """``task`` declined ``checkpoint_id``: abort it. Returns False when it was no longer
        pending (completed, subsumed or aborted before)."""
        if checkpoint_id not in self.pending:
            return False
        del self.pending[checkpoint_id]
        self.aborted = [*self.aborted, checkpoint_id]
        self.declined = [*self.declined, (checkpoint_id, task, reason)]
        return True

    def expire(self, now: float) -> list[CheckpointId]:
        """Abort every pending checkpoint triggered more than ``timeout`` ago; their ids."""
        if self.timeout is None:
            return []
        late = [n for n, p in self.pending.items() if now - p.started > self.timeout]
        for n in late:
            del self.pending[n]
        if late:
            self.aborted = [*self.aborted, *late]
            self.expired = [*self.expired, *late]
        return late

    def abort_all(self) -> list[CheckpointId]:
        """A task failed: abort every pending checkpoint; returns their ids."""
        ids = sorted(self.pending)
        self.pending.clear()
        self.aborted = [*self.aborted, *ids]
        return ids

    def latest(self) -> CompletedCheckpoint | None:
        """The completed checkpoint recovery restores: the one with the highest id.

        Checkpoints complete in id order when the protocol subsumes. Chandy-Lamport's
        concurrent snapshots may complete out of order (2 before 1); each is consistent,
        and recovery restores the one triggered last, as Flink's completed-checkpoint
        store returns the highest id, whatever order they completed in. So the snapshot
        restored never depends on the order of completion, and a sink that committed a
        checkpoint's transactions is never restored behind it by an older one completing
        later.
        """
        if not self.completed:
            return None
        if self.subsumes:
            return self.completed[-1]
        return max(self.completed, key=lambda c: c.checkpoint_id)

    # -- value semantics ---------------------------------------------------------------------
    def clone(self) -> CheckpointCoordinator:
        new = CheckpointCoordinator.__new__(CheckpointCoordinator)
        new.__dict__.update(self.__dict__)
        new.pending = (
            {
                n: PendingCheckpoint(
                    p.checkpoint_id, p.triggered_at, dict(p.acknowledged), p.started
                )
                for n, p in self.pending.items()
            }
            if self.pending
            else {}
        )
        # completed, aborted, declined, expired and failed_checkpoints are shared: never
        # changed in place
        return new

    def key(self, now: float | None = None) -> object:
        """Equal for coordinators that decide the same future from time ``now``.

        Which checkpoints are pending and who acknowledged them, the next id, and the id of
        the checkpoint recovery restores (:meth:`latest`; its contents are the world's to
        compare, since only the world knows how to freeze operator states). Trigger and
        completion times count only when a periodic interval or a checkpoint timeout makes
        them decide the future, and then only as time since, capped where :meth:`is_due`
        and :meth:`expire` stop telling them apart. The completed, aborted, declined and
        expired lists are history: nothing reads them again.
        """
        timing = None
        if self.interval is not None and now is not None:
            since_completed = (
                None
                if self.last_completed is None
                else min(now - self.last_completed, self.min_pause + 1)
            )
            timing = (min(now - self.last_trigger, self.interval + 1), since_completed)
        ages: tuple[float, ...] = ()
        if self.timeout is not None and now is not None:
            ages = tuple(
                min(now - p.triggered_at, self.timeout + 1) for _, p in sorted(self.pending.items())
            )
        latest = self.latest()
        return (
            self.next_id,
            timing,
            ages,
            tuple((n, tuple(sorted(p.acknowledged))) for n, p in sorted(self.pending.items())),
            latest.checkpoint_id if latest else 0,
            self.failed_in_a_row if self.tolerable_failed_checkpoints is not None else 0,
        )
