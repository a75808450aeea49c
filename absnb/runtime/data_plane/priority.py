"""The data plane's priority lane: barriers that overtake (Flink FLIP-76), sans-IO.

Flink's documentation ("Checkpointing under backpressure", *Unaligned checkpoints*):
"Unaligned checkpoints contain in-flight data (i.e., data stored in buffers) as part of
the checkpoint state, allowing checkpoint barriers to overtake these buffers." In Flink a
barrier of an unaligned checkpoint is a priority event: the sending task puts it ahead of
its output buffers and the receiving task takes it ahead of its input buffers; both record
the buffers it overtook as channel state.

Here a priority event is a frame of its own kind (:data:`PRIORITY`) that a sender writes to
the socket at once: behind the bytes already on their way (they are in the stream before
it), ahead of the channel's pending batch and of every frame waiting for credit, in
memory or spilled, and without spending a credit. A barrier's frame carries a copy of the
records it overtook at the sender (:func:`carried`); the receiver takes it ahead of the
frames it has buffered on that channel and hands the task one :class:`Overtaking`: the
barrier, and the records it overtook in channel order (the receiver's buffered ones, then
the sender's). The overtaken records still travel, and are processed, behind it; the
protocol records them as the channel's state, so that recovery re-injects exactly the
records sent before the sender's snapshot and not reflected in the receiver's. Which
messages take the lane is :func:`absnb.protocols.overtaken.priority_event`'s to say: a
cancellation marker never does (Flink broadcasts a ``CancelCheckpointMarker`` as a
non-priority event), so a priority frame holding one is malformed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from typing import cast

from absnb.core.messages import RECORD_TYPES, CheckpointBarrier, Record, RecordBatch
from absnb.protocols.overtaken import overtaken
from absnb.runtime.connections.wire import HEADER, loads

PRIORITY = 3
"""Frame kind of a priority event: a pickled ``(message, carried records)``."""

PRIORITY_TYPES = (CheckpointBarrier,)
"""The messages that may take the priority lane."""


@dataclass(frozen=True, slots=True)
class Overtaking:
    """A barrier handed out ahead of ``overtaken``: the records sent before it on its
    channel and not yet consumed, in order, which the task consumes after it."""

    message: CheckpointBarrier
    overtaken: tuple[Record | RecordBatch, ...]


def records_of(batches: Iterable[list[object]]) -> tuple[Record | RecordBatch, ...]:
    """The record messages of ``batches`` (decoded DATA frames), in order."""
    return overtaken(chain.from_iterable(batches))


def carried(frames: Iterable[bytes], batch: list[object]) -> tuple[Record | RecordBatch, ...]:
    """What a barrier overtakes at its sender: the records of ``frames`` (encoded DATA
    frames waiting for credit, in order) and of the unframed ``batch`` behind them."""
    # a DATA frame this end encoded itself holds a batch: a list of messages
    decoded = (cast("list[object]", loads(memoryview(f)[HEADER.size :])) for f in frames)
    return (*records_of(decoded), *records_of([batch]))


def received(payload: object, buffered: Iterable[list[object]]) -> Overtaking | None:
    """What a receiver hands out for a priority frame's ``payload``, given the frames it
    has buffered on the channel (sent before it); None if the payload is malformed."""
    if type(payload) is not tuple or len(payload) != 2:
        return None
    message, overtaken = payload
    if type(message) is not CheckpointBarrier or type(overtaken) is not tuple:
        return None
    if any(m.__class__ not in RECORD_TYPES for m in overtaken):
        return None
    return Overtaking(message, (*records_of(buffered), *overtaken))
