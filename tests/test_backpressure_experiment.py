"""The backpressure experiment in the simulator: deterministic, so its claims are checked."""

from __future__ import annotations

from absnb.core.graph import stable_hash
from absnb.core.messages import Record
from absnb.experiments import backpressure as bp
from absnb.experiments.mode_charts import charts_svg
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


def test_a_spark_row_takes_medians_over_completed_checkpoints_and_has_the_charted_columns():
    def ack(n, task, alignment, records, size):
        info = {
            "checkpoint_id": n,
            "task": task,
            "alignment_s": alignment,
            "metrics": {"channel_state_records": records, "channel_state_size": size},
        }
        return (0.0, "acknowledged", info)

    events = [
        ack(1, "a", 0.5, 10, 100),
        ack(1, "b", 0.1, 5, 50),
        (0.0, "completed", {"checkpoint_id": 1, "duration": 2.0}),
        ack(2, "a", 0.0, 0, 0),
        ack(2, "b", 0.2, 1, 8),
        (0.0, "completed", {"checkpoint_id": 2, "duration": 0.5}),
        ack(3, "a", 0.3, 40, 400),
        (0.0, "aborted", {"checkpoint_id": 3, "reason": "timed out"}),
    ]
    row = bp.spark_row("unaligned", events, 9.0)
    assert row["checkpoints"] == 2
    assert row["duration_s"] == 2.0  # the upper median of 0.5 and 2.0
    assert row["alignment_s"] == 0.5  # slowest task per completed checkpoint: 0.5, 0.2
    assert row["in_flight_records"] == 15  # per checkpoint: 15, 1 (the aborted 3 is left out)
    assert row["in_flight_bytes"] == 150
    charted = {c for c, _ in bp.SPARK_PANELS} - {"duplicates_after_failure"}
    assert charted <= set(row)


def test_the_simulator_charts_show_every_mode_and_panel():
    table = bp.simulate(lines=6)
    svg = charts_svg(table, bp.SIM_PANELS)
    for _, caption in bp.SIM_PANELS:
        assert caption in svg
    for mode in table["mode"]:
        assert f">{mode}<" in svg
