"""A simulated run's trace as the event rows a real run's log has (steps as time)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

import absnb
from absnb.core.events import KINDS, cut_problems
from absnb.sim.event_rows import trace_rows
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.views.run_diagram import run_svg


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


def test_one_view_draws_a_simulated_run_in_steps() -> None:
    st = stepped("abs")
    svg = run_svg(trace_rows(st.trace, st.world), "simulated", unit="step")
    assert re.search(r">step \d+</text>", svg)
    assert "cut 1" in svg
    assert "records per second" not in svg
