"""Chandy-Lamport, script by script (seed 001, as notebook 01 walks through it).

The initiator records its state, sends markers and records every input. The first marker
a process receives (on c) records its state with c empty, sends markers on and records
its other inputs. A later marker on c closes c's recording: exactly the records that
arrived on c in between, in order.
"""

from __future__ import annotations

import pytest

from absnb import Marker
from absnb.core.effects import Acknowledge, BroadcastEvent, SnapshotState
from absnb.protocols.base import Waiting
from tests.protocols.script import Script, processes

BANK3 = ["A->B", "A->C", "B->A", "B->C", "C->A", "C->B"]


def start(n: int) -> list:
    """Record own state and send markers on."""
    return [SnapshotState(n), BroadcastEvent(Marker(n))]


@pytest.fixture
def a() -> Script:
    """Process A of a fully connected bank of three: inputs B->A and C->A."""
    return Script("chandy-lamport", processes("ABC", BANK3), "A")


@pytest.fixture
def b() -> Script:
    """Process B of the same bank: inputs A->B and C->B."""
    return Script("chandy-lamport", processes("ABC", BANK3), "B")


def test_seed_001_walkthrough() -> None:
    # A=10,000, B=5,000. A has sent 1,000 to B; A initiates.
    graph = processes("AB", ["A->B", "B->A"])
    a = Script("chandy-lamport", graph, "A")
    b = Script("chandy-lamport", graph, "B")
    assert a.trigger(1) == start(1)  # A' = 9,000, marker on A->B
    # B sends 1,000 and 2,000 to A (not yet arrived). The 1,000 from A arrives at B:
    # B is not recording anything yet.
    assert b.rec("A->B", 1_000) == []
    # The marker arrives at B: B' = 3,000, A->B = [], marker on B->A; B has no other
    # input, so B is done.
    assert b.marker("A->B", 1) == [
        SnapshotState(1),
        b.state(1, "A->B"),
        BroadcastEvent(Marker(1)),
        Acknowledge(1),
    ]
    # The 1,000 and 2,000 arrive at A, which is recording B->A.
    assert a.rec("B->A", 1_000) == []
    assert a.rec("B->A", 2_000) == []
    # B's marker reaches A: B->A = [1,000, 2,000]. Done.
    assert a.marker("B->A", 1) == [a.state(1, "B->A", 1_000, 2_000), Acknowledge(1)]
    assert a.handler.waiting() == b.handler.waiting() == []


def test_initiator_records_every_input_until_its_marker(a: Script) -> None:
    assert a.rec("B->A", "before") == []
    assert a.trigger(1) == start(1)
    assert a.handler.waiting() == [Waiting(a.graph.task("A"), 1, (a.ch("B->A"), a.ch("C->A")), ())]
    assert a.rec("B->A", 100) == []
    assert a.rec("C->A", 200) == []
    assert a.rec("B->A", 300) == []
    assert a.marker("B->A", 1) == [a.state(1, "B->A", 100, 300)]
    assert a.rec("B->A", "after") == []  # B->A closed: not recorded
    assert a.rec("C->A", 400) == []
    assert a.marker("C->A", 1) == [a.state(1, "C->A", 200, 400), Acknowledge(1)]
    assert a.handler.waiting() == []


def test_first_marker_records_that_channel_empty(b: Script) -> None:
    assert b.rec("C->B", "before") == []
    assert b.marker("A->B", 1) == [SnapshotState(1), b.state(1, "A->B"), BroadcastEvent(Marker(1))]
    assert b.rec("A->B", "after marker") == []
    assert b.rec("C->B", 5) == []
    assert b.marker("C->B", 1) == [b.state(1, "C->B", 5), Acknowledge(1)]


def test_first_marker_on_the_other_channel(b: Script) -> None:
    assert b.marker("C->B", 7) == [SnapshotState(7), b.state(7, "C->B"), BroadcastEvent(Marker(7))]
    assert b.marker("A->B", 7) == [b.state(7, "A->B"), Acknowledge(7)]


def test_trigger_after_the_first_marker_does_not_snapshot_again(b: Script) -> None:
    b.marker("A->B", 1)
    assert b.trigger(1) == []
    assert b.marker("C->B", 1) == [b.state(1, "C->B"), Acknowledge(1)]
    assert b.trigger(1) == []
    assert b.marker("A->B", 1) == []


def test_two_snapshots_at_once_told_apart_by_id(a: Script) -> None:
    # Snapshot 1 starts at A through B->A; snapshot 2 (initiated elsewhere) through C->A.
    assert a.marker("B->A", 1) == [SnapshotState(1), a.state(1, "B->A"), BroadcastEvent(Marker(1))]
    assert a.rec("C->A", 10) == []  # recorded for 1
    assert a.marker("C->A", 2) == [SnapshotState(2), a.state(2, "C->A"), BroadcastEvent(Marker(2))]
    assert a.rec("C->A", 20) == []  # recorded for 1 only: C->A is closed for 2
    assert a.rec("B->A", 30) == []  # recorded for 2 only: B->A is closed for 1
    assert [w.checkpoint_id for w in a.handler.waiting()] == [1, 2]
    assert a.marker("B->A", 2) == [a.state(2, "B->A", 30), Acknowledge(2)]
    assert a.rec("C->A", 40) == []
    assert a.marker("C->A", 1) == [a.state(1, "C->A", 10, 20, 40), Acknowledge(1)]


def test_two_snapshots_recording_the_same_channel(a: Script) -> None:
    assert a.trigger(1) == start(1)
    assert a.rec("B->A", 1) == []
    assert a.trigger(2) == start(2)
    assert a.rec("B->A", 2) == []  # recorded for both
    assert a.marker("B->A", 1) == [a.state(1, "B->A", 1, 2)]
    assert a.rec("B->A", 3) == []  # for 2 only
    assert a.marker("B->A", 2) == [a.state(2, "B->A", 2, 3)]
    assert a.marker("C->A", 2) == [a.state(2, "C->A"), Acknowledge(2)]
    assert a.marker("C->A", 1) == [a.state(1, "C->A"), Acknowledge(1)]


def test_abort_stops_recording_and_ignores_later_markers(a: Script) -> None:
    assert a.trigger(1) == start(1)
    assert a.rec("B->A", 1) == []
    assert a.abort(1) == []
    assert a.handler.waiting() == []
    assert a.rec("B->A", 2) == []
    assert a.marker("B->A", 1) == []
    assert a.marker("C->A", 1) == []
    assert a.trigger(1) == []
    # A later snapshot starts clean.
    assert a.trigger(2) == start(2)
    assert a.rec("B->A", 3) == []
    assert a.marker("B->A", 2) == [a.state(2, "B->A", 3)]


def test_abort_of_a_snapshot_not_started_here(b: Script) -> None:
    assert b.abort(3) == []
    assert b.marker("A->B", 3) == []
    assert b.marker("A->B", 4) == [SnapshotState(4), b.state(4, "A->B"), BroadcastEvent(Marker(4))]


def test_abort_drops_that_snapshot_only_and_for_good(a: Script) -> None:
    assert a.marker("B->A", 1) == [SnapshotState(1), a.state(1, "B->A"), BroadcastEvent(Marker(1))]
    assert a.trigger(2) == start(2)
    assert a.abort(2) == []  # stops 2; snapshot 1 is independent and goes on
    assert [w.checkpoint_id for w in a.handler.waiting()] == [1]
    # A late marker of 2 must neither close a recording nor record A's state a second time.
    assert a.marker("C->A", 2) == []
    assert a.marker("B->A", 2) == []
    assert a.abort(1) == []
    assert a.handler.waiting() == []
    assert a.marker("C->A", 1) == []


def test_finished_ids_fold_into_a_watermark(a: Script) -> None:
    """Each marker costs O(1): finished ids below the watermark leave the set."""
    for n in (3, 1, 2):
        a.abort(n)
    assert (a.handler.finished_below, a.handler.finished) == (4, set())
    a.abort(6)
    assert (a.handler.finished_below, a.handler.finished) == (4, {6})
    assert a.trigger(5) == start(5)  # not finished: starts
    assert a.trigger(2) == []
    assert a.trigger(6) == []


def test_process_without_inputs_is_done_at_once() -> None:
    s = Script("chandy-lamport", processes("AB", ["A->B"]), "A")
    assert s.trigger(1) == [*start(1), Acknowledge(1)]
    assert s.handler.waiting() == []


def test_clone_keeps_its_own_recordings(a: Script) -> None:
    a.trigger(1)
    a.rec("B->A", 1)
    twin = a.handler.clone()
    assert twin.key() == a.handler.key()
    a.rec("B->A", 2)
    assert twin.key() != a.handler.key()
    assert list(twin.on_barrier(a.ch("B->A"), Marker(1))) == [a.state(1, "B->A", 1)]
    assert a.marker("B->A", 1) == [a.state(1, "B->A", 1, 2)]
