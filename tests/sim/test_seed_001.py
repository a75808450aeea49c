"""Seed 001 (notebook 01, Chandy-Lamport): the bank walkthrough, step by step, same numbers.

A=10,000 and B=5,000. A sends 1,000 to B; A initiates the snapshot; B sends 1,000 and
2,000 to A; the 1,000 reaches B, then the marker (B records 3,000); 1,000 and 2,000 reach A
while A records channel B->A; B's marker reaches A. Snapshot: A'=9,000, B'=3,000,
B->A=[1,000, 2,000], A->B=[]. Every expected number below is worked out by hand.
"""

from __future__ import annotations

import pytest

import absnb
from absnb.core.messages import Record
from absnb.sim.checks import snapshot_problems

JOB = absnb.bank_transfer()
A = JOB.graph.task("A")
B = JOB.graph.task("B")
AB = JOB.graph.channel("A->B")
BA = JOB.graph.channel("B->A")

SCRIPT = [
    absnb.Transfer(A, B, 1000),
    absnb.TriggerCheckpoint(at=A),
    absnb.Transfer(B, A, 1000),
    absnb.Transfer(B, A, 2000),
    absnb.Deliver(AB),  # the 1,000 from A: B = 3,000
    absnb.Deliver(AB),  # the marker: B records 3,000
    absnb.Deliver(BA),  # 1,000: A = 10,000
    absnb.Deliver(BA),  # 2,000: A = 12,000
    absnb.Deliver(BA),  # B's marker: done
]

# After each step of SCRIPT: (A, B, in transit on A->B, in transit on B->A).
EXPECTED = [
    (9_000, 5_000, [1_000], []),
    (9_000, 5_000, [1_000, "marker 1"], []),
    (9_000, 4_000, [1_000, "marker 1"], [1_000]),
    (9_000, 2_000, [1_000, "marker 1"], [1_000, 2_000]),
    (9_000, 3_000, ["marker 1"], [1_000, 2_000]),
    (9_000, 3_000, [], [1_000, 2_000, "marker 1"]),
    (10_000, 3_000, [], [2_000, "marker 1"]),
    (12_000, 3_000, [], ["marker 1"]),
    (12_000, 3_000, [], []),
]


def fresh_world() -> absnb.World:
    return absnb.World(JOB, "chandy-lamport")


def observe(world: absnb.World) -> tuple[int, int, list, list]:
    return (
        world.state_of("A"),
        world.state_of("B"),
        world.channel_values("A->B"),
        world.channel_values("B->A"),
    )


def money(world: absnb.World) -> int:
    """Balances plus the amounts of the records in transit (markers carry no money)."""
    in_transit = sum(m.value for q in world.channels.values() for m in q if type(m) is Record)
    return world.state_of("A") + world.state_of("B") + in_transit


def walk() -> absnb.Stepper:
    stepper = absnb.Stepper(fresh_world(), absnb.ScriptedScheduler([]))
    for action in SCRIPT:
        stepper.step(action)
    return stepper


def test_the_job_is_seed_001():
    assert fresh_world().state_of("A") == 10_000
    assert fresh_world().state_of("B") == 5_000
    assert JOB.total == 15_000
    assert {str(c) for c in JOB.graph.channels} == {"A->B", "B->A"}


def test_every_step_of_the_walkthrough():
    stepper = absnb.Stepper(fresh_world(), absnb.ScriptedScheduler([]))
    events = []
    for i, action in enumerate(SCRIPT):
        event = stepper.step(action)
        events.append(event)
        assert event.step == i
        assert event.action == action
        assert observe(stepper.world) == EXPECTED[i], f"after step {i}: {action}"
        assert money(stepper.world) == 15_000, f"after step {i}: {action}"
        if i < len(SCRIPT) - 1:
            assert stepper.world.latest_snapshot() is None, f"completed early, at step {i}"
    # A records its state when it initiates, B on the marker, and B's marker completes it.
    assert events[1].snapshots == ((A, 1),)
    assert events[1].sent == ((AB, absnb.Marker(1)),)
    assert events[5].snapshots == ((B, 1),)
    assert events[5].sent == ((BA, absnb.Marker(1)),)
    assert [i for i, e in enumerate(events) if e.snapshots] == [1, 5]
    assert events[8].completed == (1,)
    assert all(not e.completed for e in events[:8])
    assert [e.message for e in events[4:8]] == [
        Record(1_000, 1, ("A", 0)),
        absnb.Marker(1),
        Record(1_000, 1, ("B", 0)),
        Record(2_000, 2, ("B", 1)),
    ]


def test_the_snapshot():
    world = walk().world
    assert len(world.snapshots) == 1
    snap = world.latest_snapshot()
    assert snap == world.snapshots[0]
    assert snap.checkpoint_id == 1
    assert snap.protocol == "chandy-lamport"
    assert snap.state_of("A") == 9_000
    assert snap.state_of("B") == 3_000
    assert snap.task_states == {A: 9_000, B: 3_000}
    assert snap.channel_values() == {"A->B": [], "B->A": [1_000, 2_000]}
    # 9,000 + 3,000 + 1,000 + 2,000: the total is conserved in the cut.
    recorded = sum(snap.task_states.values()) + sum(
        v for values in snap.channel_values().values() for v in values
    )
    assert recorded == 15_000
    assert snapshot_problems(JOB, snap) == []
    assert absnb.world_problems(world) == []


def test_the_whole_script_through_a_scripted_scheduler():
    stepper = absnb.Stepper(fresh_world(), absnb.ScriptedScheduler(SCRIPT))
    events = stepper.run()
    assert [e.action for e in events] == SCRIPT
    assert stepper.step() is None  # the script is over
    assert observe(stepper.world) == EXPECTED[-1]
    assert stepper.actions == SCRIPT


@pytest.mark.parametrize("failed", ["A", "B"])
@pytest.mark.parametrize("mode", ["full", "partial"])
def test_crash_and_recover_restores_the_snapshot(failed, mode):
    stepper = walk()
    crash = stepper.step(absnb.Crash(JOB.graph.task(failed)))
    assert crash.aborted == ()  # nothing was pending
    assert stepper.world.enabled_actions() == [absnb.Recover("full"), absnb.Recover("partial")]
    event = stepper.step(absnb.Recover(mode))
    # Every account is upstream of every other one (A->B->A), so both modes restart both.
    assert event.restored == (1, (A, B))
    world = stepper.world
    assert world.failed is None
    assert observe(world) == (9_000, 3_000, [], [1_000, 2_000])
    assert money(world) == 15_000

    # Run to the end: the two recorded transfers reach A again, in order, and nothing
    # else happens (every transfer in the input logs was made before the snapshot).
    stepper.scheduler = absnb.RoundRobinScheduler()
    rest = stepper.run()
    assert [(e.action, e.message.value) for e in rest] == [
        (absnb.Deliver(BA), 1_000),
        (absnb.Deliver(BA), 2_000),
    ]
    # A: 9,000 + 1,000 + 2,000 = 12,000; B stays at 3,000.
    assert observe(stepper.world) == (12_000, 3_000, [], [])
    assert stepper.world.is_finished()
    assert stepper.world.output() == {"A": 12_000, "B": 3_000}
    assert absnb.exactly_once(stepper.world)


def test_recovery_without_a_snapshot_restarts_from_the_initial_balances():
    stepper = absnb.Stepper(fresh_world(), absnb.ScriptedScheduler([]))
    for action in SCRIPT[:1] + SCRIPT[2:5]:  # no trigger: A->B 1,000 arrives, B = 3,000
        stepper.step(action)
    assert observe(stepper.world) == (9_000, 3_000, [], [1_000, 2_000])
    stepper.step(absnb.Crash(B))
    event = stepper.step(absnb.Recover("full"))
    assert event.restored == (0, (A, B))
    # The transfers are in the input logs, so the accounts make them again from the start.
    assert observe(stepper.world) == (10_000, 5_000, [], [])
    stepper.scheduler = absnb.RoundRobinScheduler()
    stepper.run()
    assert observe(stepper.world) == (12_000, 3_000, [], [])
    assert absnb.exactly_once(stepper.world)
