"""The backpressure experiment in the simulator: deterministic, so its claims are checked."""

from __future__ import annotations

from absnb.core.graph import stable_hash
from absnb.core.messages import Record
from absnb.experiments import backpressure as bp
from absnb.sim.actions import Deliver
from absnb.sim.world import World


def test_the_job_is_skewed_ten_to_one():
    job = bp.skewed_job(lines=5, skew=10)
    hot = stable_hash(bp.HOT) % 2
    per_counter = [0, 0]
    for log in job.inputs.values():
        for line in log:
            for w in line.split():
                per_counter[stable_hash(w) % 2] += 1
    assert per_counter[hot] == 10 * per_counter[1 - hot]


def test_unaligned_is_faster_under_backpressure_and_only_at_least_once_duplicates():
    table = bp.simulate().set_index("mode")
    aligned, unaligned = table.loc["aligned"], table.loc["unaligned"]
    assert unaligned["duration_steps"] * 10 <= aligned["duration_steps"]  # 10x skew
    assert bp.speedup(table.reset_index(), "duration_steps") >= 10
    assert bp.speedup(table.reset_index().iloc[[0]], "duration_steps") is None  # no unaligned
    assert unaligned["in_flight_records"] > 0
    assert aligned["in_flight_records"] == 0
    assert unaligned["max_alignment_steps"] == 0
    assert aligned["max_alignment_steps"] > 0
    assert table.loc["aligned, timeout", "switched"] > 0
    assert table.loc["aligned, timeout", "max_alignment_steps"] <= 5
    assert table.loc["at-least-once", "duplicates_after_crash"] > 0
    for mode in ("aligned", "unaligned", "aligned, timeout"):
        assert table.loc[mode, "duplicates_after_crash"] == 0


def test_the_slow_task_is_served_one_step_in_n():
    """Off the multiples of n, the slow task is served records only when nothing else can
    move (aligned: every barrier waits at the head of its channel behind the records)."""
    job = bp.skewed_job(lines=4, skew=3)
    world = World(job, "abs", checkpoint_interval=7)
    slow = job.graph.task(bp._hot_counter(job))
    scheduler = bp.SlowTaskScheduler(str(slow), 5, seed=2)
    served = 0
    while True:
        action = scheduler.choose(world, world.enabled_actions())
        if action is None:
            break
        if (
            isinstance(action, Deliver)
            and action.channel.dst == slow
            and type(world.channels[action.channel][0]) is Record
        ):
            served += 1
            if world.clock % 5:
                others = [
                    a
                    for a in world.progress_actions()
                    if not (isinstance(a, Deliver) and a.channel.dst == slow)
                ]
                assert others == []
        world.apply(action)
    assert served > 0
    assert world.is_finished()
