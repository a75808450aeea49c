"""The operators the teaching jobs are built from: sources, transforms, keyed state, sinks."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, MutableMapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from absnb.core.columns import Columns, column
from absnb.core.errors import GraphError, OperatorOutputError, TransferRefusedError
from absnb.core.graph import identity as identity  # re-exported: absnb.operators.identity
from absnb.operators.array_state import ArrayKeyedState, IntArrayKeyedState
from absnb.operators.base import Operator, To
from absnb.operators.columnar import counted, group, ints, key_type, words_of_lines
from absnb.operators.keyed_state import IncrementalKeyed

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

_PARTS = frozenset({list, tuple})
"""What a source's ``split`` returns in the common case (anything else is checked)."""


class Source(Operator[None]):
    """A replayable source: it emits the entries of its input log in order.

    Its state is its offset into the log, kept by the task (paper section 3.2: "sources
    are replayable"); after a restore it re-reads from the recorded offset. ``split``, if
    given, turns one entry into several records (a line into words).
    """

    kind = "source"

    def __init__(self, split: Callable[[Any], Iterable[object]] | None = None) -> None:
        self.split = split

    def act(self, state: None, entry: object) -> tuple[None, Sequence[object]]:
        if self.split is None:
            return state, (entry,)
        return state, tuple(self._checked(entry, self.split(entry)))

    def act_batch(self, state: None, entries: Sequence[object]) -> tuple[None, list[object]]:
        if self.split is None:
            return state, list(entries)
        parts = list(map(self.split, entries))
        if not set(map(type, parts)) <= _PARTS:  # refused with the entry that gave it
            parts = [self._checked(entry, p) for entry, p in zip(entries, parts, strict=True)]
        return state, list(chain.from_iterable(parts))

    def emits_columns(self) -> bool:
        return self.split is str.split

    def act_columns(self, state: None, entries: Sequence[object]) -> tuple[None, Columns] | None:
        """The words of a batch of lines as one column
        (:func:`~absnb.operators.columnar.words_of_lines`), when ``split`` is ``str.split``
        (word count's); None otherwise, or for entries that are not all str."""
        if self.split is not str.split:
            return None
        words = words_of_lines(entries)  # type: ignore[arg-type]
        return None if words is None else (state, column(words, "word"))

    def _checked(self, entry: object, parts: Iterable[object]) -> Iterable[object]:
        """``parts``, what ``split(entry)`` returned, refused when it is None, a str (it
        would be sent character by character) or a dict."""
        if parts is None or isinstance(parts, str | bytes | dict):
            raise OperatorOutputError(
                f"Source's split {getattr(self.split, '__name__', self.split)!r} returned "
                f"{parts!r:.60} for {entry!r:.40}, but it must return a list (or other "
                "iterable) of records, e.g. str.split"
            )
        return parts


class Map(Operator[None]):
    """Stateless: one output per record."""

    def __init__(self, fn: Callable[[Any], object]) -> None:
        self.fn = fn

    def process(self, state: None, value: object) -> tuple[None, Sequence[object]]:
        return state, (self.fn(value),)


class FlatMap(Operator[None]):
    """Stateless: any number of outputs per record."""

    def __init__(self, fn: Callable[[Any], Iterable[object]]) -> None:
        self.fn = fn

    def process(self, state: None, value: object) -> tuple[None, Sequence[object]]:
        outs = self.fn(value)
        if outs is None or isinstance(outs, str | bytes | dict):
            raise OperatorOutputError(
                f"FlatMap's function {getattr(self.fn, '__name__', self.fn)!r} returned "
                f"{outs!r:.60}, but it must return a list (or other iterable) of records"
            )
        return state, tuple(outs)


class Filter(Operator[None]):
    """Stateless: keeps the records ``predicate`` accepts."""

    def __init__(self, predicate: Callable[[Any], bool]) -> None:
        self.predicate = predicate

    def process(self, state: None, value: object) -> tuple[None, Sequence[object]]:
        return state, ((value,) if self.predicate(value) else ())


class KeyedCount(IncrementalKeyed[MutableMapping[Hashable, int]]):
    """Counts records per key; emits ``(key, count so far)``. State: ``{key: count}``; with
    ``array``, an :class:`~absnb.operators.array_state.ArrayKeyedState` (a batch counted at
    once, a snapshot a copy of its counts), whose snapshots with ``incremental`` hold only
    the keys added since the last completed checkpoint (for the Spark runtime)."""

    emits_to = False

    def __init__(
        self,
        key: Callable[[Any], Hashable] = identity,
        array: bool = False,
        incremental: bool = False,
    ) -> None:
        self.key = key
        self.array = array
        self.incremental = incremental

    def initial_state(self) -> MutableMapping[Hashable, int]:
        return ArrayKeyedState() if self.array else {}

    def process(
        self, state: MutableMapping[Hashable, int], value: object
    ) -> tuple[MutableMapping[Hashable, int], Sequence[object]]:
        k = self.key(value)
        n = state.get(k, 0) + 1
        state[k] = n
        return state, ((k, n),)

    def process_batch(
        self, state: MutableMapping[Hashable, int], values: Sequence[Any]
    ) -> tuple[MutableMapping[Hashable, int], list[object]]:
        """One running count update per record, in order (no pre-aggregation); the keys
        are taken for the whole batch first, without a call when the key is
        :func:`~absnb.core.graph.identity`. An array state counts the batch at once
        (:meth:`~absnb.operators.array_state.ArrayKeyedState.accumulate`)."""
        keys = values if self.key is identity else list(map(self.key, values))
        if isinstance(state, ArrayKeyedState):
            return state, list(zip(keys, state.accumulate(keys).tolist(), strict=True))
        get = state.get
        outs: list[object] = []
        append = outs.append
        for k in keys:
            n = get(k, 0) + 1
            state[k] = n
            append((k, n))
        return state, outs

    def process_columns(
        self, state: MutableMapping[Hashable, int], columns: Columns
    ) -> tuple[MutableMapping[Hashable, int], Columns] | None:
        """:meth:`process_batch` of a column of str or int keys, or of a dictionary array of
        them (what a hash edge sends, :func:`~absnb.routing.by_key`), the key the identity:
        the batch's distinct keys looked up once each, in order of first appearance (the
        order the per-record path adds new keys in), every record's count so far computed
        at once (:meth:`~absnb.operators.columnar.Groups.running_counts`; an
        :class:`~absnb.operators.array_state.IntArrayKeyedState` looks the int keys up in one
        call); out as ``(key, count)`` columns, the keys as they came."""
        import pyarrow as pa
        import pyarrow.types as types

        if self.key is not identity or len(columns.arrays) != 1:
            return None
        keys = columns.arrays[0]
        kind = key_type(keys)
        if keys.null_count or not (types.is_string(kind) or types.is_integer(kind)):
            return None
        counts: npt.NDArray[np.int64]
        if isinstance(state, IntArrayKeyedState) and (values := ints(keys)) is not None:
            counts = state.accumulate_slots(state.slots(values))
        elif isinstance(state, ArrayKeyedState):
            groups = group(keys)
            slots = state.slots(groups.distinct.to_pylist())[groups.codes]
            counts = state.accumulate_slots(slots)
        else:
            counts = counted(state, keys)
        return state, _pairs(keys, pa.array(counts, pa.int64()))

    def __repr__(self) -> str:
        args = [f"{n}=True" for n in ("array", "incremental") if getattr(self, n)]
        return f"KeyedCount({', '.join(args)})"


def _pairs(keys: pa.Array, counts: pa.Array) -> Columns:
    """``(key, count)`` pairs as two columns."""
    return Columns(("key", "count"), (keys, counts))


class KeyedReduce(Operator[dict[Hashable, object]]):
    """Folds records per key with ``fn(acc, value)``; emits ``(key, acc)``."""

    emits_to = False

    def __init__(
        self, fn: Callable[[Any, Any], object], key: Callable[[Any], Hashable] = identity
    ) -> None:
        self.fn = fn
        self.key = key

    def initial_state(self) -> dict[Hashable, object]:
        return {}

    def process(
        self, state: dict[Hashable, object], value: object
    ) -> tuple[dict[Hashable, object], Sequence[object]]:
        k = self.key(value)
        acc = self.fn(state[k], value) if k in state else value
        state[k] = acc
        return state, ((k, acc),)


class CollectSink(Operator[list[object]]):
    """Collects every record it receives, in arrival order. State: the list of outputs."""

    kind = "sink"
    emits_to = False

    def initial_state(self) -> list[object]:
        return []

    def process(self, state: list[object], value: object) -> tuple[list[object], Sequence[object]]:
        state.append(value)
        return state, ()

    def process_batch(
        self, state: list[object], values: Sequence[object]
    ) -> tuple[list[object], list[object]]:
        state.extend(values)
        return state, []

    def process_columns(
        self, state: list[object], columns: Columns
    ) -> tuple[list[object], list[object]]:
        """Every row, as the per-record path holds it (a value or a tuple)."""
        state.extend(columns.to_pylist())
        return state, []


class Account(Operator[int]):
    """A bank account process (seed 001): its state is its balance.

    A transfer ``(dst, amount)`` from its own input log debits it and sends ``amount`` to
    ``dst``; an amount arriving on a channel credits it. No overdraft: a transfer waits
    (:meth:`waits`) until the balance covers it, and an amount that is not a positive
    whole number is refused.

    Args:
        balance: the initial balance, a whole number >= 0.
        name: the account's name, for messages.
    """

    kind = "process"

    def __init__(self, balance: int, name: str = "account") -> None:
        if isinstance(balance, bool) or not isinstance(balance, int) or balance < 0:
            raise GraphError(
                f"account {name!r} has initial balance {balance!r}: a balance must be a "
                "whole number >= 0"
            )
        self.balance = balance
        self.name = name

    def initial_state(self) -> int:
        return self.balance

    def process(self, state: int, value: int) -> tuple[int, Sequence[object]]:
        return state + value, ()

    def refusal(self, state: int, entry: tuple[str, int]) -> str | None:
        """Why this account refuses to send ``entry`` = ``(dst, amount)`` with balance
        ``state``, or None."""
        dst, amount = entry
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            return (
                f"account {self.name} refuses to send {amount!r} to {dst}: an amount must "
                f"be a positive whole number, not {amount!r}"
            )
        if amount > state:
            return (
                f"account {self.name} has a balance of {state:,}, less than the {amount:,} "
                f"it would send to {dst}: no overdraft, send at most {max(state, 0):,}"
            )
        return None

    def waits(self, state: int, entry: tuple[str, int]) -> str | None:
        """A transfer of more than the balance waits for money to arrive (log entries are
        checked when the log is made, so only the balance is compared here, once a step)."""
        return None if entry[1] <= state else self.refusal(state, entry)

    def act(self, state: int, entry: tuple[str, int]) -> tuple[int, Sequence[object]]:
        """Send ``entry``. Overdraft is kept out by :meth:`waits`, which the simulator asks
        first; the Spark runtime reads logs in batches without asking, so there a balance
        may dip below zero until money in transit arrives."""
        dst, amount = entry
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            raise TransferRefusedError(self.refusal(state, entry))
        return state - amount, (To(dst, amount),)

    def __repr__(self) -> str:
        return f"Account({self.balance})"
