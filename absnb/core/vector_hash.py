""":func:`~absnb.core.graph.stable_hash` of a whole Arrow array at once, and the subtask
each key goes to (``stable_hash(key) % n``), so that a columnar batch is partitioned the
same way its records would be one by one.

``stable_hash`` of an int is ``key & 0x7FFFFFFF``; of a str it is the CRC-32 of the UTF-8
bytes of ``repr(key)``. For a str of printable ASCII without a backslash, ``repr`` is the
str between quotes (single ones, or double ones when it holds a single quote and no double
one), so its CRC-32 is computed here for every such string together: a table-driven CRC,
one byte position at a time over the strings still that long (sorted by length, they are
a prefix). Any other string (non-ASCII, control characters, a backslash, both quotes:
``repr`` escapes some of them) is hashed by ``stable_hash`` itself.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from absnb.core.graph import stable_hash

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

_SINGLE, _DOUBLE, _BACKSLASH = 0x27, 0x22, 0x5C


@cache
def _table() -> npt.NDArray[np.uint32]:
    """The CRC-32 (zlib's, reflected polynomial 0xEDB88320) table of the 256 bytes."""
    import numpy as np

    crc = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        crc = np.where(crc & 1, (crc >> 1) ^ np.uint32(0xEDB88320), crc >> 1).astype(np.uint32)
    return crc


@cache
def _flags() -> npt.NDArray[np.uint8]:
    """Per byte value: 1 when ``repr`` escapes it (or it is not ASCII), 2 for a single
    quote, 4 for a double one."""
    import numpy as np

    flags = np.zeros(256, np.uint8)
    flags[:0x20] = flags[0x7F:] = flags[_BACKSLASH] = 1
    flags[_SINGLE], flags[_DOUBLE] = 2, 4
    return flags


def stable_hashes(keys: pa.Array) -> npt.NDArray[np.uint32]:
    """``stable_hash`` of every key of ``keys`` (an Arrow array of strings or integers)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.types as types

    if keys.null_count:
        return np.array([stable_hash(k) for k in keys.to_pylist()], np.uint32)
    if types.is_integer(keys.type):
        ints = keys.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        masked: npt.NDArray[np.uint32] = (ints & 0x7FFFFFFF).astype(np.uint32)
        return masked
    if types.is_large_string(keys.type):
        keys = keys.cast(pa.string())
    if not types.is_string(keys.type):
        return np.array([stable_hash(k) for k in keys.to_pylist()], np.uint32)
    return _string_hashes(keys)


def _string_hashes(keys: pa.Array) -> npt.NDArray[np.uint32]:
    import numpy as np

    n = len(keys)
    _, offsets_buf, data_buf = keys.buffers()
    offsets = np.frombuffer(offsets_buf, np.int32)[keys.offset : keys.offset + n + 1]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = np.diff(offsets).astype(np.int64)
    base = int(offsets[0])
    used = data[base : int(offsets[-1])]

    flags = _flags()[used]  # per byte: 1 escaped by repr, 2 a single quote, 4 a double one
    # each non-empty key's bytes run from its start to the next non-empty key's (an empty
    # key, even a trailing one, holds none: it must not cut its neighbour's run short)
    per_key = np.zeros(n, np.uint8)
    filled = np.flatnonzero(lengths)
    if len(filled):
        per_key[filled] = np.bitwise_or.reduceat(flags, starts[filled] - base)
    single = (per_key & 2).astype(bool)
    escaped = (per_key & 1).astype(bool) | (single & (per_key & 4).astype(bool))
    quote = np.where(single, _DOUBLE, _SINGLE).astype(np.uint32)

    table = _table()
    crc = np.full(n, 0xFFFFFFFF, np.uint32)
    crc = table[(crc ^ quote) & 0xFF] ^ (crc >> 8)
    order = np.argsort(-lengths, kind="stable")  # longest first: those still going, a prefix
    crc_sorted = crc[order]
    start_sorted = starts[order]
    length_sorted = lengths[order]
    longest = int(length_sorted[0]) if n else 0
    # how many strings are longer than j, for each byte position j
    still = np.searchsorted(-length_sorted, -np.arange(longest), side="left")
    for j, alive in enumerate(still.tolist()):
        byte = data[start_sorted[:alive] + j].astype(np.uint32)
        head = crc_sorted[:alive]
        crc_sorted[:alive] = table[(head ^ byte) & 0xFF] ^ (head >> 8)
    crc[order] = crc_sorted
    crc = table[(crc ^ quote) & 0xFF] ^ (crc >> 8)
    crc ^= np.uint32(0xFFFFFFFF)
    if escaped.any():
        odd = np.flatnonzero(escaped)
        words = keys.take(odd).to_pylist()
        crc[odd] = [stable_hash(w) for w in words]
    result: npt.NDArray[np.uint32] = crc
    return result


def subtasks(keys: pa.Array, n: int) -> npt.NDArray[Any]:
    """``stable_hash(key) % n`` of every key of ``keys``: the subtask each goes to."""
    import numpy as np

    picks: npt.NDArray[np.intp] = (stable_hashes(keys) % np.uint32(n)).astype(np.intp)
    return picks


def subtasks_of_words(keys: pa.Array, n: int) -> npt.NDArray[Any]:
    """:func:`subtasks` of a batch of repeating keys (words): each distinct key hashed once
    (Arrow's dictionary encoding, :func:`cached_hashes`), its subtask taken for every row."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(keys)
    where = cached_hashes(encoded.dictionary) % np.uint32(n)
    picks: npt.NDArray[np.intp] = where.astype(np.intp)[
        encoded.indices.to_numpy(zero_copy_only=False)
    ]
    return picks


CACHED = 1 << 16
"""The most str keys whose hash :func:`cached_hashes` keeps (it forgets them all when full)."""

_hashes: dict[object, int] = {}


def cached_hashes(keys: pa.Array) -> npt.NDArray[np.uint32]:
    """:func:`stable_hashes` of ``keys`` (distinct keys, such as a batch's dictionary): a str
    hashed before is looked up in a process-wide cache of up to :data:`CACHED` keys, the
    others hashed (vectorised when there are many) and kept."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.types as types

    if not (types.is_string(keys.type) or types.is_large_string(keys.type)):
        return stable_hashes(keys)
    words = keys.to_pylist()
    get = _hashes.get
    hashes = [get(w) for w in words]
    if None in hashes:
        missing = [i for i, h in enumerate(hashes) if h is None]
        if len(missing) > 32:
            fresh = stable_hashes(keys.take(pa.array(missing, pa.int64()))).tolist()
        else:
            fresh = [stable_hash(words[i]) for i in missing]
        if len(_hashes) + len(missing) > CACHED:
            _hashes.clear()
        keep = len(missing) <= CACHED
        for i, h in zip(missing, fresh, strict=True):
            hashes[i] = h
            if keep:
                _hashes[words[i]] = h
    return np.array(hashes, np.uint32)
