"""What travels on channels: records, barriers (ABS) and markers (Chandy-Lamport)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from absnb.core.ids import CheckpointId

if TYPE_CHECKING:
    from absnb.core.columns import Columns


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
class RecordBatch:
    """Consecutive records of one channel, numbered ``first``, ``first + 1``, ...

    What the real runtime sends: one message carries many records (DESIGN, "The two
    runtimes": channels carry batches of records, with barriers between batches), and a
    task consumes it in one operator call (:meth:`~absnb.task.StreamTask.deliver_batch`),
    which is the same as consuming its records in turn. A batch has no ``origin``. Its
    ``values`` are a list, or on the real runtime's columnar path
    :class:`~absnb.core.columns.Columns` (iterating over them gives the values).
    """

    values: list[Any] | Columns
    first: int

    def __len__(self) -> int:
        return len(self.values)

    def records(self) -> list[Record]:
        """The batch as single records."""
        first = self.first
        return [Record(v, first + i) for i, v in enumerate(self.values)]

    def __str__(self) -> str:
        return f"records {self.first}..{self.first + len(self.values) - 1}"

    def __reduce__(
        self,
    ) -> tuple[Callable[..., RecordBatch], tuple[str | list[Any] | Columns, int]]:
        """Pickled (between hosts, in checkpoints) as one string when every value is a str
        without :data:`WORD_SEPARATOR` (a batch of words): joining and splitting run in C,
        a pickled list of strings takes a step per string each way."""
        values = self.values
        if values and type(values) is list:
            try:
                joined = WORD_SEPARATOR.join(values)
            except TypeError:  # not all str
                pass
            else:
                if joined.count(WORD_SEPARATOR) == len(values) - 1 and _plain(values):
                    return _words_batch, (joined, self.first)
        return RecordBatch, (values, self.first)


WORD_SEPARATOR = "\x00"
"""What joins a batch of words when it is pickled (``RecordBatch.__reduce__``)."""


def _plain(values: list[Any]) -> bool:
    """Every value a str itself (a subclass would come back as a plain str)."""
    return set(map(type, values)) == {str}


def _words_batch(joined: str, first: int) -> RecordBatch:
    """A batch of words pickled by ``RecordBatch.__reduce__``."""
    return RecordBatch(joined.split(WORD_SEPARATOR), first)


RECORD_TYPES = frozenset({Record, RecordBatch})
"""The message types that carry records (everything else is a barrier, marker or end)."""


def as_records(messages: Iterable[Record | RecordBatch]) -> tuple[Record, ...]:
    """``messages`` as single records, batches expanded in place."""
    out: list[Record] = []
    for m in messages:
        if isinstance(m, RecordBatch):
            out.extend(m.records())
        else:
            out.append(m)
    return tuple(out)


def count_records(messages: Iterable[Record | RecordBatch]) -> int:
    """The records in ``messages`` (a batch counts as its records)."""
    return sum(len(m) if type(m) is RecordBatch else 1 for m in messages)


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
class CancelCheckpointMarker:
    """Checkpoint ``checkpoint_id`` was declined or aborted upstream (Flink:
    ``CancelCheckpointMarker``): a task that receives it drops its progress on that
    checkpoint, releasing channels blocked for it, and sends the marker on once."""

    checkpoint_id: CheckpointId

    def __str__(self) -> str:
        return f"cancel {self.checkpoint_id}"


@dataclass(frozen=True, slots=True)
class EndOfInput:
    """The sender will send nothing more on this channel (Flink: ``EndOfPartitionEvent``).

    Only the real runtime uses it, to learn that a run has finished; the simulator sees
    the end of input directly.
    """

    def __str__(self) -> str:
        return "end of input"


Message = Record | CheckpointBarrier | Marker | CancelCheckpointMarker
"""What the simulator's channels carry; the real runtime also sends :class:`RecordBatch`."""

OnChannel = Message | EndOfInput
"""What a simulated channel holds: messages and, once its sender has ended it, the end of
input (FLIP-147), behind which nothing comes."""
