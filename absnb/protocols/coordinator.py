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
                min(now - p.triggered_at, self.timeout + 1)
                for _, p in sorted(self.pending.items())
            )
        latest = self.latest()
        return (
            self.next_id,
            timing,
            ages,
            tuple((n, tuple(sorted(p.acknowledged))) for n, p in sorted(self.pending.items())),
            latest.checkpoint_id if latest else 0,
        )
