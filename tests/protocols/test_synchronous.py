"""The baselines: synchronous snapshots (halt, snapshot, resume) and no snapshots at all.

Synchronous: a task halts its own production right after its snapshot, at sources and
at every other task, and resumes when the coordinator reports the checkpoint complete or
aborted. ``none`` ignores everything.
"""

from __future__ import annotations

import pytest

from absnb import (
    CheckpointBarrier,
    CheckpointCoordinator,
    ExecutionGraph,
    Marker,
    Record,
    get_protocol,
)
from absnb.core.effects import (
    Acknowledge,
    BroadcastEvent,
    HaltSource,
    ResumeSource,
    SnapshotState,
)
from tests.protocols.script import Script, fan_in, loop


@pytest.fixture
def graph() -> ExecutionGraph:
    """Sources a and b feed task t, which feeds sink out."""
    return fan_in("a", "b")


def test_source_halts_after_its_snapshot_and_resumes_on_complete(graph: ExecutionGraph) -> None:
    s = Script("synchronous", graph, "a")
    assert s.trigger(1) == [
        SnapshotState(1),
        BroadcastEvent(CheckpointBarrier(1)),
        Acknowledge(1),
        HaltSource(1),
    ]
    assert s.complete(1) == [ResumeSource()]
    assert s.trigger(2)[-1] == HaltSource(2)
    assert s.complete(2) == [ResumeSource()]


def test_non_source_drains_then_halts_after_its_snapshot(graph: ExecutionGraph) -> None:
    s = Script("synchronous", graph, "t")
    # One input drained: blocked, not halted yet (no snapshot).
    assert s.barrier("a->t", 1) == s.block("a->t")
    assert s.rec("b->t", "draining") == []
    assert s.barrier("b->t", 1) == [
        SnapshotState(1),
        BroadcastEvent(CheckpointBarrier(1)),
        *s.unblock("a->t"),
        Acknowledge(1),
        HaltSource(1),
    ]
    assert s.complete(1) == [ResumeSource()]


def test_abort_during_alignment_unblocks_and_resumes(graph: ExecutionGraph) -> None:
    s = Script("synchronous", graph, "t")
    assert s.barrier("b->t", 1) == s.block("b->t")
    assert s.abort(1) == [*s.unblock("b->t"), ResumeSource()]
    assert s.barrier("a->t", 1) == []  # stale: no block, no halt


def test_abort_after_the_snapshot_resumes(graph: ExecutionGraph) -> None:
    s = Script("synchronous", graph, "a")
    assert s.trigger(1)[-1] == HaltSource(1)
    assert s.abort(1) == [ResumeSource()]


def test_loop_head_halts_at_the_state_copy() -> None:
    s = Script("synchronous", loop(), "h")
    assert s.barrier("s->h", 1) == [
        SnapshotState(1),
        BroadcastEvent(CheckpointBarrier(1)),
        HaltSource(1),
    ]
    assert s.rec("b->h", 5) == []
    assert s.barrier("b->h", 1) == [s.state(1, "b->h", 5), Acknowledge(1)]
    assert s.complete(1) == [ResumeSource()]


def test_synchronous_protocol_declares_that_it_halts() -> None:
    assert get_protocol("synchronous").halts_sources
    assert not get_protocol("abs").halts_sources


@pytest.mark.parametrize("task", ["a", "t", "out"])
def test_none_ignores_everything(graph: ExecutionGraph, task: str) -> None:
    s = Script("none", graph, task)
    for c in graph.inputs[graph.task(task)]:
        assert list(s.handler.on_record(c, Record(1, 1))) == []
        assert list(s.handler.on_barrier(c, CheckpointBarrier(1))) == []
        assert list(s.handler.on_barrier(c, Marker(1))) == []
    assert s.trigger(1) == []
    assert s.complete(1) == []
    assert s.abort(1) == []
    assert s.handler.waiting() == []


def test_none_never_lets_the_coordinator_trigger(graph: ExecutionGraph) -> None:
    proto = get_protocol("none")
    coord = CheckpointCoordinator(
        graph.tasks, "fan_in", "f", "none", interval=1, max_concurrent=proto.max_concurrent
    )
    assert not coord.can_trigger()
    assert not coord.is_due(100)
