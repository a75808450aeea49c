"""Traces of the new modes replay exactly: the alignment timeout is in the header, and the
wait and decline actions round-trip."""

from __future__ import annotations

import absnb
from absnb.sim.actions import DeclineCheckpoint, Wait
from absnb.sim.trace import action_from_json, action_to_json, replay, save_trace


def test_an_abs_timeout_run_with_a_decline_replays_exactly(tmp_path):
    job = absnb.bank_transfer({"A": 1_000, "B": 2_000, "C": 3_000}, transfers=6)
    world = absnb.World(job, "abs", checkpoint_interval=3, alignment_timeout=2)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=5), history=False)
    stepper.run(12)
    stepper.run(until=lambda w: bool(w.coordinator.pending))
    pending = stepper.world.coordinator.pending
    task = next(t for t in job.graph.tasks if t not in pending[min(pending)].acknowledged)
    stepper.step(DeclineCheckpoint(task, "restoring"))
    stepper.run()
    assert stepper.world.coordinator.declined
    assert any(isinstance(e.action, Wait) or e.switched for e in stepper.trace)
    path = tmp_path / "run.jsonl"
    save_trace(path, world, stepper.actions, stepper.trace)
    again = replay(path)
    assert again.world == stepper.world
    assert again.world.protocol.alignment_timeout == 2
    assert [e.describe() for e in again.trace] == [e.describe() for e in stepper.trace]


def test_wait_and_decline_round_trip():
    graph = absnb.word_count().graph
    for action in (Wait(), DeclineCheckpoint(graph.task("count[1]"), "restoring")):
        assert action_from_json(action_to_json(action), graph) == action
