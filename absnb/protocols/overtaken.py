"""What a barrier overtakes: the one place its records are worked out (FLIP-76).

A barrier that overtakes (unaligned checkpoints, or an overdue checkpoint under an alignment
timeout: :mod:`absnb.protocols.alignment_timer`) is consumed ahead of the records queued
before it on its channel; they are still processed after it, and the protocol records them
as the channel's state. The simulator (its channel queue), the one-task harness, and the
Spark host (its local queues, its inbox and the priority lane's frames,
:mod:`absnb.runtime.priority`) all ask :func:`overtaken` which messages those are, and the
task asks :func:`not_consumed` which of them it has not processed yet.
"""

from __future__ import annotations

from collections.abc import Iterable

from absnb.core.messages import RECORD_TYPES, Record, RecordBatch


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
