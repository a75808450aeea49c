"""What a barrier overtakes, and which messages overtake at all: the one place for both
(FLIP-76).

A barrier that overtakes (unaligned checkpoints, or an overdue checkpoint under an alignment
timeout: :mod:`absnb.protocols.alignment_timer`) is consumed ahead of the records queued
before it on its channel; they are still processed after it, and the protocol records them
as the channel's state. The simulator (its channel queue), the one-task harness, and the
Spark host (its local queues, its inbox and the priority lane's frames,
:mod:`absnb.runtime.data_plane.priority`) all ask :func:`overtaken` which messages those are, and
the task asks :func:`not_consumed` which of them it has not processed yet.

Which messages are priority events is decided by :func:`priority_event`, and where a
delivery of a channel finds the one it takes ahead of the rest by :func:`overtaking_position`:
the simulator's deliveries, the harness's queue and the Spark host's sends (its priority
lane, :mod:`absnb.runtime.data_plane.priority`) all ask them. Flink's rule (flink-streaming-java,
``SubtaskCheckpointCoordinatorImpl``): ``checkpointState`` broadcasts a barrier with
``operatorChain.broadcastEvent(barrier, options.isUnalignedCheckpoint())``, a priority
event exactly when the checkpoint is unaligned, while ``abortCheckpointOnBarrier`` (and
``checkpointState`` for a checkpoint aborted before it started) broadcasts a
``CancelCheckpointMarker`` with ``broadcastEvent(event)``, which ``RecordWriter`` makes
``broadcastEvent(event, false)``: a cancellation marker is never a priority event, in any
mode; it travels in order, behind the records sent before it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from absnb.core.ids import CheckpointId
from absnb.core.messages import RECORD_TYPES, CheckpointBarrier, EndOfInput, Record, RecordBatch


def overtaken(queued: Iterable[object]) -> tuple[Record | RecordBatch, ...]:
    """The records among ``queued`` (what is queued before a barrier on its channel, in
    order): what the barrier overtakes. Control messages (a cancellation marker, an older
    barrier) are not channel state."""
    return tuple(m for m in queued if type(m) in RECORD_TYPES)  # type: ignore[misc]


def not_consumed(
    records: tuple[Record | RecordBatch, ...], last: int
) -> tuple[Record | RecordBatch, ...]:
    """The part of ``records`` after sequence number ``last``, the last one the task
    consumed on the channel (a runtime may have copied them before the task consumed some:
    the host's announcement; partial recovery replays duplicates). A batch may be cut."""
    kept: list[Record | RecordBatch] = []
    for m in records:
        if isinstance(m, RecordBatch):
            end = m.first + len(m) - 1
            if end > last:  # the part not consumed yet (a batch may be half consumed)
                rest = m.values[max(0, last + 1 - m.first) :]
                kept.append(m if m.first > last else RecordBatch(rest, last + 1))
                last = end
        elif m.seq > last:
            kept.append(m)
            last = m.seq
    return tuple(kept)


def priority_event(message: object, barriers_overtake: bool) -> bool:
    """Whether ``message`` is a priority event under a protocol whose barriers do (or do not)
    overtake: a barrier of an unaligned checkpoint is, a cancellation marker (or anything
    else) never is (the module docstring's Flink rule)."""
    return barriers_overtake and type(message) is CheckpointBarrier


def overtaking_position(
    queued: Iterable[object],
    barriers_overtake: bool,
    overdue: Collection[CheckpointId] = (),
) -> int | None:
    """Where, in ``queued`` (a channel's messages, head first), the barrier a delivery of the
    channel takes ahead of the messages before it is; None: the head is delivered in order.

    It is the first priority event (:func:`priority_event`), unless at the head, where it
    overtakes nothing; or the first barrier of an ``overdue`` checkpoint, even at the head
    (:mod:`absnb.protocols.alignment_timer`, rule 3: delivered late, so that the task
    switches). Nothing overtakes the channel's end (nothing is queued behind it)."""
    for i, m in enumerate(queued):
        kind = type(m)
        if kind is CheckpointBarrier:
            if m.checkpoint_id in overdue:  # type: ignore[attr-defined]
                return i
            if barriers_overtake:
                return i or None
        elif kind is EndOfInput:
            return None
    return None
