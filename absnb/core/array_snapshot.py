"""Keyed state held in arrays, as a checkpoint stores it: every value, and the keys added
since a base.

An array-backed keyed state (:class:`~absnb.operators.array_state.ArrayKeyedState`) keeps
its keys in slot order (an index that only grows) and one value per slot in a NumPy array.
Its snapshot, an :class:`ArraySnapshot`, is a copy of the value array (a memcpy) and the
keys, or, based on the task's snapshot in an earlier completed checkpoint (its ``base``),
the keys added since and the values of the slots changed since (``slots``; every value,
when most changed). Restoring takes the keys of the chain from the full snapshot up, in
order, and applies each link's values in turn (:func:`merge_array_chain`).

A snapshot pickles as its encoding (:meth:`ArraySnapshot.encode`, done by the snapshot
writer's thread, not the task's): a fixed header, the keys (little-endian int64 when they
are an int64 array or all ints, Arrow's UTF-8 offsets and bytes when all strs, else a
pickle of the list), then the raw little-endian values; a CRC-32 of
what follows the header. :func:`decode` refuses a truncated or damaged encoding with an
:class:`ArraySnapshotError` saying what is wrong.
"""

from __future__ import annotations

import pickle
import struct
import zlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAGIC = b"ABSNBARR"
VERSION = 1
HEAD = struct.Struct(">8sH1sBqqIqqqqqqI")
"""Magic, version, value dtype (``q`` int64, ``d`` float64), key encoding, first slot,
base (-1: none), depth, chain entries, checkpoint (-1: none), keys, values, changed slots
(-1: every value), key bytes, CRC-32 of the rest (the keys, the slots, the values)."""

INT_KEYS, STR_KEYS, PICKLED_KEYS, INT64_ARRAY_KEYS = 0, 1, 2, 3
_DTYPES = {b"q": "int64", b"d": "float64"}


class ArraySnapshotError(ValueError):
    """An encoded :class:`ArraySnapshot` that is truncated, damaged or inconsistent."""


@dataclass(frozen=True, eq=False)
class ArraySnapshot:
    """One task's array-backed keyed state in one checkpoint.

    Attributes:
        keys: the keys of slots ``start`` on, in slot order (all of them when full): a
            list, or an int64 array (the keys of an
            :class:`~absnb.operators.array_state.IntArrayKeyedState`).
        values: every slot's value, a copy (int64 or float64); with ``slots``, the values
            of those slots, then of the slots of ``keys``.
        start: the first slot of ``keys``: how many keys the base's chain holds (0: full).
        base: the checkpoint whose snapshot of the same task this one extends; None: full.
        depth: incremental links down to the full snapshot (0 for a full one).
        chain_entries: keys stored along the chain, this snapshot's included.
        checkpoint_id: the checkpoint these values are as of, once read back from storage
            (a restored task bases its next snapshot on it); None when taken.
        slots: the slots below ``start`` changed since the base, ascending (int64); None:
            ``values`` holds every slot's value.
    """

    keys: Sequence[Hashable] | npt.NDArray[np.int64]
    values: npt.NDArray[Any]
    start: int = 0
    base: int | None = None
    depth: int = 0
    chain_entries: int = 0
    checkpoint_id: int | None = None
    slots: npt.NDArray[np.int64] | None = None
    _encoded: list[bytes] = field(default_factory=list, repr=False)

    @property
    def incremental(self) -> bool:
        """True when this snapshot holds only the keys added since ``base``."""
        return self.base is not None

    @property
    def size(self) -> int:
        """Keys the state held when the snapshot was taken."""
        return self.start + len(self.keys)

    @property
    def entries_stored(self) -> int:
        """Values this snapshot stores."""
        return len(self.values)

    @property
    def key_bytes(self) -> int:
        """Bytes of the encoded keys (:meth:`encode` first)."""
        key_bytes: int = HEAD.unpack_from(self.encode())[12]
        return key_bytes

    def entries(self) -> dict[Hashable, object]:
        """``{key: value}`` of a full snapshot."""
        if self.incremental:
            raise ValueError("an incremental snapshot holds only the keys added since its base")
        keys = self.keys.tolist() if hasattr(self.keys, "tolist") else self.keys
        return dict(zip(keys, self.values.tolist(), strict=True))

    def encode(self) -> bytes:
        """The bytes storage keeps (computed once; :func:`decode` reads them back)."""
        if not self._encoded:
            self._encoded.append(_encode(self))
        return self._encoded[0]

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        return decode, (self.encode(),)


def merge_array_chain(chain: Sequence[ArraySnapshot], checkpoint_id: int) -> ArraySnapshot:
    """The full state that ``chain`` (the full snapshot first, then each increment on the
    one before) adds up to, as of ``checkpoint_id``: every link's keys, the last one's
    values. Raises :class:`ArraySnapshotError` when the links do not fit together."""
    if not chain or chain[0].incremental:
        raise ArraySnapshotError("a chain of array snapshots starts with a full one")
    import numpy as np

    values = chain[0].values
    n = 0
    for link in chain:
        if link.start != n:
            raise ArraySnapshotError(
                f"a link of the chain starts at slot {link.start}, after {n} keys"
            )
        end = n + len(link.keys)
        changed = link.slots
        stored = end if changed is None else len(changed) + end - n
        if len(link.values) != stored:
            raise ArraySnapshotError(
                f"a link of the chain holds {end} keys and {len(link.values)} values"
            )
        if changed is None:
            values = link.values
        else:
            if len(changed) and (changed.min() < 0 or changed.max() >= n):
                raise ArraySnapshotError(f"a link of the chain changes a slot outside 0-{n - 1}")
            merged = np.empty(end, link.values.dtype)
            merged[:n] = values
            merged[changed] = link.values[: len(changed)]
            merged[n:] = link.values[len(changed) :]
            values = merged
        n = end
    top = chain[-1]
    keys = top.keys
    if len(chain) > 1:
        parts = [link.keys for link in chain]
        arrays = [p for p in parts if isinstance(p, np.ndarray)]
        if len(arrays) == len(parts):
            keys = np.concatenate(arrays)
        else:
            keys = [k for p in parts for k in p]
    return ArraySnapshot(keys, values, 0, None, top.depth, top.chain_entries, checkpoint_id)


# -- encoding ---------------------------------------------------------------------------


def _encode(s: ArraySnapshot) -> bytes:
    import numpy as np

    values = np.ascontiguousarray(s.values)
    code = next((c for c, name in _DTYPES.items() if values.dtype == name), None)
    if code is None:
        raise TypeError(f"array snapshots hold int64 or float64 values, not {values.dtype}")
    kind, keys = _encode_keys(s.keys)
    raw: Any = values.astype(values.dtype.newbyteorder("<"), copy=False)
    slots = b"" if s.slots is None else s.slots.astype("<i8", copy=False).tobytes()
    body = (keys, slots, memoryview(raw))
    crc = zlib.crc32(body[2], zlib.crc32(slots, zlib.crc32(keys)))
    head = HEAD.pack(
        MAGIC,
        VERSION,
        code,
        kind,
        s.start,
        -1 if s.base is None else s.base,
        s.depth,
        s.chain_entries,
        -1 if s.checkpoint_id is None else s.checkpoint_id,
        len(s.keys),
        len(values),
        -1 if s.slots is None else len(s.slots),
        len(keys),
        crc,
    )
    return b"".join((head, *body))


def _encode_keys(keys: Sequence[Hashable] | npt.NDArray[np.int64]) -> tuple[int, bytes]:
    import numpy as np

    if isinstance(keys, np.ndarray):
        if keys.dtype != np.int64:
            raise TypeError(f"array snapshots hold keys in lists or int64 arrays, not {keys.dtype}")
        return INT64_ARRAY_KEYS, keys.astype("<i8", copy=False).tobytes()
    types = set(map(type, keys))
    if types <= {int}:
        try:
            return INT_KEYS, np.array(keys, dtype="<i8").tobytes()
        except OverflowError:
            pass
    elif types == {str}:
        import pyarrow as pa

        try:
            array = pa.array(keys, pa.large_string())
        except (pa.ArrowException, UnicodeError):
            pass  # a lone surrogate, say: pickled below
        else:
            offsets, data = array.buffers()[1:]
            assert offsets is not None
            assert data is not None
            ends = np.frombuffer(offsets, "<i8", len(keys) + 1)
            return STR_KEYS, b"".join((ends.tobytes(), memoryview(data)[: int(ends[-1])]))
    return PICKLED_KEYS, pickle.dumps(list(keys), protocol=5)


def decode(data: bytes) -> ArraySnapshot:
    """The :class:`ArraySnapshot` ``data`` encodes (:class:`ArraySnapshotError` if it is
    truncated, damaged, or not one)."""
    import numpy as np

    if len(data) < HEAD.size:
        raise ArraySnapshotError(
            f"the array snapshot is truncated ({len(data)} bytes, its header has {HEAD.size})"
        )
    (magic, version, code, kind, start, base, depth, chained, checkpoint, n_keys, n_values,
     n_slots, key_bytes, crc) = HEAD.unpack_from(data)  # fmt: skip
    if magic != MAGIC:
        raise ArraySnapshotError(f"not an array snapshot (magic {magic!r})")
    if version != VERSION:
        raise ArraySnapshotError(f"array snapshot version {version}, this absnb reads {VERSION}")
    if code not in _DTYPES or kind not in (INT_KEYS, STR_KEYS, PICKLED_KEYS, INT64_ARRAY_KEYS):
        raise ArraySnapshotError(f"unknown value type {code!r} or key encoding {kind}")
    if min(start, depth, chained, n_keys, n_values, n_slots + 1, key_bytes) < 0:
        raise ArraySnapshotError("the array snapshot's header holds a negative count")
    slot_bytes = 8 * max(n_slots, 0)
    expected = HEAD.size + key_bytes + slot_bytes + 8 * n_values
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "longer than its header says"
        raise ArraySnapshotError(
            f"the array snapshot is {what}: {len(data)} bytes, its header says {expected}"
        )
    body = memoryview(data)[HEAD.size :]
    if zlib.crc32(body) != crc:
        raise ArraySnapshotError("the array snapshot fails its CRC-32 check")
    keys = _decode_keys(kind, body[:key_bytes], n_keys)
    at = key_bytes + slot_bytes
    slots = None if n_slots < 0 else np.frombuffer(body[key_bytes:at], "<i8", n_slots)
    values = np.frombuffer(body[at:], "<" + code.decode(), n_values)  # read-only
    return ArraySnapshot(
        keys,
        values,
        start,
        None if base < 0 else base,
        depth,
        chained,
        None if checkpoint < 0 else checkpoint,
        slots,
    )


def _decode_keys(kind: int, blob: memoryview, n: int) -> list[Hashable] | npt.NDArray[np.int64]:
    import numpy as np

    keys: list[Hashable]
    if kind in (INT_KEYS, INT64_ARRAY_KEYS):
        if len(blob) != 8 * n:
            raise ArraySnapshotError(f"{len(blob)} bytes of int keys for {n} keys")
        array = np.frombuffer(blob, "<i8", n).astype(np.int64)
        if kind == INT64_ARRAY_KEYS:
            return array
        keys = array.tolist()
        return keys
    if kind == STR_KEYS:
        import pyarrow as pa

        if len(blob) < 8 * (n + 1):
            raise ArraySnapshotError(f"{len(blob)} bytes of str keys for {n} keys")
        ends = np.frombuffer(blob, "<i8", n + 1)
        data = blob[8 * (n + 1) :]
        if ends[0] != 0 or ends[-1] != len(data) or (np.diff(ends) < 0).any():
            raise ArraySnapshotError("the str keys' offsets do not fit their bytes")
        array = pa.Array.from_buffers(
            pa.large_string(), n, [None, pa.py_buffer(ends.tobytes()), pa.py_buffer(data)]
        )
        try:
            array.validate(full=True)
        except pa.ArrowException as e:
            raise ArraySnapshotError(f"the str keys are malformed: {e}") from None
        keys = array.to_pylist()
        return keys
    try:
        keys = pickle.loads(blob)
    except Exception as e:
        raise ArraySnapshotError(f"the pickled keys cannot be read: {e}") from None
    if not isinstance(keys, list) or len(keys) != n:
        raise ArraySnapshotError(f"the pickled keys are not a list of {n} keys")
    return keys
