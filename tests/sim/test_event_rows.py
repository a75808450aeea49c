"""A simulated run's trace as the event rows a real run's log has (steps as time)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

import absnb
from absnb.core.events import KINDS, cut_problems
from absnb.sim.actions import Crash, Deliver, Recover, Transfer, TriggerCheckpoint
from absnb.sim.event_rows import cached_trace_rows, trace_rows
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World


def stepped(protocol: str, seed: int = 1, steps: int = 300) -> Stepper:
    st = Stepper(
        World(absnb.word_count(), protocol, checkpoint_interval=6), RandomScheduler(seed=seed)
    )
    st.run(steps)
    return st


@pytest.mark.parametrize("protocol", ["abs", "chandy-lamport", "unaligned"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_completed_cut_of_a_simulated_run_is_consistent_from_its_rows(protocol, seed):
    st = stepped(protocol, seed)
    rows = trace_rows(st.trace, st.world)
    completed = [s.checkpoint_id for s in st.world.snapshots]
    assert completed
    assert {r.kind for r in rows} <= set(KINDS)
    assert cut_problems(rows, completed) == []
    records = sum(r.count or 0 for r in rows if r.kind == "records")
    assert records == sum(sum(t.received.values()) for t in st.world.tasks.values())


def test_a_tampered_simulated_snapshot_is_named() -> None:
    st = stepped("abs")
    rows = trace_rows(st.trace, st.world)
    n = st.world.snapshots[0].checkpoint_id
    i, row = next((i, r) for i, r in enumerate(rows) if r.kind == "snapshot" and r.consumed)
    channel = next(iter(row.consumed))
    rows[i] = replace(row, consumed={**row.consumed, channel: row.consumed[channel] + 1})
    problems = cut_problems(rows, [n])
    assert any(p.startswith(f"checkpoint {n}, channel {channel}:") for p in problems)


@pytest.mark.parametrize("protocol", ["abs", "chandy-lamport", "unaligned"])
def test_every_message_sent_is_a_row_and_each_delivery_takes_one(protocol: str) -> None:
    st = stepped(protocol, steps=60)  # stopped half way: messages still in flight
    rows = trace_rows(st.trace, st.world)
    sent = Counter(r.channel for r in rows if r.kind == "sent")
    delivered = Counter(
        r.channel for r in rows if r.kind in ("records", "barrier", "marker", "cancel")
    )
    in_flight = {str(c): len(q) for c, q in st.world.channels.items()}
    assert sent  # sources emitted
    assert all(sent[c] == delivered[c] + in_flight.get(c, 0) for c in sent | delivered)
    records = [r for r in rows if r.kind == "sent" and r.count == 1]
    assert records
    assert all(r.detail and r.checkpoint is None for r in records)


def test_a_recovery_puts_the_restored_channel_state_back_as_rows() -> None:
    job = absnb.bank_transfer()
    a, b = job.graph.task("A"), job.graph.task("B")
    ab, ba = job.graph.channel("A->B"), job.graph.channel("B->A")
    st = Stepper(World(job, "chandy-lamport"))
    script = [Transfer(a, b, 1000), TriggerCheckpoint(at=a), Transfer(b, a, 1000)]
    script += [Deliver(ab), Deliver(ab), Deliver(ba), Deliver(ba), Crash(b), Recover()]
    for action in script:  # checkpoint 1 records the 1,000 on B->A as channel state
        st.step(action)
    rows = trace_rows(st.trace, st.world)
    (restored,) = {r.time for r in rows if r.kind == "restored"}
    replayed = [r for r in rows if r.kind == "sent" and r.count and r.checkpoint is not None]
    assert [(r.time, r.channel, r.detail, r.checkpoint) for r in replayed] == [
        (restored, "B->A", "1,000", 1)
    ]
    assert {r.detail for r in rows if r.kind == "restored"} == {"full"}
    with pytest.raises(ValueError, match="has no completed checkpoint 1"):
        trace_rows(st.trace, World(job, "chandy-lamport"))


@pytest.mark.parametrize(
    ("protocol", "recovery"),
    [("abs", "partial"), ("chandy-lamport", "full"), ("unaligned", "full")],
)
def test_rows_converted_as_the_trace_grows_are_the_rows_of_the_whole_trace(protocol, recovery):
    """A stepper stepped, stepped back and run on: the cached rows (only the steps added
    converted, snapshot counts filled in when their checkpoint completes) are always
    those of converting the whole trace, and a slice of it is converted on its own."""
    words = ["to", "be", "or", "not", "that", "is"]
    lines = [" ".join(words[(i + j) % 6] for j in range(5)) for i in range(40)]
    job = absnb.word_count([lines[0::2], lines[1::2]])
    st = Stepper(
        World(job, protocol, checkpoint_interval=7),
        RandomScheduler(seed=2, crash_at=130, recovery=recovery),
    )
    for i in range(240):
        if i % 9 == 8:
            st.back()
        elif st.step() is None:
            break
        assert cached_trace_rows(st.trace, st.world) == trace_rows(st.trace, st.world)
        assert cached_trace_rows(st.trace, None) == trace_rows(st.trace, None)
        assert cached_trace_rows(st.trace[3:], st.world) == trace_rows(st.trace[3:], st.world)
    assert any(e.restored and e.restored[0] for e in st.trace)  # a checkpoint put back
    assert any(
        r.kind == "snapshot" and r.sent is not None for r in cached_trace_rows(st.trace, st.world)
    )
