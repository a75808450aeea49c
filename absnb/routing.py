"""Where a task's outputs go: through the partitioning of each output gate to its channels,
numbered per channel (channel sequence numbers), one record or one batch per channel
(:class:`~absnb.task.StreamTask` calls these for every operator result, with its output
gates and its counters of records sent per channel, which these advance)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from absnb.core.columns import Columns
from absnb.core.errors import GraphError
from absnb.core.graph import (
    Broadcast,
    Forward,
    Hash,
    OutputGate,
    Partitioning,
    Rebalance,
    identity,
)
from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import EndOfInput, Message, Record, RecordBatch
from absnb.operators.base import To

Send = tuple[ChannelId, Message | RecordBatch | EndOfInput]
"""A message to send on a channel: a task sends records, batches and barriers; its host
also sends the end of input."""

_record = tuple.__new__
"""``Record(value, seq, origin)`` without the named tuple's own ``__new__`` in between (one
is made for every record sent)."""

Gates = tuple[OutputGate, ...]
"""A task's output gates: one per outgoing edge of its operator."""


def route(
    gates: Gates,
    sent: dict[ChannelId, int],
    task: TaskId,
    outs: Sequence[Any],
    origin: tuple[str, int] | None,
    sends: list[Send],
) -> None:
    """Send each of ``outs`` of ``task`` (a ``To`` along its edge only) on the channels its
    ``gates``' partitionings pick, numbered on each channel after ``sent``; ``origin`` is
    where they came from."""
    append = sends.append
    for out in outs:
        target = None
        if type(out) is To:
            target, out = out
        routed = False
        for gate in gates:
            if target is not None and gate.target != target:
                continue
            routed = True
            chans = gate.channels
            if len(chans) == 1:
                picked: Sequence[ChannelId] = chans
            else:
                done = sum(sent[c] for c in chans) if type(gate.partitioning) is Rebalance else 0
                picked = [
                    chans[i] for i in gate.partitioning.targets(out, task.subtask, len(chans), done)
                ]
            for c in picked:
                n = sent[c] + 1
                sent[c] = n
                append((c, _record(Record, (out, n, origin))))
        if not routed and target is not None:
            raise GraphError(
                f"task {task} sent a record to operator {target!r}, but its operator "
                f"has no edge to it: connect {task.operator!r} to {target!r}"
            )


def route_batch(
    gates: Gates,
    sent: dict[ChannelId, int],
    task: TaskId,
    emits_to: bool,
    outs: Sequence[Any],
    sends: list[Send],
) -> None:
    """:func:`route` of ``outs``, sent as one :class:`~absnb.core.messages.RecordBatch` per channel;
    ``emits_to``: the operator may send a ``To`` (along one edge only)."""
    if emits_to and To in map(type, outs):  # some go along one edge only
        routed: list[Send] = []
        route(gates, sent, task, outs, None, routed)
        batches: dict[ChannelId, RecordBatch] = {}
        for c, r in routed:
            assert isinstance(r, Record)  # route sends records only
            b = batches.get(c)
            if b is None:
                b = batches[c] = RecordBatch([], r.seq)
            cast("list[Any]", b.values).append(r.value)
        sends.extend(batches.items())
        return
    for gate in gates:
        chans = gate.channels
        parts: Sequence[list[Any]]
        if len(chans) == 1:  # a list of its own per gate: receivers may keep it
            parts = (outs,) if len(gates) == 1 and isinstance(outs, list) else (list(outs),)
        else:
            done = sum(sent[c] for c in chans) if type(gate.partitioning) is Rebalance else 0
            parts = gate.partitioning.split(outs, task.subtask, len(chans), done)
        for c, values in zip(chans, parts, strict=True):
            if values:
                first = sent[c] + 1
                sent[c] += len(values)
                sends.append((c, RecordBatch(values, first)))


def route_columns(
    gates: Gates, sent: dict[ChannelId, int], task: TaskId, outs: Columns, sends: list[Send]
) -> None:
    """:func:`route_batch` of a columnar batch (never a ``To``): one batch per channel, in
    the order of ``outs``, partitioned as its records would be one by one
    (:func:`split_columns`)."""
    for gate in gates:
        chans = gate.channels
        parts: Sequence[Columns | list[Any]]
        if len(chans) == 1:
            parts = (outs,)
        else:
            done = sum(sent[c] for c in chans) if type(gate.partitioning) is Rebalance else 0
            parts = split_columns(gate.partitioning, outs, task.subtask, len(chans), done)
        for c, values in zip(chans, parts, strict=True):
            if len(values):
                first = sent[c] + 1
                sent[c] += len(values)
                sends.append((c, RecordBatch(values, first)))


KEY_FIELDS: dict[Callable[[Any], Any], int | None] = {identity: None}
"""Key functions a columnar batch is hash-partitioned by without calling them: the field of
a tuple record each takes (a column of a batch of several), or None for the record itself
(the one column of a batch of one). A job's module adds its own."""


def split_columns(
    partitioning: Partitioning, outs: Columns, sender: int, n: int, sent: int
) -> Sequence[Columns | list[Any]]:
    """``partitioning.split`` of the records of ``outs``: columns for a forward, broadcast
    or rebalance edge (round robin, the ``sent + i``-th record of the batch as
    ``Rebalance.split`` deals it), and for a hash edge whose key is a
    column of str or int keys (:data:`KEY_FIELDS`, :func:`by_key`); for any other edge the
    records as a list, split as ever."""
    kind = type(partitioning)
    if kind is Forward:
        return [outs if i == sender else outs[:0] for i in range(n)]
    if kind is Broadcast:
        return [outs] * n
    if kind is Rebalance:
        import numpy as np

        return [outs.take(np.arange((b - sender - sent) % n, len(outs), n)) for b in range(n)]
    if kind is Hash:
        column = _key_column(partitioning.key, len(outs.arrays))  # type: ignore[union-attr]
        if column is not None:
            import pyarrow.types as types

            from absnb.operators.columnar import key_type

            keys = key_type(outs.arrays[column])
            if types.is_string(keys) or types.is_integer(keys):
                return by_key(outs, n, column)
    return partitioning.split(outs.to_pylist(), sender, n, sent)


def _key_column(key: Callable[[Any], Any], columns: int) -> int | None:
    """The column holding the keys ``key`` takes of a batch of ``columns`` columns, if
    known (:data:`KEY_FIELDS`)."""
    try:
        field = KEY_FIELDS.get(key, -1)
    except TypeError:  # an unhashable key function
        return None
    if field is None:
        return 0 if columns == 1 else None
    return field if columns > 1 and 0 <= field < columns else None


def by_key(outs: Columns, n: int, column: int = 0) -> list[Columns]:
    """The rows of ``outs`` split as ``stable_hash(key) % n`` splits them, the keys in
    ``column``. Int keys are hashed row by row, vectorised (``key & 0x7FFFFFFF``). Other
    keys (str) are encoded once (the batch's distinct keys,
    :func:`~absnb.operators.columnar.encode`), each distinct key hashed once
    (:func:`~absnb.core.vector_hash.cached_hashes`, exactly ``stable_hash``), and in each
    part the keys are a dictionary array of its own distinct keys, in the order they first
    appear, so that the receiver need not encode them again."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.types as types

    from absnb.core.vector_hash import cached_hashes, stable_hashes
    from absnb.operators.columnar import encode

    keys = outs.arrays[column]
    if types.is_integer(keys.type):
        picks = (stable_hashes(keys) % np.uint32(n)).astype(np.intp)
        return [outs.take(np.flatnonzero(picks == i)) for i in range(n)]
    codes, dictionary = encode(keys)
    where = (cached_hashes(dictionary) % np.uint32(n)).astype(np.intp)
    picks = where[codes]
    renumber = np.zeros(len(dictionary), np.int32)
    parts = []
    for i in range(n):
        rows = np.flatnonzero(picks == i)
        if not len(rows):
            parts.append(outs[:0])
            continue
        members = np.flatnonzero(where == i)
        renumber[members] = np.arange(len(members), dtype=np.int32)
        part = pa.DictionaryArray.from_arrays(
            pa.array(renumber[codes[rows]]), dictionary.take(members), safe=False
        )
        arrays = [part if j == column else a.take(rows) for j, a in enumerate(outs.arrays)]
        parts.append(Columns(outs.names, arrays))
    return parts
