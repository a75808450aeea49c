"""The table views: a world's tasks, a snapshot's three tables, and the diff of two."""

from __future__ import annotations

import pandas as pd
import pytest

import absnb
from absnb.sim.actions import Deliver
from absnb.views.tables import (
    CHANNEL_COLUMNS,
    SnapshotTables,
    snapshot_diff,
    snapshot_tables,
    task_table,
)
from tests.views.worlds import SCENARIOS, SEED_001_DONE, build


@pytest.fixture(scope="module")
def seed_001() -> absnb.World:
    """Seed 001 run to the end: checkpoint 1 is complete."""
    return build(absnb.bank_transfer(), "chandy-lamport", SEED_001_DONE)


@pytest.fixture(scope="module")
def bank_run() -> absnb.World:
    """A random bank run with several completed Chandy-Lamport snapshots."""
    world = absnb.World(
        absnb.bank_transfer(transfers=20, seed=3), "chandy-lamport", checkpoint_interval=5
    )
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=2), history=False)
    stepper.run()
    return stepper.world


def rows(frame: pd.DataFrame) -> list[tuple]:
    return [tuple(r) for r in frame.itertuples(index=False)]


# -- task_table -------------------------------------------------------------------------------
def test_task_table_of_seed_001(seed_001: absnb.World) -> None:
    frame = task_table(seed_001)
    assert list(frame.columns) == ["task", "operator", "state", "offset", "status"]
    assert rows(frame) == [
        ("A", "A", "12,000", 1, "not in a snapshot"),
        ("B", "B", "3,000", 2, "not in a snapshot"),
    ]


def test_task_table_in_graph_order_with_status() -> None:
    world = SCENARIOS["word_count_blocked"]()
    frame = task_table(world)
    assert list(frame["task"]) == [str(t) for t in world.graph.tasks]
    assert list(frame["offset"] == "–") == [False, False, True, True, True, True]
    assert "<NA>" not in frame.to_html()
    by_task = frame.set_index("task")
    assert by_task.loc["count[0]", "status"] == "aligning checkpoint 1 (1/2 barriers)"
    assert by_task.loc["count[0]", "state"] == "to:1 be:1"
    assert by_task.loc["source[0]", "status"] == "state taken for checkpoint 1"


# -- snapshot_tables ----------------------------------------------------------------------------
def test_snapshot_tables_of_seed_001(seed_001: absnb.World) -> None:
    snap = seed_001.latest_snapshot()
    assert snap is not None
    tables = snapshot_tables(snap, seed_001.graph)
    assert rows(tables.tasks) == [("A", "A", "9,000", 9_000), ("B", "B", "3,000", 3_000)]
    assert rows(tables.channels) == [
        ("A->B", "channel state", [], 0),
        ("B->A", "channel state", [1_000, 2_000], 2),
    ]
    assert rows(tables.offsets) == [("A", 1), ("B", 2)]
    # Without the graph: the same rows (the snapshot lists its tasks in graph order).
    bare = snapshot_tables(snap)
    for got, want in zip(
        (bare.tasks, bare.channels, bare.offsets),
        (tables.tasks, tables.channels, tables.offsets),
        strict=True,
    ):
        pd.testing.assert_frame_equal(got, want)


def test_snapshot_tables_show_all_three_in_html(seed_001: absnb.World) -> None:
    tables = snapshot_tables(seed_001.snapshots[0], seed_001.graph)
    page = tables._repr_html_()
    assert "Checkpoint 1 (chandy-lamport)" in page
    for heading in ("task states", "channels", "offsets"):
        assert heading in page
    assert "B-&gt;A" in page
    assert "[1000, 2000]" in page
    assert page.count("<table") == 3
    assert "9,000" in repr(tables)


def test_abs_snapshot_has_an_empty_channel_table() -> None:
    stepper = absnb.Stepper(
        absnb.World(absnb.word_count(), "abs", checkpoint_interval=4),
        absnb.RandomScheduler(seed=1),
        history=False,
    )
    stepper.run()
    world = stepper.world
    snap = world.snapshots[0]
    tables = snapshot_tables(snap, world.graph)
    assert isinstance(tables, SnapshotTables)
    assert tables.channels.empty
    assert list(tables.channels.columns) == CHANNEL_COLUMNS
    assert list(tables.tasks["task"]) == [str(t) for t in world.graph.tasks]
    assert list(tables.tasks["raw_state"]) == [snap.tasks[t].state for t in world.graph.tasks]
    assert list(tables.offsets["task"]) == ["source[0]", "source[1]"]
    assert "records task states only" in tables._repr_html_()


def test_cyclic_snapshot_lists_the_backup_log() -> None:
    world = build(
        absnb.cyclic(),
        "abs-cyclic",
        [
            "emit source",
            "deliver source->head",
            "deliver head->step",
            "trigger",
            "deliver source->head",  # head copies its state and logs step->head
            "deliver step->head",  # (3, 10, 1) logged
            "deliver head->step x2",  # barrier, then (3, 10, 1): step snapshots
            "deliver step->head",  # step's barrier closes the log
            "deliver step->sink",  # step's barrier reaches the sink: complete
        ],
    )
    snap = world.latest_snapshot()
    assert snap is not None, world.coordinator.pending
    tables = snapshot_tables(snap, world.graph)
    assert rows(tables.channels) == [("step->head", "backup log", [(3, 10, 1)], 1)]
    assert rows(tables.offsets) == [("source", 1)]


# -- snapshot_diff --------------------------------------------------------------------------------
def test_diff_of_two_bank_checkpoints(bank_run: absnb.World) -> None:
    first, second = bank_run.snapshots[:2]
    frame = snapshot_diff(first, second)
    assert list(frame.columns) == ["item", "kind", "a", "b", "changed"]
    assert frame.attrs == {"a": 1, "b": 2}
    expected = []
    for t in bank_run.graph.tasks:  # by hand, from the raw snapshots
        a, b = first.tasks[t], second.tasks[t]
        expected.append((str(t), "state", a.state, b.state, a.state != b.state))
        if a.offset or b.offset:
            expected.append((str(t), "offset", a.offset, b.offset, a.offset != b.offset))
    for c in bank_run.graph.channels:
        va = [r.value for r in first.channel_states[c]]
        vb = [r.value for r in second.channel_states[c]]
        expected.append((str(c), "channel state", va, vb, va != vb))
    assert rows(frame) == expected
    assert frame["changed"].dtype == bool
    assert frame["changed"].any()
    assert not snapshot_diff(first, first)["changed"].any()


def test_diff_refuses_snapshots_of_different_jobs(seed_001: absnb.World) -> None:
    cyclic = build(
        absnb.cyclic(),
        "abs-cyclic",
        ["trigger", *(f"deliver {c}" for c in ("source->head", "head->step", "step->head"))],
    )
    cyclic.apply(Deliver(cyclic.graph.channel("step->sink")))
    assert len(cyclic.snapshots) == 1
    with pytest.raises(absnb.SnapshotMismatchError, match="compare snapshots of one job"):
        snapshot_diff(seed_001.snapshots[0], cyclic.snapshots[0])
