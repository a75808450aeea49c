"""Effects: what a sans-IO protocol asks its runtime to do.

A protocol's ``on_*`` methods return a list of these; the simulator and the Spark runtime
carry them out, in order, in the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from absnb.core.ids import ChannelId, CheckpointId
from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    Marker,
    Record,
    RecordBatch,
)


@dataclass(frozen=True, slots=True)
class Block:
    """Stop consuming ``channel``; what arrives meanwhile is buffered in order."""

    channel: ChannelId


@dataclass(frozen=True, slots=True)
class Unblock:
    """Resume consuming ``channel``, buffered messages first."""

    channel: ChannelId


@dataclass(frozen=True, slots=True)
class BroadcastEvent:
    """Send ``message`` on every output channel of the task (Flink: the record writer's
    ``broadcastEvent``; the paper's "broadcast"; not the partitioner
    :class:`absnb.Broadcast`, which sends every record to every receiver)."""

    message: CheckpointBarrier | Marker | CancelCheckpointMarker


@dataclass(frozen=True, slots=True)
class SnapshotState:
    """Copy the task's operator state now, as its part of checkpoint ``checkpoint_id`` (T*)."""

    checkpoint_id: CheckpointId


@dataclass(frozen=True, slots=True)
class RecordChannelState:
    """Keep ``records`` as the state of input ``channel`` in checkpoint ``checkpoint_id`` (E*).

    Chandy-Lamport records every channel; ABS Alg. 2 records its back-edge (loop) inputs,
    the backup log.
    """

    checkpoint_id: CheckpointId
    channel: ChannelId
    records: tuple[Record | RecordBatch, ...]


@dataclass(frozen=True, slots=True)
class Acknowledge:
    """The task's part of checkpoint ``checkpoint_id`` is complete: report it to the coordinator."""

    checkpoint_id: CheckpointId


@dataclass(frozen=True, slots=True)
class Decline:
    """The task cannot take its part of checkpoint ``checkpoint_id`` (Flink:
    ``declineCheckpoint``): the coordinator aborts it; ``reason`` says why."""

    checkpoint_id: CheckpointId
    reason: str


@dataclass(frozen=True, slots=True)
class HaltSource:
    """Stop producing input (synchronous snapshots halt the sources until completion)."""

    checkpoint_id: CheckpointId


@dataclass(frozen=True, slots=True)
class ResumeSource:
    """Produce input again after a halt."""


Effect = (
    Block
    | Unblock
    | BroadcastEvent
    | SnapshotState
    | RecordChannelState
    | Acknowledge
    | Decline
    | HaltSource
    | ResumeSource
)
