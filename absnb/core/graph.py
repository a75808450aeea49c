"""Job graphs and execution graphs (paper section 3.2, 4.1).

A :class:`JobGraph` names operators with a parallelism and connects them with partitioned
edges. :meth:`JobGraph.compile <absnb.JobGraph.compile>` turns it into an :class:`ExecutionGraph`
G = (T, E) of tasks and FIFO channels, and finds the back-edges L by depth-first search from the
sources (paper section 4.3).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import not_
from typing import Any, Literal

from absnb.core.errors import GraphError
from absnb.core.ids import ChannelId, TaskId

OperatorKind = Literal["source", "operator", "sink", "process"]
"""``source``: no inputs, reads a replayable input log. ``process``: a Chandy-Lamport style
process that both acts on its own (reads its input log) and receives (the bank's accounts).
``operator`` transforms records; ``sink`` collects them."""


def stable_hash(key: Any) -> int:
    """A hash that is the same in every process (Python's ``hash`` of a str is salted)."""
    if isinstance(key, int):
        return key & 0x7FFFFFFF
    return zlib.crc32(repr(key).encode())


def identity(value: Any) -> Any:
    """The key of a record that is its own key (partitioners and keyed operators skip
    calling it)."""
    return value


_SUBTASKS: dict[int, dict[str, int]] = {}
"""By parallelism n: ``stable_hash(key) % n`` of the str keys seen lately (a batch's keys
repeat: words)."""
_SUBTASKS_MAX = 1 << 16
_PICK_PASSES = 8
"""Up to this parallelism, :meth:`Hash.split` picks each subtask's records in a pass of
its own; above it, one pass appends each record to its subtask's list."""


@dataclass(frozen=True, slots=True)
class Forward:
    """Subtask i sends to subtask i; both operators need the same parallelism."""

    name = "forward"

    def targets(self, value: Any, sender: int, n: int, sent: int) -> range | tuple[int, ...]:
        return (sender,)

    def split(self, values: Sequence[Any], sender: int, n: int, sent: int) -> list[list[Any]]:
        """What :meth:`targets` does to each of ``values`` in turn, as one list per
        subtask (``sent``: records sent on the gate before the first)."""
        return [list(values) if i == sender else [] for i in range(n)]


@dataclass(frozen=True, slots=True)
class Hash:
    """Records go to subtask ``stable_hash(key(value)) % n``."""

    key: Callable[[Any], Any]
    name = "hash"

    def __post_init__(self) -> None:
        if not callable(self.key):
            raise GraphError(
                f"Hash(key={self.key!r}): the key must be a function of a record, e.g. "
                "Hash(lambda pair: pair[0])"
            )

    def targets(self, value: Any, sender: int, n: int, sent: int) -> range | tuple[int, ...]:
        return (subtask(self.key(value), n),)

    def split(self, values: Sequence[Any], sender: int, n: int, sent: int) -> list[list[Any]]:
        """:meth:`targets` of each of ``values``, as one list per subtask: the subtasks
        looked up for the whole batch at once (str keys are cached), then each subtask's
        records picked out in one pass (C loops, no Python call per record)."""
        keys = values if self.key is identity else list(map(self.key, values))
        if keys and type(keys[0]) is not str:  # the cache holds str keys only: hash each
            return _hashed(values, keys, n)
        cache = _SUBTASKS.get(n)
        if cache is None:
            cache = _SUBTASKS[n] = {}
        try:
            picks: list[Any] = list(map(cache.get, keys))
        except TypeError:  # an unhashable key: no cache for it
            picks = [None] * len(keys)
        if None in picks:
            _fill(picks, keys, n)
        if n == 2:  # 0 or 1: the picks are their own selectors
            return [list(compress(values, map(not_, picks))), list(compress(values, picks))]
        if n <= _PICK_PASSES:
            return [list(compress(values, map(i.__eq__, picks))) for i in range(n)]
        buckets: list[list[Any]] = [[] for _ in range(n)]
        for v, i in zip(values, picks, strict=True):
            buckets[i].append(v)
        return buckets


def subtask(key: Any, n: int) -> int:
    """``stable_hash(key) % n``, cached for str keys (a simulated run routes the same words
    again and again)."""
    if type(key) is not str:
        return stable_hash(key) % n
    cache = _SUBTASKS.get(n)
    if cache is None:
        cache = _SUBTASKS[n] = {}
    i = cache.get(key)
    if i is None:
        i = stable_hash(key) % n
        if len(cache) >= _SUBTASKS_MAX:
            cache.clear()
        cache[key] = i
    return i


def _hashed(values: Sequence[Any], keys: Sequence[Any], n: int) -> list[list[Any]]:
    """:meth:`Hash.split` of a batch whose keys are not words (the Figure 5 job's ints):
    one pass, each key hashed as :func:`subtask` would (looking such keys up in the str
    cache first made this path half as fast again)."""
    buckets: list[list[Any]] = [[] for _ in range(n)]
    for v, k in zip(values, keys, strict=True):
        buckets[stable_hash(k) % n].append(v)
    return buckets


def _fill(picks: list[Any], keys: Sequence[Any], n: int) -> None:
    """The subtasks of the keys ``picks`` misses (None)."""
    for j, k in enumerate(keys):
        if picks[j] is None:
            picks[j] = subtask(k, n)


@dataclass(frozen=True, slots=True)
class Broadcast:
    """Every record goes to every subtask."""

    name = "broadcast"

    def targets(self, value: Any, sender: int, n: int, sent: int) -> range | tuple[int, ...]:
        return range(n)

    def split(self, values: Sequence[Any], sender: int, n: int, sent: int) -> list[list[Any]]:
        """Every subtask gets all of ``values``."""
        return [list(values) for _ in range(n)]


@dataclass(frozen=True, slots=True)
class Rebalance:
    """Round robin, starting at the sender's own index."""

    name = "rebalance"

    def targets(self, value: Any, sender: int, n: int, sent: int) -> range | tuple[int, ...]:
        return ((sender + sent) % n,)

    def split(self, values: Sequence[Any], sender: int, n: int, sent: int) -> list[list[Any]]:
        """:meth:`targets` of each of ``values`` in turn (the i-th is sent ``sent + i``)."""
        return [list(values[(b - sender - sent) % n :: n]) for b in range(n)]


Partitioning = Forward | Hash | Broadcast | Rebalance


@dataclass(frozen=True, slots=True)
class OperatorSpec:
    """An operator of a job graph: a name, what it computes, and how many tasks run it."""

    name: str
    kind: OperatorKind
    function: Any
    parallelism: int


@dataclass(frozen=True, slots=True)
class Edge:
    """A job-graph edge from one operator to another."""

    src: str
    dst: str
    partitioning: Partitioning


@dataclass(frozen=True, slots=True)
class OutputGate:
    """One output edge of a task: its target operator, partitioning and channels by subtask."""

    target: str
    partitioning: Partitioning
    channels: tuple[ChannelId, ...]


MAX_PARALLELISM = 512
"""The most tasks of one operator absnb builds: two operators joined all-to-all at this
parallelism already have 262,144 channels (and a Spark run needs a slot per task)."""


@dataclass
class JobGraph:
    """A dataflow program: named operators and partitioned edges between them.

    Example:
        >>> from absnb.operators import CollectSink, Source
        >>> g = JobGraph("demo")
        >>> g.add("numbers", "source", function=Source(), parallelism=1)
        >>> g.add("out", "sink", function=CollectSink())
        >>> g.connect("numbers", "out")
        >>> [str(t) for t in g.compile().tasks]
        ['numbers', 'out']

    ``function`` is an :class:`~absnb.operators.base.Operator` (anything with ``process`` and
    ``initial_state``); a plain function is refused when it is added. None is allowed for a
    graph that is only compiled (its topology), never run: a runtime refuses it.
    """

    name: str
    operators: dict[str, OperatorSpec] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)

    def add(self, name: str, kind: OperatorKind, function: Any, parallelism: int = 1) -> None:
        """Add an operator; its name must be unique and its parallelism between 1 and
        :data:`~absnb.core.graph.MAX_PARALLELISM`."""
        if name in self.operators:
            raise GraphError(
                f"duplicate operator name {name!r} in job {self.name!r}: "
                "give every operator its own name"
            )
        if not isinstance(parallelism, int) or parallelism < 1:
            raise GraphError(
                f"operator {name!r} has parallelism {parallelism!r}: "
                "parallelism must be a whole number of at least 1"
            )
        if parallelism > MAX_PARALLELISM:
            raise GraphError(
                f"operator {name!r} has parallelism {parallelism:,}, more than absnb runs "
                f"({MAX_PARALLELISM}): building its channels alone would not finish; use at "
                f"most {MAX_PARALLELISM}"
            )
        if kind not in ("source", "operator", "sink", "process"):
            raise GraphError(
                f"operator {name!r} has kind {kind!r}: use source, operator, sink or process"
            )
        if function is not None and not (
            callable(getattr(function, "process", None)) and hasattr(function, "initial_state")
        ):
            raise GraphError(
                f"operator {name!r} has function {function!r}, which is not an operator: pass "
                "an absnb.operators.Operator such as Source(), Map(fn) or CollectSink()"
            )
        self.operators[name] = OperatorSpec(name, kind, function, parallelism)

    def connect(self, src: str, dst: str, partitioning: Partitioning | None = None) -> None:
        """Add an edge; forward partitioning by default."""
        self.edges.append(Edge(src, dst, partitioning or Forward()))

    def compile(self) -> ExecutionGraph:
        """Check the graph and expand it into tasks and channels."""
        self._validate()
        return ExecutionGraph(self)

    def _validate(self) -> None:
        if not self.operators:
            raise GraphError(f"job {self.name!r} has no operators: add a source first")
        seen: set[tuple[str, str]] = set()
        for e in self.edges:
            self._check_edge(e, seen)
            seen.add((e.src, e.dst))
        starts = [o.name for o in self.operators.values() if o.kind in ("source", "process")]
        if not starts:
            raise GraphError(
                f"job {self.name!r} has no source and no process: nothing would ever produce "
                "a record; add a source"
            )
        reached = _reachable(starts, self.edges)
        missing = [n for n in self.operators if n not in reached]
        if missing:
            raise GraphError(
                f"operators {', '.join(missing)} of job {self.name!r} cannot be reached from any "
                "source, so no barrier would reach them: connect them or remove them"
            )

    def _check_edge(self, e: Edge, seen: set[tuple[str, str]]) -> None:
        """Raise if edge ``e`` names an unknown operator, repeats one of ``seen``, enters a
        source, leaves a sink, or is a forward edge between different parallelisms."""
        for end in (e.src, e.dst):
            if end not in self.operators:
                raise GraphError(
                    f"edge {e.src}->{e.dst} names {end!r}, which is not an operator of job "
                    f"{self.name!r} (operators: {', '.join(self.operators)}): "
                    "add the operator first or fix the name"
                )
        if (e.src, e.dst) in seen:
            raise GraphError(f"edge {e.src}->{e.dst} is given twice: connect two operators once")
        src, dst = self.operators[e.src], self.operators[e.dst]
        if dst.kind == "source":
            raise GraphError(
                f"source {dst.name!r} has an input ({e.src}->{e.dst}): a source reads only "
                "its input log; make it an operator, or a process if it must do both"
            )
        if src.kind == "sink":
            raise GraphError(
                f"sink {src.name!r} has an output ({e.src}->{e.dst}): "
                "make it an operator if it must send on"
            )
        if isinstance(e.partitioning, Forward) and src.parallelism != dst.parallelism:
            raise GraphError(
                f"forward edge {e.src}->{e.dst} joins parallelism {src.parallelism} to "
                f"{dst.parallelism}: use Hash, Rebalance or Broadcast, or equal parallelism"
            )


def _reachable(starts: Iterable[str], edges: list[Edge]) -> set[str]:
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(e.dst for e in edges if e.src == n)
    return seen


def find_back_edges(roots: list[str], edges: list[Edge]) -> frozenset[tuple[str, str]]:
    """Edges to an operator on the DFS stack, searching from ``roots`` (paper section 4.3).

    Removing them leaves a DAG G(T, E \\ L). The search is iterative and visits edges in
    declaration order, so the result is deterministic.
    """
    out: dict[str, list[str]] = {}
    for e in edges:
        out.setdefault(e.src, []).append(e.dst)
    back: set[tuple[str, str]] = set()
    visited: set[str] = set()
    for root in roots:
        if root in visited:
            continue
        visited.add(root)
        on_stack = {root}
        stack = [(root, iter(out.get(root, ())))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                on_stack.discard(node)
            elif nxt in on_stack:
                back.add((node, nxt))
            elif nxt not in visited:
                visited.add(nxt)
                on_stack.add(nxt)
                stack.append((nxt, iter(out.get(nxt, ()))))
    return frozenset(back)


class ExecutionGraph:
    """G = (T, E): the tasks and FIFO channels of a compiled job graph.

    Attributes:
        job: the job graph it was compiled from.
        tasks: every task, operators in declaration order, subtasks in order.
        channels: every channel.
        back_edges: the loop channels L (every channel of a job-graph back-edge).
        roots: the operators the back-edge search starts from and the coordinator injects
            barriers into: the sources, or for a graph of processes only, the first process.
    """

    def __init__(self, job: JobGraph) -> None:
        self.job = job
        self.name = job.name
        self.operators = job.operators
        self.tasks: tuple[TaskId, ...] = tuple(
            TaskId(o.name, i, o.parallelism)
            for o in job.operators.values()
            for i in range(o.parallelism)
        )
        self._by_label = {str(t): t for t in self.tasks}
        self._tasks_of = {
            name: tuple(t for t in self.tasks if t.operator == name) for name in job.operators
        }
        sources = [o.name for o in job.operators.values() if o.kind == "source"]
        processes = [o.name for o in job.operators.values() if o.kind == "process"]
        self.roots: tuple[str, ...] = tuple(sources or processes[:1])
        back_ops = find_back_edges([*self.roots, *processes], job.edges)
        self.back_edge_operators = back_ops

        inputs: dict[TaskId, list[ChannelId]] = {t: [] for t in self.tasks}
        gates: dict[TaskId, list[OutputGate]] = {t: [] for t in self.tasks}
        channels: list[ChannelId] = []
        for e in job.edges:
            dst_tasks = self._tasks_of[e.dst]
            for s in self._tasks_of[e.src]:
                chans: tuple[ChannelId, ...]
                if isinstance(e.partitioning, Forward):
                    chans = (ChannelId(s, dst_tasks[s.subtask]),)
                else:
                    chans = tuple(ChannelId(s, d) for d in dst_tasks)
                gates[s].append(OutputGate(e.dst, e.partitioning, chans))
                for c in chans:
                    inputs[c.dst].append(c)
                    channels.append(c)
        self.channels: tuple[ChannelId, ...] = tuple(channels)
        self._by_channel_label = {str(c): c for c in self.channels}
        self.inputs: dict[TaskId, tuple[ChannelId, ...]] = {t: tuple(v) for t, v in inputs.items()}
        self.gates: dict[TaskId, tuple[OutputGate, ...]] = {t: tuple(v) for t, v in gates.items()}
        self.outputs: dict[TaskId, tuple[ChannelId, ...]] = {
            t: tuple(c for g in v for c in g.channels) for t, v in gates.items()
        }
        self.back_edges: frozenset[ChannelId] = frozenset(
            c for c in self.channels if (c.src.operator, c.dst.operator) in back_ops
        )
        self.fingerprint = _fingerprint(job)

    # -- lookups ---------------------------------------------------------------------------
    def kind(self, task: TaskId) -> OperatorKind:
        """The kind of the task's operator."""
        return self.operators[task.operator].kind

    def function(self, task: TaskId) -> Any:
        """The operator function the task runs."""
        return self.operators[task.operator].function

    def tasks_of(self, operator: str) -> tuple[TaskId, ...]:
        """The tasks of one operator, by subtask."""
        return self._tasks_of[operator]

    def task(self, label: str | TaskId) -> TaskId:
        """The task named ``label`` (as printed: ``A``, ``count[1]``)."""
        if isinstance(label, TaskId):
            label = str(label)
        try:
            return self._by_label[label]
        except KeyError:
            raise GraphError(
                f"job {self.name!r} has no task {label!r}; its tasks are: "
                f"{', '.join(self._by_label)}"
            ) from None

    def channel(self, label: str | ChannelId) -> ChannelId:
        """The channel named ``label`` (as printed: ``A->B``)."""
        if isinstance(label, ChannelId):
            label = str(label)
        try:
            return self._by_channel_label[label]
        except KeyError:
            raise GraphError(
                f"job {self.name!r} has no channel {label!r}; its channels are: "
                f"{', '.join(self._by_channel_label)}"
            ) from None

    @property
    def is_cyclic(self) -> bool:
        """True when the graph has a back-edge."""
        return bool(self.back_edges)

    def initiators(self) -> tuple[TaskId, ...]:
        """Tasks the coordinator injects a checkpoint into (the paper's "Nil" input)."""
        return tuple(t for name in self.roots for t in self._tasks_of[name])

    def upstream(self, task: TaskId) -> frozenset[TaskId]:
        """The task and every task with a path to it."""
        return _closure(task, self.inputs, lambda c: c.src)

    def downstream(self, task: TaskId) -> frozenset[TaskId]:
        """The task and every task it has a path to."""
        return _closure(task, self.outputs, lambda c: c.dst)

    def __repr__(self) -> str:
        return (
            f"ExecutionGraph({self.name!r}, {len(self.tasks)} tasks, "
            f"{len(self.channels)} channels, {len(self.back_edges)} loop channels)"
        )


def _closure(
    start: TaskId,
    edges: dict[TaskId, tuple[ChannelId, ...]],
    other_end: Callable[[ChannelId], TaskId],
) -> frozenset[TaskId]:
    seen = {start}
    todo = [start]
    while todo:
        for c in edges[todo.pop()]:
            t = other_end(c)
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return frozenset(seen)


def _fingerprint(job: JobGraph) -> str:
    parts = [job.name]
    for o in job.operators.values():
        parts.append(f"{o.name}:{o.kind}:{o.parallelism}:{o.function!r}")
    for e in job.edges:
        parts.append(f"{e.src}->{e.dst}:{e.partitioning.name}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
