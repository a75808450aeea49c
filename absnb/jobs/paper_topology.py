"""The paper's evaluation job (Carbone et al. 2015, section 6, Figure 5), scaled to a laptop.

The paper: "The execution topology consists of 6 distinct operators with parallelism equal
to the number of cluster nodes [...]. The execution contains 3 full network shuffles in
order to accentuate the possible impact of channel blocking in ABS alignment. Sources
generate a total of 1 billion records which are distributed uniformly among the source
instances. The state of the operators in the topology were per-key aggregates and source
offsets." Here, with every operator at ``parallelism`` tasks::

    source --forward--> parse ==hash(key)==> sum_per_key --forward--> to_group
        ==hash(group)==> count_per_group ==rebalance==> sink

``==>`` marks the three full shuffles (every task of one operator sends to every task of
the next, so every task behind one aligns ``parallelism`` inputs). The state is per-key
aggregates (``sum_per_key``: a total per key, the large one; ``count_per_group``: a count
per group; the sink: the latest count per group) and the sources' offsets.

The sources generate their records (:class:`GeneratedLog`): record ``i`` of source ``s``
is a 64-bit hash of ``(seed, s, i)`` (splitmix64), computed on demand, so a source's log is
replayable from any offset (its state) without reading or storing anything. The default
is small enough for the simulator; :func:`paper_topology` with ``records=4_000_000`` and
``keys=2**21`` touches over 10^6 keys, the size the benchmark runs.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, cast, overload

from absnb.core.columns import Columns, column
from absnb.core.graph import Hash, JobGraph, Rebalance, identity
from absnb.core.job import Job
from absnb.operators.array_state import ArrayKeyedState, IntArrayKeyedState
from absnb.operators.columnar import group as group_rows
from absnb.operators.columnar import ints
from absnb.operators.keyed_state import IncrementalKeyed, KeyedState
from absnb.operators.library import KeyedCount, Map, Source
from absnb.routing import KEY_FIELDS

if TYPE_CHECKING:
    from absnb.core.ids import TaskId

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB

DEFAULT_RECORDS = 400
"""Records per run at the builder's defaults (a simulator run: a class steps through it)."""
KEYS_PER_GROUP = 16
"""Consecutive keys per group (``to_group``), and keys over groups by default."""


def _stream_offset(seed: int, source: int) -> int:
    return (seed * _M1 + (source + 1) * _M2) & _MASK


def generated_record(seed: int, source: int, offset: int) -> int:
    """Record ``offset`` of source ``source``: splitmix64 of the source's stream position
    (one value at a time, the reference for :class:`GeneratedLog`'s vectorised slices)."""
    z = (_stream_offset(seed, source) + (offset + 1) * _GAMMA) & _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


class GeneratedLog(Sequence[int]):
    """A source's input log of ``length`` generated records: entry ``i`` is
    :func:`generated_record` ``(seed, source, i)``. Small to pickle (a host gets four
    numbers), read by slices (numpy computes a batch at once), replayable from any offset.
    """

    def __init__(self, seed: int, source: int, length: int) -> None:
        if length < 0:
            raise ValueError(f"a generated log has length >= 0, not {length}")
        self.seed, self.source, self.length = seed, source, length

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[int]:
        step = 4096
        for start in range(0, self.length, step):
            yield from self[start : start + step]

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            start, stop, stride = index.indices(self.length)
            if stride != 1:
                return [self[i] for i in range(start, stop, stride)]
            return self._slice(start, stop)
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(f"offset {index} is outside source {self.source}'s {self.length}")
        return generated_record(self.seed, self.source, index)

    def _slice(self, start: int, stop: int) -> list[int]:
        if stop <= start:
            return []
        import numpy as np

        u = np.uint64
        i = np.arange(start + 1, stop + 1, dtype=u)
        z = i * u(_GAMMA) + u(_stream_offset(self.seed, self.source))
        z = (z ^ (z >> u(30))) * u(_M1)
        z = (z ^ (z >> u(27))) * u(_M2)
        out: list[int] = (z ^ (z >> u(31))).tolist()
        return out

    def __reduce__(self) -> tuple[type[GeneratedLog], tuple[int, int, int]]:
        return GeneratedLog, (self.seed, self.source, self.length)

    def __repr__(self) -> str:
        return f"GeneratedLog(seed={self.seed}, source={self.source}, length={self.length})"


# -- the operators --------------------------------------------------------------------------
class Parse:
    """``parse``: a generated record (64 bits) -> ``(key, amount)``, the key in
    ``[0, keys)``, the amount in ``[1, 100]``. A picklable callable for
    :class:`~absnb.operators.library.Map`."""

    def __init__(self, keys: int) -> None:
        self.keys = keys

    def __call__(self, record: int) -> tuple[int, int]:
        return record % self.keys, (record >> 48) % 100 + 1

    def columns(self, records: Columns) -> Columns | None:
        """``(key, amount)`` columns of a column of records (uint64), or None for others."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.types as types

        (values,) = records.arrays if len(records.arrays) == 1 else (None,)
        if values is None or values.null_count or not types.is_uint64(values.type):
            return None
        r = values.to_numpy(zero_copy_only=False)
        keys = (r % np.uint64(self.keys)).astype(np.int64)
        amounts = ((r >> np.uint64(48)) % np.uint64(100) + np.uint64(1)).astype(np.int64)
        return Columns(("key", "amount"), (pa.array(keys), pa.array(amounts)))


class ToGroup:
    """``to_group``: ``(key, total)`` -> the key's group, ``(key // KEYS_PER_GROUP) mod
    groups``: runs of consecutive keys, so that a group's subtask behind the hash edge does
    not follow from the key's (``key mod groups`` would send every group to the subtask its
    keys came from whenever the parallelism divides ``groups``, and that edge would carry
    nothing across)."""

    def __init__(self, groups: int) -> None:
        self.groups = groups

    def __call__(self, update: tuple[int, int]) -> int:
        return update[0] // KEYS_PER_GROUP % self.groups

    def columns(self, updates: Columns) -> Columns | None:
        """The group column of ``(key, total)`` columns of ints, or None for others."""
        import pyarrow as pa

        keys = ints(updates.arrays[0]) if len(updates.arrays) == 2 else None
        if keys is None:
            return None
        return column(pa.array(keys // KEYS_PER_GROUP % self.groups), "group")


def key_of(pair: tuple[int, int]) -> int:
    """The key a ``(key, value)`` pair is partitioned by."""
    return pair[0]


def itself(value: int) -> int:
    """The key of a group record: the group."""
    return value


KEY_FIELDS[key_of] = 0  # a columnar batch is partitioned by its first column
KEY_FIELDS[itself] = None  # by its one column


class FastMap(Map):
    """:class:`~absnb.operators.library.Map` with a batch path (one list comprehension a
    batch), and a columnar one where its function has one (a ``columns`` method)."""

    emits_to = False

    def process_batch(self, state: None, values: Sequence[object]) -> tuple[None, list[object]]:
        fn = self.fn
        return state, [fn(v) for v in values]

    def process_columns(self, state: None, columns: Columns) -> tuple[None, Columns] | None:
        vectorised = getattr(self.fn, "columns", None)
        out = None if vectorised is None else vectorised(columns)
        return None if out is None else (state, out)


class GeneratedSource(Source):
    """The sources: on the columnar path, a batch of generated records (ints in
    ``[0, 2**64)``) as one uint64 column."""

    def emits_columns(self) -> bool:
        return self.split is None

    def act_columns(self, state: None, entries: Sequence[object]) -> tuple[None, Columns] | None:
        import pyarrow as pa

        if self.split is not None or not set(map(type, entries)) <= {int}:
            return None
        try:
            return state, column(pa.array(entries, pa.uint64()), "record")
        except (pa.ArrowException, OverflowError):
            return None


class KeyedSum(IncrementalKeyed[MutableMapping[int, int]]):
    """``sum_per_key``: the running total of the amounts per key; emits ``(key, total)``.
    State: ``{key: total}``, a per-key aggregate (the paper's operator state); with
    ``array``, an :class:`~absnb.operators.array_state.IntArrayKeyedState` (a batch applied
    at once, a snapshot a copy of its value array); else with ``incremental``, a
    :class:`~absnb.operators.keyed_state.KeyedState`. With ``incremental``, snapshots hold
    only the keys changed (an array state: added) since the last completed checkpoint."""

    emits_to = False

    def __init__(self, incremental: bool = False, array: bool = False) -> None:
        self.incremental = incremental
        self.array = array

    def initial_state(self) -> MutableMapping[int, int]:
        if self.array:
            return IntArrayKeyedState()
        return KeyedState() if self.incremental else {}

    def process(
        self, state: MutableMapping[int, int], value: tuple[int, int]
    ) -> tuple[MutableMapping[int, int], Sequence[object]]:
        key, amount = value
        total = state[key] = state.get(key, 0) + amount
        if isinstance(state, KeyedState):
            state.note(((key, total),))
        return state, ((key, total),)

    def process_batch(
        self, state: MutableMapping[int, int], values: Sequence[tuple[int, int]]
    ) -> tuple[MutableMapping[int, int], list[object]]:
        if isinstance(state, ArrayKeyedState):
            keys = [v[0] for v in values]
            totals = state.accumulate(keys, [v[1] for v in values]).tolist()
            return state, list(zip(keys, totals, strict=True))
        get = state.get
        outs: list[object] = []
        append = outs.append
        for key, amount in values:
            total = state[key] = get(key, 0) + amount
            append((key, total))
        if isinstance(state, KeyedState):
            state.note(cast("list[tuple[int, int]]", outs))  # the (key, total) pairs above
        return state, outs

    def process_columns(
        self, state: MutableMapping[int, int], columns: Columns
    ) -> tuple[MutableMapping[int, int], Columns] | None:
        """:meth:`process_batch` of ``(key, amount)`` columns of ints: a stable group and
        cumulative sum per key (:meth:`~absnb.operators.columnar.Groups.running_sums`),
        each record's running total in input order, new keys added in order of first
        appearance; None when a total in a dict could leave int64's range (an
        :class:`~absnb.operators.array_state.IntArrayKeyedState` holds int64 totals on every
        path)."""
        import numpy as np
        import pyarrow as pa

        if len(columns.arrays) != 2:
            return None
        keys = columns.arrays[0]
        amounts, key_values = ints(columns.arrays[1]), ints(keys)
        if amounts is None or key_values is None:
            return None
        if isinstance(state, IntArrayKeyedState):  # int64 totals on every path
            totals = state.accumulate_slots(state.slots(key_values), amounts)
        elif isinstance(state, ArrayKeyedState):
            return None
        else:
            groups = group_rows(keys)
            uniques = groups.distinct.to_pylist()
            get = state.get
            held = [get(k, 0) for k in uniques]
            reach = float(np.abs(amounts.astype(np.float64)).sum())
            if reach + max(map(abs, held), default=0) >= 2.0**62:
                return None
            totals = groups.running_sums(amounts, np.array(held, np.int64))
            latest = list(zip(uniques, totals[groups.last_rows()].tolist(), strict=True))
            state.update(latest)
            if isinstance(state, KeyedState):
                state.note(latest)
        return state, Columns(("key", "total"), (keys, pa.array(totals, pa.int64())))

    def __repr__(self) -> str:
        args = [f"{n}=True" for n in ("incremental", "array") if getattr(self, n)]
        return f"KeyedSum({', '.join(args)})"


class GroupCount(KeyedCount):
    """``count_per_group``: the number of updates per group; emits ``(group, count)``.
    State: ``{group: count}``; with ``array``, an
    :class:`~absnb.operators.array_state.IntArrayKeyedState` (a batch or a column of groups
    counted at once, a snapshot a copy of its counts), whose snapshots with ``incremental``
    hold only the groups added since the last completed checkpoint."""

    def __init__(self, incremental: bool = False, array: bool = False) -> None:
        super().__init__(identity, array=array, incremental=incremental)

    def initial_state(self) -> MutableMapping[Hashable, int]:
        if self.array:
            return cast("MutableMapping[Hashable, int]", IntArrayKeyedState())
        return {}

    def __repr__(self) -> str:
        args = [f"{n}=True" for n in ("incremental", "array") if getattr(self, n)]
        return f"GroupCount({', '.join(args)})"


class LatestCountSink(IncrementalKeyed[MutableMapping[int, int]]):
    """The sink: the highest count it has received per group (counts only grow, so at the
    end: each group's count). The output merges its tasks (``rebalance`` spreads a group's
    updates over all of them): one ``(group, count)`` per group. State: ``{group: count}``;
    with ``array``, an :class:`~absnb.operators.array_state.IntArrayKeyedState` (a column of
    counts applied at once, a snapshot a copy), whose snapshots with ``incremental`` hold
    only the groups added and the counts raised since the last completed checkpoint."""

    kind = "sink"
    emits_to = False

    def __init__(self, incremental: bool = False, array: bool = False) -> None:
        self.incremental = incremental
        self.array = array

    def initial_state(self) -> MutableMapping[int, int]:
        return IntArrayKeyedState() if self.array else {}

    def process(
        self, state: MutableMapping[int, int], value: tuple[int, int]
    ) -> tuple[MutableMapping[int, int], Sequence[object]]:
        group, n = value
        if n > state.get(group, 0):
            state[group] = n
        return state, ()

    def process_batch(
        self, state: MutableMapping[int, int], values: Sequence[tuple[int, int]]
    ) -> tuple[MutableMapping[int, int], list[object]]:
        get = state.get
        for group, n in values:
            if n > get(group, 0):
                state[group] = n
        return state, []

    def process_columns(
        self, state: MutableMapping[int, int], columns: Columns
    ) -> tuple[MutableMapping[int, int], list[object]] | None:
        """:meth:`process_batch` of ``(group, count)`` columns of ints into an array state:
        each group's highest count of the batch kept where it is higher
        (:meth:`~absnb.operators.array_state.ArrayKeyedState.raise_slots`), new groups added
        in order of first appearance; None for a dict state, or a count below 1 (which the
        per-record path would not add a group for)."""
        if not isinstance(state, IntArrayKeyedState) or len(columns.arrays) != 2:
            return None
        groups, counts = ints(columns.arrays[0]), ints(columns.arrays[1])
        if groups is None or counts is None or (len(counts) and int(counts.min()) < 1):
            return None
        state.raise_slots(state.slots(groups), counts)
        return state, []

    def output(self, states: Sequence[MutableMapping[int, int]]) -> list[tuple[int, int]]:
        merged: dict[int, int] = {}
        for state in states:
            for group, n in state.items():
                if n > merged.get(group, 0):
                    merged[group] = n
        return sorted(merged.items())

    def __repr__(self) -> str:
        args = [f"{n}=True" for n in ("incremental", "array") if getattr(self, n)]
        return f"LatestCountSink({', '.join(args)})"


PAPER_BASELINE_SECONDS = 260.0
"""The paper's Figure 6 baseline (no snapshots): about 260 s on 10 single-vCPU nodes."""
PAPER_FIGURE6: dict[str, dict[float, float]] = {
    "abs": {0.5: 1.80, 1.0: 1.33, 2.0: 1.28, 3.0: 1.22, 5.0: 1.12, 10.0: 1.07},
    "synchronous": {2.0: 2.85, 3.0: 1.74, 5.0: 1.31, 10.0: 1.10},
}
"""The paper's Figure 6, digitised (approximate): runtime over the baseline's against the
snapshot interval in seconds, per protocol."""

OPERATORS = ("source", "parse", "sum_per_key", "to_group", "count_per_group", "sink")
"""The six operators, in topological order."""

SHUFFLES = (("parse", "sum_per_key"), ("to_group", "count_per_group"), ("count_per_group", "sink"))
"""The three full network shuffles (edges where every task sends to every task)."""


def paper_topology(
    parallelism: int = 2,
    records: int = DEFAULT_RECORDS,
    keys: int = 64,
    groups: int | None = None,
    seed: int = 1,
    incremental: bool = False,
    array: bool = False,
) -> Job:
    """The paper's Figure 5 job: 6 operators of ``parallelism`` tasks, 3 full shuffles.

    Args:
        parallelism: tasks per operator (the paper: the number of nodes).
        records: records generated in all, dealt evenly to the sources.
        keys: the key space of ``sum_per_key`` (its state has up to this many entries).
        groups: the key space of ``count_per_group`` and the sink (default
            ``keys // KEYS_PER_GROUP``,
            at least 1).
        seed: the generator's seed; the same seed gives the same records.
        incremental: ``sum_per_key`` (the large state) takes incremental snapshots
            (:mod:`absnb.operators.keyed_state`), and with ``array`` so do
            ``count_per_group`` and the sink: for the Spark runtime, whose checkpoint
            storage reads their chains; the simulator needs whole snapshots.
        array: ``sum_per_key`` holds its totals in an array, ``count_per_group`` and the
            sink their counts (:mod:`absnb.operators.array_state`): a batch applied at
            once, a snapshot a copy of the values and the keys added.

    Raises:
        ValueError: a parallelism, key or group count below 1, or negative ``records``.
    """
    for name, value in (("parallelism", parallelism), ("keys", keys)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    if not isinstance(records, int) or records < 0:
        raise ValueError(f"records must be a whole number >= 0, not {records!r}")
    if groups is None:
        groups = max(1, keys // KEYS_PER_GROUP)
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"groups must be a whole number >= 1, not {groups!r}")
    p = parallelism
    g = JobGraph("paper_topology")
    g.add("source", "source", GeneratedSource(), p)
    g.add("parse", "operator", FastMap(Parse(keys)), p)
    g.add("sum_per_key", "operator", KeyedSum(incremental, array), p)
    g.add("to_group", "operator", FastMap(ToGroup(groups)), p)
    g.add("count_per_group", "operator", GroupCount(incremental, array), p)
    g.add("sink", "sink", LatestCountSink(incremental, array), p)
    g.connect("source", "parse")
    g.connect("parse", "sum_per_key", Hash(key_of))
    g.connect("sum_per_key", "to_group")
    g.connect("to_group", "count_per_group", Hash(itself))
    g.connect("count_per_group", "sink", Rebalance())
    graph = g.compile()
    inputs: dict[TaskId, Sequence[int]] = {
        t: GeneratedLog(seed, t.subtask, records // p + (t.subtask < records % p))
        for t in graph.tasks_of("source")
    }
    params: dict[str, object] = {
        "parallelism": p,
        "records": records,
        "keys": keys,
        "groups": groups,
        "seed": seed,
    }
    if incremental:
        params["incremental"] = True
    if array:
        params["array"] = True
    return Job("paper_topology", params, graph, inputs)


def expected_output(job: Job) -> list[tuple[int, int]]:
    """The job's failure-free answer, computed straight from its generated input (no
    dataflow): for each group, how many records have a key in it."""
    keys, groups = job.params["keys"], job.params["groups"]
    assert isinstance(keys, int)
    assert isinstance(groups, int)
    counts: dict[int, int] = {}
    for log in job.inputs.values():
        for record in cast("Sequence[int]", log):  # the generated records (GeneratedLog)
            group = (record % keys) // KEYS_PER_GROUP % groups
            counts[group] = counts.get(group, 0) + 1
    return sorted(counts.items())
