"""A task fed batches does what it does fed the same records one by one.

The real runtime moves :class:`RecordBatch` messages (one operator call per batch, one batch
per output channel); the simulator moves single records. For every kind of task (hash,
forward, rebalance and broadcast gates, outputs along one edge only, sources, processes, a
loop head) and every protocol, random scripts of records, duplicates, barriers or markers,
triggers and input-log entries are run both ways: the tasks end in the same state, send the
same records with the same numbers and the same barriers on every channel, and return the
same controls (blocks, snapshots with their channel states and backup logs, drops).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from absnb import CheckpointBarrier, JobGraph, Marker, Record, get_protocol
from absnb.core.effects import Block, Unblock
from absnb.core.errors import CyclicGraphError
from absnb.core.graph import Broadcast as BroadcastEdge
from absnb.core.graph import ExecutionGraph, Hash, Rebalance
from absnb.core.ids import ChannelId
from absnb.core.messages import RecordBatch, as_records
from absnb.core.snapshot import TaskSnapshot
from absnb.experiments.paper import text_job
from absnb.jobs import bank_transfer, cyclic, word_count
from absnb.operators import CollectSink, Map, Source
from absnb.protocols import PROTOCOLS
from absnb.task import Out, StreamTask

WORDS = st.sampled_from(["to", "be", "or", "not", "a", "question"])
LINES = st.lists(WORDS, max_size=5).map(" ".join)


def upper(value: str) -> str:
    return value.upper()


def gates() -> ExecutionGraph:
    """Two sources into ``m``, which sends on three gates: rebalance, broadcast, hash."""
    g = JobGraph("gates")
    g.add("a", "source", Source())
    g.add("b", "source", Source())
    g.add("m", "operator", Map(upper))
    g.add("x", "sink", CollectSink(), 3)
    g.add("y", "sink", CollectSink(), 2)
    g.add("z", "sink", CollectSink(), 3)
    g.connect("a", "m")
    g.connect("b", "m")
    g.connect("m", "x", Rebalance())
    g.connect("m", "y", BroadcastEdge())
    g.connect("m", "z", Hash(upper))
    return g.compile()


@dataclass(frozen=True)
class Case:
    graph: ExecutionGraph
    task: str
    values: Callable[[ChannelId], st.SearchStrategy[Any]]
    entries: st.SearchStrategy[Any] | None = None


LOOP_RECORDS = st.tuples(st.integers(1, 30), st.integers(1, 30), st.integers(0, 5))


def _loop_values(c: ChannelId) -> st.SearchStrategy[Any]:
    return st.integers(1, 30) if c.src.operator == "source" else LOOP_RECORDS


def _bank_case() -> Case:
    graph = bank_transfer().graph
    a = graph.task("A")
    return Case(
        graph,
        "A",
        lambda c: st.integers(1, 500),
        st.tuples(st.sampled_from([c.dst.operator for c in graph.outputs[a]]), st.integers(1, 500)),
    )


_words = word_count(sources=2, counters=3, sinks=3).graph
_final = text_job(0.01, parallelism=2).graph
COUNTS = st.tuples(WORDS, st.integers(1, 9))
_loop = cyclic(parallelism=2, sources=2).graph
CASES = {
    "counter: hash in, forward out": Case(_words, "count[1]", lambda c: WORDS),
    "source: hash out": Case(_words, "source[0]", lambda c: WORDS, LINES),
    "collecting sink": Case(_words, "sink[2]", lambda c: COUNTS),
    "final count sink (benchmarks)": Case(_final, "sink[1]", lambda c: COUNTS),
    "rebalance, broadcast and hash gates": Case(gates(), "m", lambda c: WORDS),
    "loop head": Case(_loop, "head[0]", _loop_values),
    "loop step: outputs along one edge": Case(_loop, "step[1]", lambda c: LOOP_RECORDS),
    "bank account: a process": _bank_case(),
}


def _per_channel(sends: list[tuple[ChannelId, Any]]) -> dict[ChannelId, list[Any]]:
    """What was sent on each channel: records as (number, value), other messages as is."""
    out: dict[ChannelId, list[Any]] = {}
    for c, m in sends:
        items = out.setdefault(c, [])
        if type(m) is RecordBatch:
            items.extend((r.seq, r.value) for r in m.records())
        elif type(m) is Record:
            items.append((m.seq, m.value))
        else:
            items.append(m)
    return out


def _normal(control: Any) -> Any:
    """A control with batches in its recorded channel states expanded to their records."""
    if type(control) is TaskSnapshot:
        states = {c: as_records(ms) for c, ms in control.channel_states.items()}
        return replace(control, channel_states=states)
    return control


def _protocols(graph: ExecutionGraph) -> list[str]:
    usable = []
    for name in PROTOCOLS:
        try:
            get_protocol(name, graph)
        except CyclicGraphError:
            continue
        usable.append(name)
    return usable


@pytest.mark.parametrize(
    ("case", "protocol"),
    [(c, p) for c in CASES for p in _protocols(CASES[c].graph)],
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_batch_is_its_records_one_by_one(case: str, protocol: str, data: st.DataObject) -> None:
    spec = CASES[case]
    graph = spec.graph
    t = graph.task(spec.task)
    proto = get_protocol(protocol, graph)
    one = StreamTask(graph, t, proto)
    batched = StreamTask(graph, t, proto, history=False)
    inputs = graph.inputs[t]
    barrier = Marker if protocol == "chandy-lamport" else CheckpointBarrier
    initiator = t in graph.initiators()
    out_one, out_batched = Out(), Out()  # what each task sent and returned, in order
    seqs = dict.fromkeys(inputs, 0)
    barriers = dict.fromkeys(inputs, 0)
    blocked: set[ChannelId] = set()
    triggered = 0

    def started() -> int:  # the newest checkpoint a barrier may belong to
        seen = max(barriers.values(), default=0)
        return triggered if initiator else seen + 1

    for _ in range(data.draw(st.integers(1, 10), label="steps")):
        options = []
        open_inputs = [c for c in inputs if c not in blocked]
        if open_inputs:
            options += ["records", "again"]
            if any(barriers[c] < started() for c in open_inputs):
                options.append("barrier")
        if spec.entries is not None and not one.halted:
            options.append("entries")
        if initiator:
            options.append("trigger")
        if not options:
            break
        step = data.draw(st.sampled_from(options), label="step")
        if step in ("records", "again"):
            c = data.draw(st.sampled_from(open_inputs), label="channel")
            values = data.draw(st.lists(spec.values(c), min_size=1, max_size=8), label="values")
            first = seqs[c] + 1
            if step == "again":  # a replay: some already delivered, maybe some new
                first = max(1, first - data.draw(st.integers(1, 4), label="back"))
            seqs[c] = max(seqs[c], first + len(values) - 1)
            for i, v in enumerate(values):
                one.deliver(c, Record(v, first + i), out_one)
            batched.deliver_batch(c, RecordBatch(values, first), out_batched)
        elif step == "barrier":
            c = data.draw(
                st.sampled_from([c for c in open_inputs if barriers[c] < started()]),
                label="channel",
            )
            barriers[c] += 1
            m = barrier(barriers[c])
            one.deliver(c, m, out_one)
            batched.deliver(c, m, out_batched)
        elif step == "entries":
            entries = data.draw(st.lists(spec.entries, min_size=1, max_size=6), label="entries")
            for e in entries:
                one.emit(e, out_one)
            batched.emit_batch(entries, out_batched)
        else:
            triggered += 1
            one.trigger(triggered, out_one, 0)
            batched.trigger(triggered, out_batched, 0)
        for ctl in out_one.controls:
            if type(ctl) is Block:
                blocked.add(ctl.channel)
            elif type(ctl) is Unblock:
                blocked.discard(ctl.channel)

    assert _per_channel(out_batched.sends) == _per_channel(out_one.sends)
    assert list(map(_normal, out_batched.controls)) == out_one.controls
    assert batched.key() == one.key()
    assert batched.consumed == one.consumed
