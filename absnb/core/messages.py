"""What travels on channels: records, barriers (ABS) and markers (Chandy-Lamport)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from absnb.core.ids import CheckpointId


class Record(NamedTuple):
    """A data record.

    Attributes:
        value: the payload.
        seq: the record's number on its channel: the sender numbers the records it sends on
            each output channel 1, 2, 3, ... A receiver that has seen number n on a channel
            drops a record numbered n or less as a duplicate (partial recovery, paper
            section 5). On a channel out of a source this is the source's sequence number.
        origin: ``(source task name, offset)`` of the source record this one derives from.

    A named tuple, since one is made for every record sent.
    """

    value: Any
    seq: int = 0
    origin: tuple[str, int] | None = None


@dataclass(frozen=True, slots=True)
class CheckpointBarrier:
    """ABS barrier of checkpoint ``checkpoint_id`` (Alg. 1 and 2; Flink ``CheckpointBarrier``)."""

    checkpoint_id: CheckpointId

    def __str__(self) -> str:
        return f"barrier {self.checkpoint_id}"


@dataclass(frozen=True, slots=True)
class Marker:
    """Chandy-Lamport marker of snapshot ``snapshot_id`` (never called a barrier)."""

    snapshot_id: CheckpointId

    def __str__(self) -> str:
        return f"marker {self.snapshot_id}"


@dataclass(frozen=True, slots=True)
class EndOfInput:
    """The sender will send nothing more on this channel (Flink: ``EndOfPartitionEvent``).

    Only the real runtime uses it, to learn that a run has finished; the simulator sees
    the end of input directly.
    """

    def __str__(self) -> str:
        return "end of input"


Message = Record | CheckpointBarrier | Marker
