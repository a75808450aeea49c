"""Array-backed keyed state: per-key numbers in a NumPy array, a snapshot a memcpy.

:class:`ArrayKeyedState` holds a per-key numeric aggregate (a sum, a count) as an index
from key to slot, the keys in slot order, and one int64 (or float64) value per slot in an
array that doubles when full. Keys are never removed, so the index only grows and the keys
added since any checkpoint are a tail of the key list; a bitmap marks the slots a batch
changed. A snapshot (:class:`~absnb.core.array_snapshot.ArraySnapshot`, Alg. 1 line 9,
"copy state") is a copy of the value array and the keys: the task's thread copies, the
snapshot writer's thread encodes and writes. Based on the last checkpoint confirmed
complete (as :class:`~absnb.operators.keyed_state.KeyedState` and Flink's incremental
checkpoints), a snapshot stores only the keys added since and the values of the slots
changed since (every value when most changed); after :data:`MAX_DEPTH` increments it is
full again.

:class:`IntArrayKeyedState` keeps int keys in a C hash table and an int64 array instead of
a dict and a list (the Figure 5 job's keys): a batch's keys are looked up at once.

:meth:`ArrayKeyedState.accumulate` applies a batch at once: the keys looked up in one pass,
then a stable group-by-slot and cumulative sum give every record its own running value,
in input order, as the per-record loop would.

It is a mapping, shown as the dict of its entries; operators use it when built with
``array=True`` (:class:`~absnb.jobs.paper_topology.KeyedSum`,
:class:`~absnb.operators.library.KeyedCount`). Restoring an incremental snapshot needs its
chain, which checkpoint storage reads: like ``KeyedState``, it is for the Spark runtime.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from absnb.core.array_snapshot import ArraySnapshot

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", int, float)

MAX_DEPTH = 8
"""The longest chain of increments on one full array snapshot."""


class ArrayKeyedState(MutableMapping[K, V], Generic[K, V]):
    """Per-key numbers: ``index`` (key -> slot), ``keys`` (in slot order) and a value
    array; keys are never removed.

    Args:
        entries: the initial ``{key: value}``.
        dtype: ``"int64"`` or ``"float64"``.
    """

    __slots__ = (
        "_base",
        "_bases",
        "_changed",
        "_pending",
        "_values",
        "index",
        "keys_in_order",
        "taking",
    )

    def __init__(
        self, entries: Mapping[K, V] | Iterable[tuple[K, V]] = (), /, dtype: str = "int64"
    ) -> None:
        import numpy as np

        if dtype not in ("int64", "float64"):
            raise ValueError(f"an array state holds int64 or float64 values, not {dtype!r}")
        self.index: dict[K, int] = {}
        self.keys_in_order: list[K] = []
        """The keys, slot by slot (append-only)."""
        self._values: npt.NDArray[Any] = np.zeros(16, dtype)
        self._changed: npt.NDArray[np.bool_] = np.zeros(16, bool)  # since the last snapshot
        # the slots changed before each snapshot not yet confirmed
        self._pending: dict[int, npt.NDArray[np.intp]] = {}
        self.taking: int | None = None
        """The checkpoint whose snapshot the next
        :meth:`Operator.copy_state <absnb.operators.base.Operator.copy_state>` takes."""
        self._bases: dict[int, tuple[int, int, int]] = {}  # checkpoint -> depth, chain, keys
        self._base: int | None = None
        items = entries.items() if isinstance(entries, Mapping) else entries
        for key, value in items:
            self[key] = value

    # -- the mapping

    def __len__(self) -> int:
        return len(self.keys_in_order)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys_in_order)

    def __contains__(self, key: object) -> bool:
        return key in self.index

    def __getitem__(self, key: K) -> V:
        value: V = self._values[self.index[key]].item()
        return value

    def get(self, key: K, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when it has none."""
        slot = self.index.get(key)
        return default if slot is None else self._values[slot].item()

    def __setitem__(self, key: K, value: V) -> None:
        slot = self.index.get(key)
        if slot is None:
            slot = self._add(key)
        self._values[slot] = value
        self._changed[slot] = True

    def __delitem__(self, key: K) -> None:
        raise TypeError("array state keys are never removed (snapshots hold the new keys)")

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def items(self) -> Any:
        """The ``(key, value)`` pairs in slot order, a list (one pass over the array)."""
        return list(zip(self.keys_in_order, self.values_array.tolist(), strict=True))

    @property
    def dtype(self) -> str:
        """The values' type, ``int64`` or ``float64``."""
        return str(self._values.dtype)

    @property
    def values_array(self) -> npt.NDArray[Any]:
        """The values slot by slot (a view: later updates show in it)."""
        return self._values[: len(self.keys_in_order)]

    def _grow(self, end: int) -> None:
        """Room for ``end`` slots: the arrays doubled until they hold them."""
        import numpy as np

        size = len(self._values)
        if end <= size:
            return
        size = 1 << (end - 1).bit_length()
        n = len(self)
        values = np.zeros(size, self._values.dtype)
        values[:n] = self._values[:n]
        changed = np.zeros(size, bool)
        changed[:n] = self._changed[:n]
        self._values, self._changed = values, changed

    def _add(self, key: K) -> int:
        slot = len(self.keys_in_order)
        self._grow(slot + 1)
        self.index[key] = slot
        self.keys_in_order.append(key)
        return slot

    def slots(self, keys: Sequence[K]) -> npt.NDArray[np.intp]:
        """The slot of each of ``keys``, new keys added in order of first appearance."""
        import numpy as np

        found: list[int | None] = list(map(self.index.get, keys))
        if None in found:
            index = self.index
            for i, slot in enumerate(found):
                if slot is None:
                    key = keys[i]
                    slot = index.get(key)
                    found[i] = self._add(key) if slot is None else slot
        return np.array(found, dtype=np.intp)

    def accumulate(
        self, keys: Sequence[K], amounts: Sequence[V] | npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        """Add ``amounts[i]`` (1 when None) to the value of ``keys[i]``, in order; returns
        each record's value just after its own addition (a running total per key, in input
        order). Exact for int64; float64 running sums may differ from one-at-a-time
        addition in the last bits."""
        return self.accumulate_slots(self.slots(keys), amounts)

    def accumulate_slots(
        self, slots: npt.NDArray[np.intp], amounts: Sequence[V] | npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        """:meth:`accumulate` of the keys in ``slots`` (from :meth:`slots`)."""
        import numpy as np

        n = len(slots)
        values = self._values
        dtype = values.dtype
        add = np.ones(n, dtype) if amounts is None else np.asarray(amounts, dtype)
        if n == 0:
            return add
        order = np.argsort(slots, kind="stable")
        ordered, step = slots[order], add[order]
        run = np.cumsum(step)
        first = np.empty(n, bool)
        first[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        ends = np.append(starts[1:], n)
        # each group: its value before the batch, less the running sum before the group
        offset = values[ordered[starts]] - (run[starts] - step[starts])
        run += np.repeat(offset, ends - starts)
        values[ordered[ends - 1]] = run[ends - 1]
        self._changed[slots] = True
        out = np.empty_like(run)
        out[order] = run
        return out

    def raise_slots(self, slots: npt.NDArray[np.intp], values: npt.NDArray[Any]) -> None:
        """Raise the value of each of ``slots`` to the matching one of ``values`` where that
        is higher (``if v > state[k]: state[k] = v`` of each record in turn); only the
        slots raised are marked changed."""
        import numpy as np

        held = self._values
        before = held[slots]
        np.maximum.at(held, slots, np.asarray(values, held.dtype))
        self._changed[slots[held[slots] > before]] = True

    # -- snapshots

    def take(self, checkpoint_id: int, incremental: bool = True) -> ArraySnapshot:
        """The snapshot for ``checkpoint_id``: the keys added since the base, and the
        values of the slots changed since (all of them when that is more than half the
        state); all keys and values without a base, with ``incremental`` false, or after
        :data:`MAX_DEPTH` increments."""
        import numpy as np

        n = len(self)
        changed = np.flatnonzero(self._changed[:n])
        self._changed[:n] = False
        base = self._base
        known = self._bases.get(base) if incremental and base is not None else None
        if incremental:
            self._pending[checkpoint_id] = changed
        if known is None or known[0] >= MAX_DEPTH:
            snapshot = ArraySnapshot(self._key_slice(0, n), self._values[:n].copy(), 0, None, 0, n)
        else:
            depth, chained, start = known
            since = [c for cid, c in self._pending.items() if base is not None and cid > base]
            slots = np.unique(np.concatenate(since)) if len(since) > 1 else since[0]
            slots = slots[slots < start]
            new = self._key_slice(start, n)
            link = (start, base, depth + 1, chained + n - start)
            if 2 * (len(slots) + n - start) > n:  # most changed: every value
                snapshot = ArraySnapshot(new, self._values[:n].copy(), *link)
            else:
                values = np.concatenate((self._values[slots], self._values[start:n]))
                snapshot = ArraySnapshot(new, values, *link, None, slots.astype(np.int64))
        self._bases[checkpoint_id] = (snapshot.depth, snapshot.chain_entries, n)
        return snapshot

    def _key_slice(self, start: int, stop: int) -> Any:
        """The keys of slots ``start`` to ``stop``, a copy."""
        return self.keys_in_order[start:stop]

    def confirm(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` is complete: the next snapshot may build on it."""
        if checkpoint_id not in self._bases:
            return  # not one this state took
        self._base = checkpoint_id
        self._bases = {n: b for n, b in self._bases.items() if n >= checkpoint_id}
        self._pending = {n: c for n, c in self._pending.items() if n > checkpoint_id}

    def copy(self) -> ArrayKeyedState[K, V]:
        """A copy with the same base (a cloned task's state)."""
        new: ArrayKeyedState[K, V] = ArrayKeyedState(dtype=self.dtype)
        new.index = dict(self.index)
        new.keys_in_order = self.keys_in_order[:]
        new._values = self._values.copy()
        new._changed = self._changed.copy()
        new._pending = dict(self._pending)
        new._bases = dict(self._bases)
        new._base = self._base
        return new

    def __reduce__(self) -> tuple[Any, tuple[list[K], npt.NDArray[Any]]]:
        return _rebuilt, (self.keys_in_order, self.values_array)  # a final state: the entries

    @classmethod
    def restored(cls, snapshot: ArraySnapshot) -> ArrayKeyedState[Any, Any]:
        """The state ``snapshot`` (a full one) holds; its next snapshots build on the
        checkpoint it was read from, when storage says which."""
        if snapshot.incremental:
            raise ValueError(
                f"this snapshot holds only the keys added since checkpoint {snapshot.base}: "
                "restore it through CheckpointStorage, which reads its chain (the simulator "
                "keeps whole snapshots: build the job without incremental snapshots for it)"
            )
        keys = snapshot.keys
        state = _rebuilt(keys if hasattr(keys, "dtype") else list(keys), snapshot.values)
        if snapshot.checkpoint_id is not None:
            state._bases[snapshot.checkpoint_id] = (
                snapshot.depth,
                snapshot.chain_entries,
                len(state),
            )
            state._base = snapshot.checkpoint_id
        return state


def _rebuilt(
    keys: Sequence[Any] | npt.NDArray[np.int64], values: npt.NDArray[Any]
) -> ArrayKeyedState[Any, Any]:
    """An array state of ``keys`` and their ``values`` (slot by slot): an
    :class:`IntArrayKeyedState` when ``keys`` is an int64 array."""
    import numpy as np

    n = len(keys)
    if len(values) != n:
        raise ValueError(f"{n} keys and {len(values)} values")
    dtype = str(values.dtype.newbyteorder("="))
    state: ArrayKeyedState[Any, Any]
    if isinstance(keys, np.ndarray):
        state = IntArrayKeyedState(dtype=dtype)
        state.slots(keys)
    else:
        state = ArrayKeyedState(dtype=dtype)
        state.index = dict(zip(keys, range(n), strict=True))
        state.keys_in_order = list(keys)
    if len(state) != n:
        raise ValueError(f"{n - len(state)} keys appear twice")
    size = max(16, 1 << (n - 1).bit_length())
    state._values = np.zeros(size, state._values.dtype)
    state._values[:n] = values
    state._changed = np.zeros(size, bool)
    return state


class IntArrayKeyedState(ArrayKeyedState[int, V]):
    """An :class:`ArrayKeyedState` whose keys are int64 (the Figure 5 job's): the index is
    a C hash table looked up a batch at a time (pandas' ``Int64HashTable``, the one
    ``pandas.factorize`` uses), the keys an int64 array; a snapshot copies both arrays.
    A key must be an int in the int64 range."""

    __slots__ = ("_keys", "_n", "_table")

    def __init__(
        self, entries: Mapping[int, V] | Iterable[tuple[int, V]] = (), /, dtype: str = "int64"
    ) -> None:
        import numpy as np
        from pandas._libs.hashtable import Int64HashTable

        self._table = Int64HashTable()
        self._keys: npt.NDArray[np.int64] = np.zeros(16, np.int64)
        self._n = 0
        super().__init__(entries, dtype=dtype)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys[: self._n].tolist())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and key in self._table

    def __getitem__(self, key: int) -> V:
        value: V = self._values[self._table.get_item(key)].item()
        return value

    def get(self, key: int, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when it has none."""
        if key not in self:
            return default
        return self[key]

    def __setitem__(self, key: int, value: V) -> None:
        slot = int(self.slots([key])[0])
        self._values[slot] = value
        self._changed[slot] = True

    def items(self) -> Any:
        """The ``(key, value)`` pairs in slot order, a list."""
        return list(zip(self._keys[: self._n].tolist(), self.values_array.tolist(), strict=True))

    @property
    def values_array(self) -> npt.NDArray[Any]:
        return self._values[: self._n]

    @property
    def keys_array(self) -> npt.NDArray[np.int64]:
        """The keys slot by slot (a view)."""
        return self._keys[: self._n]

    def slots(self, keys: Sequence[int] | npt.NDArray[Any]) -> npt.NDArray[np.intp]:
        import numpy as np
        from pandas._libs.hashtable import Int64Vector

        added = Int64Vector()
        n = self._n
        found = self._table.get_labels(np.asarray(keys, np.int64), added, n, -1)
        new = added.to_array()
        if len(new):
            end = n + len(new)
            self._grow(end)
            if end > len(self._keys):
                keys_ = np.zeros(len(self._values), np.int64)
                keys_[:n] = self._keys[:n]
                self._keys = keys_
            self._keys[n:end] = new
            self._n = end
        slots: npt.NDArray[np.intp] = found.astype(np.intp, copy=False)
        return slots

    def _key_slice(self, start: int, stop: int) -> Any:
        return self._keys[start:stop].copy()

    def copy(self) -> IntArrayKeyedState[V]:
        new = _rebuilt(self.keys_array.copy(), self.values_array)
        assert isinstance(new, IntArrayKeyedState)
        new._changed[: self._n] = self._changed[: self._n]
        new._pending = dict(self._pending)
        new._bases = dict(self._bases)
        new._base = self._base
        return new

    def __reduce__(self) -> tuple[Any, tuple[Any, npt.NDArray[Any]]]:
        return _rebuilt, (self.keys_array.copy(), self.values_array)
