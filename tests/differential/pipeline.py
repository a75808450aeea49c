"""A whole job's :class:`~absnb.task.StreamTask` objects in one process, driven by a script,
three ways: ``record`` (one record at a time, as the simulator moves them), ``batch`` (a
batch of Python values per operator call, the real runtime's per-record path) and
``columnar`` (sources emit Arrow columns that stay columns through word count's operators,
the real runtime's columnar path). Every message crosses a pickle, as between two hosts.

A step is ``("emit", source, k)`` (a source reads its next ``k`` entries), ``("trigger",)``
(the coordinator starts the next checkpoint at every source), ``("deliver", i)`` (the
``i``-th unblocked channel with something queued, counted modulo their number, consumes its
oldest unit: a batch, a barrier or marker, or in ``record`` mode the records one batch
would hold, one at a time) or ``("crash",)`` (every task restores from the latest completed
checkpoint, its recorded channel state queued again ahead of anything new; without one,
from the start). Each way keeps the snapshots taken per checkpoint, normalised so that the
three compare (:func:`normal`)."""

from __future__ import annotations

import pickle
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any

from absnb.core.array_snapshot import ArraySnapshot
from absnb.core.effects import Block, Unblock
from absnb.core.job import Job
from absnb.core.messages import Record, RecordBatch, as_records
from absnb.core.snapshot import TaskSnapshot
from absnb.operators.array_state import ArrayKeyedState
from absnb.protocols import get_protocol
from absnb.task import Out, StreamTask

MODES = ("record", "batch", "columnar")


def normal(state: Any) -> Any:
    """A task's state or snapshot as plain values: a keyed array state or its snapshot as
    the list of its ``(key, value)`` pairs, in slot order."""
    if isinstance(state, ArraySnapshot):
        return list(zip(list(state.keys), state.values.tolist(), strict=True))
    if isinstance(state, ArrayKeyedState):
        return list(state.items())
    if isinstance(state, dict):
        return list(state.items())  # insertion order too
    return state


def _snapshot(s: TaskSnapshot) -> tuple[Any, ...]:
    channels = {
        str(c): tuple(r.value for r in as_records(rs)) for c, rs in s.channel_states.items()
    }
    return (normal(s.state), s.offset, dict(s.sent), dict(s.received), channels)


class Pipeline:
    """One way (``mode``) of running ``job`` under ``protocol``."""

    def __init__(self, job: Job, protocol: str, mode: str) -> None:
        self.job, self.mode = job, mode
        self.graph = graph = job.graph
        proto = get_protocol(protocol, graph)
        self.tasks = {t: StreamTask(graph, t, proto, history=False) for t in graph.tasks}
        for task in self.tasks.values():
            task.columnar = mode == "columnar"
        self.queues: dict[Any, deque[Any]] = {c: deque() for c in graph.channels}
        self.blocked: set[Any] = set()
        self.next_id = 1
        self.acks: dict[int, dict[Any, TaskSnapshot]] = {}
        self.completed: int | None = None
        self.complete: dict[int, dict[Any, TaskSnapshot]] = {}
        """The snapshots of each completed checkpoint, by task."""
        self.snapshots: dict[int, dict[str, tuple[Any, ...]]] = {}
        """Per checkpoint, per task: what its snapshot holds, normalised."""
        self.columnar_batches = 0
        self.columnar_into: Counter[str] = Counter()
        """Columnar batches sent, by the operator they were sent to."""

    # -- steps
    def step(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "emit":
            self.emit(step[1], step[2])
        elif kind == "trigger":
            n, self.next_id = self.next_id, self.next_id + 1
            for t in self.graph.tasks_of("source"):
                out = Out()
                self.tasks[t].trigger(n, out, 0.0)
                self._carry(t, out)
        elif kind == "deliver":
            ready = [c for c, q in self.queues.items() if q and c not in self.blocked]
            if ready:
                self.deliver(ready[step[1] % len(ready)])
        elif kind == "crash":
            self.crash()

    def emit(self, source: int, k: int) -> None:
        sources = self.graph.tasks_of("source")
        t = sources[source % len(sources)]
        task = self.tasks[t]
        log = self.job.inputs[t]
        entries = log[task.offset : task.offset + k]
        if not entries or task.halted:
            return
        out = Out()
        if self.mode == "record":
            for entry in entries:
                task.emit(entry, out)
        else:
            task.emit_batch(entries, out)
        self._carry(t, out)

    def deliver(self, c: Any) -> None:
        unit = self.queues[c].popleft()
        task, out = self.tasks[c.dst], Out()
        if type(unit) is list:  # record mode: the records of one batch, one at a time
            for r in unit:
                task.deliver(c, r, out)
        elif type(unit) is RecordBatch:
            task.deliver_batch(c, unit, out)
        else:
            task.deliver(c, unit, out)
        self._carry(c.dst, out)

    def drain(self) -> None:
        """Every source reads the rest of its input, and everything is delivered."""
        for i, _ in enumerate(self.graph.tasks_of("source")):
            self.emit(i, 1 << 30)
        while True:
            ready = [c for c, q in self.queues.items() if q and c not in self.blocked]
            if not ready:
                return
            self.deliver(ready[0])

    def crash(self) -> None:
        n = self.completed
        for q in self.queues.values():
            q.clear()
        self.blocked.clear()
        self.acks = {}
        for t, task in self.tasks.items():
            snapshot = self.complete[n].get(t) if n is not None else None
            task.restore(snapshot)
            if snapshot is not None:
                for c, recorded in snapshot.channel_states.items():
                    if recorded:
                        self.queues[c].append(self._unit(tuple(recorded)))

    # -- what a step produced
    def _carry(self, t: Any, out: Out) -> None:
        for control in out.controls:
            if type(control) is Block:
                self.blocked.add(control.channel)
            elif type(control) is Unblock:
                self.blocked.discard(control.channel)
            elif type(control) is TaskSnapshot:
                self._ack(control)
        pending: dict[Any, list[Record]] = {}
        for c, m in out.sends:
            m = pickle.loads(pickle.dumps(m))  # as between hosts
            if type(m) is Record:
                unit = pending.get(c)
                if unit is None:
                    unit = pending[c] = []
                    self.queues[c].append(unit)
                unit.append(m)
                continue
            pending.pop(c, None)
            if type(m) is RecordBatch and type(m.values) is not list:
                self.columnar_batches += 1
                self.columnar_into[c.dst.operator] += 1
            self.queues[c].append(m)

    def _ack(self, s: TaskSnapshot) -> None:
        n = s.checkpoint_id
        self.snapshots.setdefault(n, {})[str(s.task)] = _snapshot(s)
        acks = self.acks.setdefault(n, {})
        acks[s.task] = pickle.loads(pickle.dumps(s))  # as stored
        if len(acks) == len(self.tasks):
            self.completed = n
            self.complete[n] = acks
            for t, task in self.tasks.items():
                out = Out()
                task.checkpoint_complete(n, out)
                self._carry(t, out)

    def _unit(self, recorded: tuple[Any, ...]) -> Any:
        """Recorded in-flight records queued again: one unit as this mode sends them."""
        records = list(as_records(recorded))
        if self.mode == "record":
            return records
        if self.mode == "columnar" and all(
            type(r) is RecordBatch and type(r.values) is not list for r in recorded
        ):
            return _joined(recorded)
        return RecordBatch([r.value for r in records], records[0].seq)

    # -- results
    def states(self) -> dict[str, Any]:
        return {str(t): normal(task.state) for t, task in self.tasks.items()}


def _joined(batches: Sequence[RecordBatch]) -> RecordBatch:
    """Consecutive columnar batches as one."""
    import pyarrow as pa

    from absnb.core.columns import Columns

    first = batches[0].values
    assert isinstance(first, Columns)
    arrays = [
        pa.concat_arrays([b.values.arrays[i] for b in batches])  # type: ignore[union-attr]
        for i in range(len(first.arrays))
    ]
    return RecordBatch(Columns(first.names, arrays), batches[0].first)


def run(job: Job, protocol: str, mode: str, steps: Sequence[tuple[Any, ...]]) -> Pipeline:
    """``steps``, then the rest of the input, one way."""
    p = Pipeline(job, protocol, mode)
    for s in steps:
        p.step(s)
    p.drain()
    return p
