"""The ABS lab's extension (Algorithm 2): the package's own CyclicBarrierHandler passes every
part; each typical student bug fails the part that first sees it, with the shortest run of
the simulator that shows it (at most a stated number of steps, as long as the explorer's
breadth-first search says) and words that name it."""

from __future__ import annotations

import pytest

import absnb
from absnb.core.errors import InvalidTypeError
from absnb.labs import CyclicAbsHandler, CyclicLabProtocol, check
from absnb.labs.cyclic.cases import CASES, OneTask, loop
from absnb.labs.cyclic.search import SEARCHES
from absnb.labs.registry import lab_for
from absnb.protocols.aligned import AlignedBarrierHandler
from absnb.protocols.cyclic import CyclicBarrierHandler, CyclicProtocol
from absnb.sim.explore import explore, feasible_snapshots, no_deadlock, output_is_exactly_once
from tests.labs.cyclic_handlers import (
    AcknowledgesAtTheCopy,
    Algorithm2,
    BlocksTheBackEdge,
    LogsBeforeTheSnapshot,
    LogsUntilTheLastBarrier,
    NoBackupLog,
    WaitsForTheBackEdge,
)


def statuses(report):
    return [p.status for p in report.parts]


def test_the_package_s_algorithm_2_passes_every_part():
    report = check(CyclicBarrierHandler, spark=False)
    assert report.lab == "abs-cyclic"
    assert report.passed, str(report)
    assert statuses(report) == ["passed", "passed", "passed", "not run"]
    text = str(report)
    assert "CyclicBarrierHandler passes the abs-cyclic lab." in text
    assert f"{len(CASES)} cases (notebook 03's worked example at the head" in text
    assert "160 runs (the Collatz loop at parallelism 1 and 2" in text
    for search in SEARCHES:
        assert search.bounds() in text
    assert "a crash of any task at every step, full and partial recovery, to depth 10" in text


def test_algorithm_2_written_on_the_base_passes():
    assert check(Algorithm2).passed


def test_the_worked_example_has_notebook_03_s_numbers():
    head = OneTask(loop(), "head", CyclicProtocol())
    for step in CASES[0].steps:
        head.do(step)
    (snap,) = head.acknowledged
    assert snap.state == 3
    assert [r.value for r in snap.channel_states[loop().graph.channel("step->head")]] == [
        (6, 3, 1),
        (3, 5, 2),
        (5, 8, 2),
    ]


def shortest_by_explore(handler_class) -> int:
    """The depth of the first violation breadth-first search finds over the lab's searches
    without crashes, with the explorer's own checks (not the lab's)."""
    for search in SEARCHES:
        if search.crashes:
            continue
        job = search.job()
        world = absnb.World(
            job, CyclicLabProtocol(handler_class), max_checkpoints=search.max_checkpoints
        )
        found = explore(
            world,
            [feasible_snapshots],
            [no_deadlock, output_is_exactly_once(absnb.reference_output(job))],
        )
        if not found.ok:
            return len(found.counterexample)
    raise AssertionError("no search finds it")


BUGS = [
    # (handler, the part that fails, the bound on the shortest run's steps, the steps,
    #  words of the part, words of the run)
    (
        WaitsForTheBackEdge,
        "a",
        8,
        ["logged inputs: expected [step->head]", "regular_arrived(1, (), (step->head,))"],
        ["Checkpoint 1 can never complete", "it waits for barrier 1 on step->head"],
    ),
    (
        BlocksTheBackEdge,
        "a",
        7,
        ["blocked inputs: expected []", "yours    [step->head]"],
        ["head blocked step->head at step 5", "a loop input is not blocked"],
    ),
    (
        NoBackupLog,
        "a",
        9,
        [
            "backup log step->head=[(6, 3, 1), (3, 5, 2), (5, 8, 2)]]",
            "yours    [checkpoint 1: state 3]",
        ],
        ["1 record(s) lost", "does not hold it", "loses it"],
    ),
    (
        LogsBeforeTheSnapshot,
        "a",
        11,
        ["yours    [checkpoint 1: state 3, backup log step->head=[(3, 10, 1), (5, 16, 1),"],
        ["counted twice", "before its state copy of checkpoint 1"],
    ),
    (
        LogsUntilTheLastBarrier,
        "a",
        16,
        ["each one's log ends at its own barrier", "logged inputs: expected [step[1]->head[0]]"],
        ["counted twice", "so behind barrier 1", "ends at its own barrier"],
    ),
    (
        AcknowledgesAtTheCopy,
        "a",
        7,
        ["snapshots acknowledged: expected []", "Acknowledge(1)]"],
        ["1 record(s) lost", "in no part of the snapshot"],
    ),
]


@pytest.mark.parametrize(
    ("handler", "part", "steps", "part_words", "run_words"),
    BUGS,
    ids=[b[0].__name__ for b in BUGS],
)
def test_a_typical_bug_fails_with_a_shortest_counterexample(
    handler, part, steps, part_words, run_words
):
    report = check(handler)
    assert report.lab == "abs-cyclic"
    failed = report.failed_part
    assert failed is not None
    assert failed.status == "failed"
    assert failed.part.startswith(f"{part}.")
    details = "\n".join(failed.details)
    for words in part_words:
        assert words in details, details
    found = report.counterexample
    assert found is not None
    assert len(found.actions) == steps == shortest_by_explore(handler)
    told = "\n".join(found.words)
    for words in run_words:
        assert words in told, told
    assert f"Shortest run that shows it: {steps} steps" in str(report)
    widget = report.stepper(timeline=False)
    assert widget.world.clock == 0
    for _ in range(steps):
        widget.step()
    assert [e.action for e in widget.stepper.trace] == list(found.actions)


def test_the_skeleton_reports_not_implemented():
    report = check(CyclicAbsHandler)
    assert report.lab == "abs-cyclic"
    assert statuses(report) == ["not implemented", "not run", "not run", "not run"]
    assert "regular_arrived(n, blocked, missing) is not written yet" in report.verdict()
    assert report.counterexample is None


def test_the_lab_goes_by_the_nearest_base_class():
    assert lab_for(CyclicBarrierHandler, None).name == "abs-cyclic"
    assert lab_for(Algorithm2, None).name == "abs-cyclic"
    assert lab_for(AlignedBarrierHandler, None).name == "abs"
    # named, the ABS lab takes Algorithm 2 too: on a graph without loops it is Algorithm 1
    assert lab_for(Algorithm2, "abs").name == "abs"
    with pytest.raises(InvalidTypeError, match=r"subclasses absnb\.labs\.CyclicAbsHandler"):
        check(AlignedBarrierHandler, "abs-cyclic")


class ChannelStateOfARegularInput(Algorithm2):
    def regular_arrived(self, n, blocked, missing):
        effects = super().regular_arrived(n, blocked, missing)
        return [*effects, absnb.labs.RecordChannelState(n, self.inputs[0], ())]


def test_a_channel_state_of_a_regular_input_is_refused():
    report = check(ChannelStateOfARegularInput)
    details = "\n".join(report.failed_part.details)
    assert "recorded the state of source->head, which is no loop input of head" in details


class LogBeforeTheCopy(Algorithm2):
    def regular_arrived(self, n, blocked, missing):
        logs = [absnb.labs.RecordChannelState(n, c, ()) for c in missing]
        return [*logs, *super().regular_arrived(n, blocked, missing)]


def test_a_backup_log_before_the_state_copy_is_refused():
    report = check(LogBeforeTheCopy)
    details = "\n".join(report.failed_part.details)
    assert "recorded the backup log of step->head for checkpoint 1 without a state copy" in details
