"""The Chandy-Lamport lab's check: the package's own ChandyLamportHandler passes every part;
each typical student bug fails the part that first sees it, with the shortest run of the
simulator that shows it (as long as the explorer's breadth-first search says) and words
that name it; the base class keeps the bookkeeping and refuses what the runtime cannot do."""

from __future__ import annotations

import pytest

import absnb
from absnb.core.errors import InvalidTypeError, InvalidValueError
from absnb.core.messages import Marker, Record
from absnb.labs import MarkerHandler, MarkerLabProtocol, check
from absnb.labs.chandy_lamport.cases import CASES
from absnb.labs.chandy_lamport.search import SEARCHES, AnyInitiator, two_accounts
from absnb.protocols.aligned import AlignedBarrierHandler
from absnb.protocols.base import task_handler_args
from absnb.protocols.chandy_lamport import ChandyLamportHandler
from absnb.sim.actions import TriggerCheckpoint
from absnb.sim.explore import (
    explore,
    feasible_snapshots,
    money_conserved,
    no_deadlock,
    output_is_exactly_once,
)
from tests.labs.marker_handlers import (
    ChannelStateBeforeTheState,
    ForgetsToForward,
    MarkersBeforeTheState,
    NoChannelState,
    OneListForAllSnapshots,
    RecordsAfterTheMarker,
    ReturnsNothing,
    StateAtTheSecondMarker,
)

PARTS = ["a", "b", "c", "d"]


def statuses(report):
    return [p.status for p in report.parts]


@pytest.fixture(scope="module")
def reference_report():
    return check(ChandyLamportHandler, spark=False)  # part d: tests/labs/test_lab_spark.py


def test_the_package_s_chandy_lamport_passes_every_part(reference_report):
    report = reference_report
    assert report.lab == "chandy-lamport"
    assert report.passed
    assert statuses(report) == ["passed", "passed", "passed", "not run"]
    assert report.counterexample is None
    text = str(report)
    assert "ChandyLamportHandler passes the chandy-lamport lab." in text
    assert f"{len(CASES)} cases (seed 001 at A and at B" in text
    assert "160 runs (banks of two and three accounts" in text
    for search in SEARCHES:
        assert search.bounds() in text
    assert "2 snapshots (each started at any account), every interleaving" in text
    with pytest.raises(ValueError, match="every part passed"):
        report.stepper()


def test_sending_the_markers_before_recording_the_state_is_no_bug():
    report = check(MarkersBeforeTheState, lab="chandy-lamport", spark=False)
    assert report.passed, str(report)


def shortest_by_explore(handler_class) -> int:
    """The depth of the first violation breadth-first search finds over the lab's
    searches without crashes, with the explorer's own checks (not the lab's)."""
    for search in SEARCHES:
        if search.crashes:
            continue
        job = search.job()
        world = AnyInitiator(
            job, MarkerLabProtocol(handler_class), max_checkpoints=search.max_checkpoints
        )
        found = explore(
            world,
            [feasible_snapshots, money_conserved],
            [no_deadlock, output_is_exactly_once(absnb.reference_output(job))],
        )
        if not found.ok:
            return len(found.counterexample)
    raise AssertionError(f"no search finds a violation of {handler_class.__name__}")


BUGS = [
    # (handler, the part that fails, steps of the shortest run, words of the part, of the run)
    (
        StateAtTheSecondMarker,
        "a",
        8,
        ["case 3 of 6", "snapshots: expected [snapshot 1: A=1,050 (not acknowledged)]"],
        [
            "1 record(s) lost",
            "Transfer 200, the 1st on B->C, was sent by B at step 7",
            "B sent marker 1 on B->C at step 2 but recorded its state only at step 8",
        ],
    ),
    (
        NoChannelState,
        "a",
        5,
        [
            "seed 001 at A",
            "expected [snapshot 1: A=9,000, B->A=[1,000, 2,000] (acknowledged)]",
            "yours    [snapshot 1: A=9,000 (acknowledged)]",
            "later_marker(1, B->A, [1,000, 2,000], ()) returned [Acknowledge(1)]",
        ],
        [
            "the 100 is in neither balance nor in the channel, so the snapshot lost it",
            "the A->B state of snapshot 1 is what arrived on A->B in between, which B did not "
            "record",
        ],
    ),
    (
        RecordsAfterTheMarker,
        "a",
        9,
        ["case 5 of 6", "expected [snapshot 1: A=1,000, B->A=[1, 2] (not acknowledged)"],
        [
            "1 record(s) counted twice",
            "the state of A->B in snapshot 1 holds it",
            "B went on recording A->B after it: stop recording a channel when its marker arrives",
        ],
    ),
    (
        ForgetsToForward,
        "a",
        6,
        ["sent: expected [1,000 on A->B, marker 1 on A->B]", "yours    [1,000 on A->B]"],
        [
            "Snapshot 1 can never complete",
            "never sent marker 1 on A->B, so B never hears of it",
        ],
    ),
    (
        OneListForAllSnapshots,
        "a",
        8,
        ["case 5 of 6", "returned [RecordChannelState(2, B->A, [])]"],
        [
            "checkpoint 2, channel A->B",
            "The state of A->B in snapshot 1 holds [100], and that of snapshot 2 does not: "
            "the snapshots' recordings are mixed",
        ],
    ),
]


@pytest.mark.parametrize(
    ("handler", "part", "steps", "part_words", "run_words"),
    BUGS,
    ids=[b[0].__name__ for b in BUGS],
)
def test_a_typical_bug_fails_its_part_with_a_shortest_counterexample(
    handler, part, steps, part_words, run_words
):
    report = check(handler)
    assert report.lab == "chandy-lamport"
    failed = report.failed_part
    assert failed is not None
    assert failed.status == "failed"
    assert failed.part.startswith(f"{part}.")
    k = PARTS.index(part)
    assert statuses(report)[:k] == ["passed"] * k
    assert statuses(report)[k + 1 :] == ["not run"] * (3 - k)
    details = "\n".join([failed.summary, *failed.details])
    for words in part_words:
        assert words in details, details
    found = report.counterexample
    assert found is not None
    assert len(found.actions) == steps == shortest_by_explore(handler)
    told = "\n".join(found.words)
    for words in run_words:
        assert words in told, told
    assert f"Shortest run that shows it: {steps} steps" in str(report)
    # The stepper stands at the schedule's start; Step plays it to the bug.
    widget = report.stepper(timeline=False)
    assert widget.world.clock == 0
    for _ in range(steps):
        widget.step()
    assert [e.action for e in widget.stepper.trace] == list(found.actions)
    widget.back()
    assert widget.world.clock == steps - 1


def test_each_bug_also_fails_the_random_runs_and_the_search():
    """Parts b and c see every bug on their own (part a stops the check before them)."""
    from absnb.labs.chandy_lamport.runs import random_runs
    from absnb.labs.grade import exhaustive
    from absnb.labs.registry import LABS

    for handler in [b[0] for b in BUGS]:
        assert random_runs(handler).status == "failed", handler.__name__
        result, found = exhaustive(LABS["chandy-lamport"], handler)
        assert result.status == "failed", handler.__name__
        assert found is not None


def test_the_skeleton_reports_not_implemented():
    report = check(MarkerHandler)
    assert statuses(report) == ["not implemented", "not run", "not run", "not run"]
    assert "first_marker(n, channel, missing) is not written yet" in report.verdict()
    assert report.counterexample is None


def test_a_decision_that_breaks_the_rules_is_told_what_to_change():
    report = check(ReturnsNothing)
    details = "\n".join(report.failed_part.details)
    assert "returned None, not a list of effects" in details
    assert "raised LabError" in report.counterexample.problem
    report = check(ChannelStateBeforeTheState)
    details = "\n".join(report.failed_part.details)
    assert "before recording the process's state: put SnapshotState(1) first" in details


class Correct(MarkerHandler):
    def first_marker(self, n, channel, missing):
        done = [] if missing else [absnb.labs.Acknowledge(n)]
        return [absnb.labs.SnapshotState(n), absnb.labs.BroadcastEvent(Marker(n)), *done]

    def later_marker(self, n, channel, recorded, missing):
        done = [] if missing else [absnb.labs.Acknowledge(n)]
        return [absnb.labs.RecordChannelState(n, channel, recorded), *done]


def _process(handler_class, name="A"):
    graph = absnb.bank_transfer({"A": 1_000, "B": 500, "C": 300}).graph
    return graph, handler_class(*task_handler_args(graph, graph.task(name)))


def test_the_base_records_each_snapshot_s_inputs_apart():
    graph, a = _process(Correct)
    ba, ca = graph.channel("B->A"), graph.channel("C->A")
    a.on_trigger(1)
    a.on_record(ba, Record(10, 1))
    a.on_barrier(ca, Marker(2))  # snapshot 2 starts on C->A: records B->A only
    a.on_record(ba, Record(20, 2))
    a.on_record(ca, Record(30, 1))
    assert [r.value for r in a.recorded_on(1, ba)] == [10, 20]
    assert [r.value for r in a.recorded_on(1, ca)] == [30]
    assert [r.value for r in a.recorded_on(2, ba)] == [20]
    assert a.recorded_on(2, ca) == ()
    assert [w.checkpoint_id for w in a.waiting()] == [1, 2]
    twin = a.clone()
    assert twin.key() == a.key()
    a.on_barrier(ba, Marker(1))
    assert twin.key() != a.key()
    assert a.recorded_channels() == (ba, ca)  # C->A for 1, B->A for 2
    assert "snapshot 1: recording C->A" in a.describe()
    assert not a.on_barrier(ba, Marker(1))  # a marker twice on one input: ignored
    a.on_checkpoint_aborted(2)
    assert not a.on_barrier(ba, Marker(2))  # a late marker of an aborted snapshot


def test_a_decision_s_effects_are_checked():
    class Wrong(Correct):
        def first_marker(self, n, channel, missing):
            return [absnb.labs.SnapshotState(n + 1)]

    _, a = _process(Wrong)
    with pytest.raises(absnb.labs.LabError, match="about snapshot 2, when it was asked"):
        a.on_trigger(1)

    class Barrier(Correct):
        def first_marker(self, n, channel, missing):
            return [absnb.labs.BroadcastEvent(absnb.CheckpointBarrier(n))]

    _, a = _process(Barrier)
    with pytest.raises(absnb.labs.LabError, match="no effect of Chandy-Lamport"):
        a.on_trigger(1)


def test_the_lab_is_inferred_from_the_class_or_refused_with_the_labs_named():
    assert check(ForgetsToForward).lab == "chandy-lamport"
    with pytest.raises(InvalidTypeError, match="AlignedBarrierHandler is a handler of the 'abs'"):
        check(AlignedBarrierHandler, lab="chandy-lamport")
    with pytest.raises(InvalidTypeError, match="MarkerHandler \\(lab 'chandy-lamport'\\)"):
        check(dict)
    names = "'abs', 'abs-cyclic', 'chandy-lamport', 'two-phase-commit'"
    with pytest.raises(InvalidValueError, match=f"choose one of {names}"):
        check(ChandyLamportHandler, lab="raft")


def test_snapshots_start_at_any_account_in_the_search():
    world = AnyInitiator(two_accounts(), MarkerLabProtocol(ChandyLamportHandler))
    starts = [a for a in world.enabled_actions() if type(a) is TriggerCheckpoint]
    assert [str(a.at) for a in starts] == ["A", "B"]
