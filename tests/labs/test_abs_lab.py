"""The ABS lab's check: the package's own Algorithm 1 passes every part; each typical
student bug fails the part that first sees it, with the shortest run of the simulator that
shows it (as long as the explorer's breadth-first search says) and words that name it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import absnb
from absnb.core.errors import InvalidTypeError, InvalidValueError
from absnb.labs import LabProtocol, check
from absnb.labs.grade import on_spark
from absnb.labs.registry import LABS
from absnb.labs.search import SEARCHES, small_word_count
from absnb.labs.spark import _remove
from absnb.protocols.aligned import AlignedBarrierHandler
from absnb.sim.explore import (
    explore,
    feasible_snapshots,
    no_deadlock,
    output_is_exactly_once,
)
from tests.labs.handlers import (
    AcknowledgesAtFirstBarrier,
    AcknowledgesBeforeTheSnapshot,
    ForgetsToBlock,
    ForwardsBarrierEarly,
    NeverUnblocks,
    ReturnsNothing,
    SnapshotsBeforeBroadcasting,
    SourcesSkipTheSnapshot,
)

PARTS = ["a", "b", "c", "d"]


def statuses(report):
    return [p.status for p in report.parts]


@pytest.fixture(scope="module")
def reference_report():
    return check(AlignedBarrierHandler, spark=False)  # part d: tests/labs/test_lab_spark.py


def test_the_package_s_own_algorithm_1_passes_every_part(reference_report):
    report = reference_report
    assert report.passed
    assert report.failed_part is None
    assert statuses(report) == ["passed", "passed", "passed", "not run"]
    assert report.counterexample is None
    text = str(report)
    assert "AlignedBarrierHandler passes the abs lab." in text
    assert "7 cases" in text
    assert "160 runs" in text
    for search in SEARCHES:
        assert search.bounds() in text
    assert "spark=False" in text
    with pytest.raises(ValueError, match="every part passed"):
        report.stepper()
    assert "✔ a. scripted cases at one task" in report._repr_html_()


def test_snapshotting_before_broadcasting_is_no_bug():
    report = check(SnapshotsBeforeBroadcasting, spark=False)
    assert report.passed, str(report)


def shortest_by_explore(handler_class) -> int:
    """The depth of the first violation breadth-first search finds on the lab's smallest
    job, with the explorer's own checks (not the lab's)."""
    job = small_word_count()
    world = absnb.World(job, LabProtocol(handler_class), max_checkpoints=1)
    found = explore(
        world,
        [feasible_snapshots],
        [no_deadlock, output_is_exactly_once(absnb.reference_output(job))],
    )
    assert not found.ok
    return len(found.counterexample)


BUGS = [
    # (handler, the part that fails, steps of the shortest run, words that name the bug)
    (
        ForgetsToBlock,
        "a",
        7,
        ["blocked inputs: expected [in0]", "waiting_for_more(1, in0) returned []"],
        ["counted twice", "crossed the cut", "source[0]->count was not blocked"],
    ),
    (
        NeverUnblocks,
        "a",
        9,
        ["blocked inputs: expected []", "yours    [in0, in1]"],
        ["nothing unblocked it", "checkpoint 1 completed", "wait there for good ('a', 'b')"],
    ),
    (
        AcknowledgesAtFirstBarrier,
        "a",
        7,
        ["snapshots taken: expected []", "[Block(in0), SnapshotState(1), Acknowledge(1)]"],
        ["1 record(s) lost", "count took its snapshot of checkpoint 1 at step 3, before barrier 1"],
    ),
    (
        ForwardsBarrierEarly,
        "a",
        6,
        ["sent on: expected [a=1]", "yours    [a=1, barrier 1]"],
        ["count sent barrier 1 on count->sink at step 3, before its own snapshot at step 5"],
    ),
    (
        SourcesSkipTheSnapshot,
        "b",
        13,
        ["checkpoint(s) 1 cannot complete"],
        ["source[0], source[1] never acknowledged it"],
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
    assert not report.passed
    failed = report.failed_part
    assert failed is not None
    assert failed.status == "failed"
    assert failed.part.startswith(f"{part}.")
    k = PARTS.index(part)
    assert statuses(report)[:k] == ["passed"] * k
    assert statuses(report)[k + 1 :] == ["not run"] * (3 - k)
    details = "\n".join(failed.details)
    for words in part_words:
        assert words in details, details
    found = report.counterexample
    assert found is not None
    assert len(found.actions) == steps == shortest_by_explore(handler)
    told = "\n".join(found.words)
    for words in run_words:
        assert words in told, told
    assert len(found.steps) == steps
    assert f"Shortest run that shows it: {steps} steps" in str(report)
    # The stepper stands at the schedule's start; Step plays it to the bug, then goes on.
    widget = report.stepper(timeline=False)
    assert widget.world.clock == 0
    for _ in range(steps):
        widget.step()
    assert [e.action for e in widget.stepper.trace] == list(found.actions)
    widget.back()
    assert widget.world.clock == steps - 1


def test_a_feasibility_counterexample_replays_to_an_inconsistent_cut():
    found = check(ForgetsToBlock).counterexample
    assert found is not None
    world = found.replay().world
    snap = world.latest_snapshot()
    assert snap is not None
    assert absnb.snapshot_problems(world.job, snap)[0] == found.problem


def test_the_skeleton_reports_not_implemented():
    report = check(absnb.labs.AbsHandler)
    assert statuses(report) == ["not implemented", "not run", "not run", "not run"]
    assert "waiting_for_more(n, channel) is not written yet" in report.verdict()
    assert report.counterexample is None
    with pytest.raises(ValueError, match="scripted cases"):
        report.stepper()


def test_a_decision_that_breaks_the_rules_is_told_what_to_change():
    report = check(ReturnsNothing)
    assert report.failed_part is not None
    details = "\n".join(report.failed_part.details)
    assert "returned None, not a list of effects" in details
    assert report.counterexample is not None
    assert "raised LabError" in report.counterexample.problem
    report = check(AcknowledgesBeforeTheSnapshot)
    details = "\n".join(report.failed_part.details)
    assert "without taking its snapshot first" in details


class KeepsItsOwnCount(absnb.labs.AbsHandler):
    """Keeps an attribute of its own (no __slots__): cloned and compared by the lab."""

    def __init__(self, *args):
        super().__init__(*args)
        self.snapshots = []

    def waiting_for_more(self, n, channel):
        return [absnb.labs.Block(channel)]

    def all_arrived(self, n, blocked):
        self.snapshots.append(n)
        return [
            absnb.labs.BroadcastEvent(absnb.CheckpointBarrier(n)),
            absnb.labs.SnapshotState(n),
            absnb.labs.Acknowledge(n),
            *map(absnb.labs.Unblock, blocked),
        ]


def test_a_handler_with_attributes_of_its_own_is_explored_as_it_is():
    handler = KeepsItsOwnCount(*_args())
    handler.snapshots.append(1)
    copy = handler.clone()
    copy.snapshots.append(2)
    assert handler.snapshots == [1]
    assert handler.key() != copy.key()
    world = absnb.World(small_word_count(), LabProtocol(KeepsItsOwnCount), max_checkpoints=1)
    assert explore(world, [feasible_snapshots], [no_deadlock]).ok


def _args():
    from absnb.protocols.base import task_handler_args

    graph = small_word_count().graph
    return task_handler_args(graph, graph.task("count"))


def test_bad_arguments():
    with pytest.raises(InvalidValueError, match="unknown lab 'cyclic'"):
        check(AlignedBarrierHandler, "cyclic")
    with pytest.raises(InvalidTypeError, match="subclasses absnb"):
        check(ForgetsToBlock(*_args()))  # an instance, not the class


def test_part_d_is_skipped_without_java_and_not_run_when_asked_not_to(monkeypatch):
    lab = LABS["abs"]
    part = on_spark(lab, AlignedBarrierHandler, spark=False, failed=False)
    assert (part.status, part.summary) == ("not run", "skipped by spark=False (--no-spark)")
    part = on_spark(lab, AlignedBarrierHandler, spark=True, failed=True)
    assert (part.status, part.summary) == ("not run", "an earlier part failed")
    monkeypatch.setattr("absnb.labs.spark.missing", lambda: "no Java: Spark needs Java 17")
    part = on_spark(lab, AlignedBarrierHandler, spark=True, failed=False)
    assert part.status == "skipped"
    assert part.summary.startswith("no Java")
    assert "- d. on Spark: skipped: no Java" in part.lines()[0]


def test_part_d_removes_its_folder_only_once_a_stopped_host_has_stopped_writing(tmp_path: Path):
    """A cancelled run's hosts stop on the coordinator's Stop, and a snapshot writer of theirs
    may still write a moment later: the folder is removed after its last file, not under it
    (removed at once, its removal failed on CI with "Directory not empty")."""
    job = tmp_path / "absnb-lab-x" / "checkpoints" / "word_count-1"
    job.mkdir(parents=True)
    written: list[Path] = []
    errors: list[OSError] = []

    def stopped_host() -> None:
        try:
            for n in range(1, 16):  # 0.3 s of writes, one checkpoint folder each
                (job / f"chk-{n}").mkdir()
                (job / f"chk-{n}" / "count-1").write_bytes(b"state" * n)
                written.append(job / f"chk-{n}" / "count-1")
                time.sleep(0.02)
        except OSError as e:
            errors.append(e)

    writer = threading.Thread(target=stopped_host)
    writer.start()
    time.sleep(0.05)  # the run returned while the host was still writing
    _remove(str(tmp_path / "absnb-lab-x"), quiet=0.2, wait=5.0)
    writer.join()
    assert errors == []
    assert len(written) == 15
    assert not (tmp_path / "absnb-lab-x").exists()


class UnblocksTheLastName(absnb.labs.AbsHandler):
    """Algorithm 1 that finds the input to unblock with max(), which an empty tuple refuses."""

    def waiting_for_more(self, n, channel):
        return [absnb.labs.Block(channel)]

    def all_arrived(self, n, blocked):
        last = max(blocked, key=str)
        return [
            absnb.labs.BroadcastEvent(absnb.CheckpointBarrier(n)),
            absnb.labs.SnapshotState(n),
            absnb.labs.Acknowledge(n),
            *map(absnb.labs.Unblock, blocked[:-1]),
            absnb.labs.Unblock(last),
        ]


def test_a_decision_that_raises_is_reported_with_the_student_s_line():
    report = check(UnblocksTheLastName, spark=False)
    said = "\n".join(report.failed_part.details)
    assert "raised ValueError: max() " in said
    assert "of test_abs_lab.py, in all_arrived: last = max(blocked, key=str))" in said
