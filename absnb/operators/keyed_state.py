"""Keyed state whose snapshots cost what changed: incremental snapshots of a dict.

:class:`KeyedState` is a dict that also keeps the entries changed since its last snapshot
(the operator hands it the ``(key, value)`` entries of each batch it applied,
:meth:`KeyedState.note`: one ``dict.update`` a batch, in C). A snapshot (Alg. 1 line 9,
"copy state") holds only the entries changed since the checkpoint this task last heard was
complete, its base (Flink: incremental checkpoints are based on the
last checkpoint confirmed by ``notifyCheckpointComplete``), so the synchronous part copies
and the asynchronous part writes what changed, not what exists. It takes a full snapshot
when it has no base yet, or when the chain of incremental snapshots since the last full
one would store more entries than the state holds (so the chain holds at most twice the
state's entries, and restoring reads at most that).

Per-key numbers (sums, counts) have a cheaper state still: an
:class:`~absnb.operators.array_state.ArrayKeyedState`, whose snapshot is a copy of its
value array. An operator opts in with :class:`IncrementalKeyed`. Restoring an
incremental snapshot needs its chain, which
:class:`~absnb.runtime.storage.checkpoints.CheckpointStorage` reads: it is for the Spark
runtime; the simulator keeps its snapshots in memory, whole, so a job meant for it keeps
plain dict states (or array states without incremental snapshots).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from absnb.core.array_snapshot import ArraySnapshot
from absnb.core.incremental import IncrementalState
from absnb.operators.array_state import ArrayKeyedState
from absnb.operators.base import Operator, S

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MAX_DEPTH = 32
"""The longest chain of incremental snapshots on one full snapshot."""


class KeyedState(dict[K, V], Generic[K, V]):
    """A dict of per-key state with what changed since the last snapshot; keys are never
    removed (the per-key aggregates of the paper's job only grow)."""

    __slots__ = ("_all", "_base", "_bases", "_pending", "changed", "taking")

    def __init__(self, entries: Mapping[K, V] | Iterable[tuple[K, V]] = (), /) -> None:
        super().__init__(entries)
        self.changed: dict[K, V] = {}
        """The entries updated since the last snapshot, with their values now (:meth:`note`)."""
        self.taking: int | None = None
        """The checkpoint whose snapshot the next
        :meth:`Operator.copy_state <absnb.operators.base.Operator.copy_state>` takes."""
        self._all = False  # so much changed that the next snapshot is a full one anyway
        # the entries changed before each snapshot not yet confirmed (None: all of them)
        self._pending: dict[int, dict[K, V] | None] = {}
        self._bases: dict[int, tuple[int, int]] = {}  # checkpoint -> (depth, chain entries)
        self._base: int | None = None

    def note(self, entries: Iterable[tuple[K, V]]) -> None:
        """The operator set these ``(key, value)`` entries (once a batch; the last value of
        a key wins, as in the state). When more than half the keys changed, the next
        snapshot will be full: noting stops until it is taken."""
        if self._all:
            return
        changed = self.changed
        changed.update(entries)
        if 2 * len(changed) > len(self):
            self._all, self.changed = True, {}

    def __reduce__(self) -> tuple[type[KeyedState[K, V]], tuple[dict[K, V]]]:
        return KeyedState, (dict(self),)  # a final state sent to the driver: the entries

    def __delitem__(self, key: K) -> None:
        raise TypeError("KeyedState keys are never removed (incremental snapshots hold updates)")

    def take(self, checkpoint_id: int) -> IncrementalState:
        """The snapshot for ``checkpoint_id``: the entries changed since the base, or all.

        The entries are the values :meth:`note` kept, merged in checkpoint order: a key
        changed again later holds its later value, one not changed since holds the value
        it has now. No lookup in the state itself (a random read of a large dict costs
        far more than the noting did)."""
        noted = None if self._all else self.changed
        self.changed, self._all = {}, False
        base = self._base
        depth, chained = self._bases.get(base, (0, 0)) if base is not None else (0, 0)
        parts = [*self._pending.values(), noted]
        self._pending[checkpoint_id] = noted
        entries = _merged(parts) if base is not None and depth < MAX_DEPTH else None
        if entries is not None and chained + len(entries) > 2 * len(self):
            entries = None
        if entries is None:
            snapshot = IncrementalState(dict(self), None, 0, len(self), len(self))
        else:
            snapshot = IncrementalState(entries, base, depth + 1, chained + len(entries), len(self))
        self._bases[checkpoint_id] = (snapshot.depth, snapshot.chain_entries)
        return snapshot

    def confirm(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` is complete: the next snapshot may build on it."""
        if checkpoint_id not in self._bases:
            return  # not one this state took (a final notification, say)
        self._base = checkpoint_id
        self._pending = {n: k for n, k in self._pending.items() if n > checkpoint_id}
        self._bases = {n: b for n, b in self._bases.items() if n >= checkpoint_id}

    def copy(self) -> KeyedState[K, V]:
        """A copy with the same base and pending changes (a cloned task's state)."""
        new: KeyedState[K, V] = KeyedState(self)
        new.changed = dict(self.changed)
        new._all = self._all
        new._pending = dict(self._pending)
        new._bases = dict(self._bases)
        new._base = self._base
        return new

    @classmethod
    def restored(cls, snapshot: IncrementalState) -> KeyedState[K, V]:
        """The state ``snapshot`` (a full one) holds; its next snapshots build on the
        checkpoint it was read from, when storage says which."""
        if snapshot.incremental:
            raise ValueError(
                f"this snapshot holds only the keys changed since checkpoint {snapshot.base}: "
                "restore it through CheckpointStorage, which reads its chain (the simulator "
                "keeps whole snapshots: build the job without incremental snapshots for it)"
            )
        state = cls(snapshot.entries)
        if snapshot.checkpoint_id is not None:
            state._bases[snapshot.checkpoint_id] = (snapshot.depth, snapshot.chain_entries)
            state._base = snapshot.checkpoint_id
        return state


def _merged(parts: list[dict[K, V] | None]) -> dict[K, V] | None:
    """The entries of ``parts`` (older first: a later value wins), or None if one of them
    is None (everything changed then)."""
    if len(parts) == 1:
        return parts[0]  # a dict once noted is never changed: no copy needed
    out: dict[K, V] = {}
    for part in parts:
        if part is None:
            return None
        out.update(part)
    return out


class IncrementalKeyed(Operator[S]):
    """An operator whose state is a :class:`KeyedState` snapshotted incrementally, when
    its ``incremental`` is set (its :meth:`~absnb.operators.base.Operator.process_batch`
    must hand the keys it updates to :meth:`KeyedState.note`), or an
    :class:`~absnb.operators.array_state.ArrayKeyedState`, whose snapshots hold its values
    and, when ``incremental`` is set, only the keys added since the last completed
    checkpoint."""

    incremental = False

    def snapshot_state(self, state: S, checkpoint_id: int) -> S:
        if isinstance(state, KeyedState | ArrayKeyedState):
            state.taking = checkpoint_id
        return state

    def copy_state(self, state: Any) -> Any:
        # not S: a KeyedState's copy is its snapshot (an IncrementalState, not a state of
        # type S), and restoring copies such a snapshot back into a KeyedState
        if isinstance(state, IncrementalState):  # restoring
            return KeyedState.restored(state)
        if isinstance(state, ArraySnapshot):
            return ArrayKeyedState.restored(state)
        if isinstance(state, KeyedState | ArrayKeyedState):
            if state.taking is None:
                return state.copy()
            checkpoint_id, state.taking = state.taking, None
            if isinstance(state, ArrayKeyedState):
                return state.take(checkpoint_id, self.incremental)
            return state.take(checkpoint_id)
        return super().copy_state(state)

    def freeze(self, state: S) -> object:
        if isinstance(state, ArrayKeyedState):
            return super().freeze(dict(state.items()))  # type: ignore[arg-type]
        return super().freeze(state)

    def notify_checkpoint_complete(self, state: S, checkpoint_id: int) -> S:
        if isinstance(state, KeyedState | ArrayKeyedState):
            state.confirm(checkpoint_id)
        return state
