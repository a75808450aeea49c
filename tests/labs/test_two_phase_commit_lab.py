"""The two-phase-commit lab's check: the package's own MemorySink passes every part, and so
does a student's sink written as Flink's TwoPhaseCommitSinkFunction; each typical bug fails
the part that first sees it, with the shortest run of the simulator that shows it (as long
as the explorer's breadth-first search says) and words that name it; a sink that breaks the
lab's rules is told what to change, never crashing the grader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import absnb
from absnb.core.errors import GraphError, InvalidTypeError
from absnb.labs import TransactionalSink, check
from absnb.labs.grade import exhaustive, on_spark
from absnb.labs.registry import LABS
from absnb.labs.two_phase_commit.cases import CASES, OneSink
from absnb.labs.two_phase_commit.runs import random_runs
from absnb.labs.two_phase_commit.search import SEARCHES
from absnb.labs.two_phase_commit.world import SkippingWorld, StoreWorld
from absnb.protocols.aligned import AlignedBarrierHandler
from absnb.sim.actions import Recover
from absnb.sim.explore import explore
from absnb.sim.world import World
from absnb.sinks import MemorySink, TransactionStore
from tests.labs.sink_handlers import (
    ChangesTheState,
    CommitsAtTheSnapshot,
    CommitsOnlyTheLatest,
    CommitsTwice,
    Correct,
    ForgetsTheRestoredTransactions,
    LeavesTheLeftovers,
    ReturnsAList,
    ReturnsNothing,
    TakesNoStore,
)

LAB = LABS["two-phase-commit"]


def statuses(report):
    return [p.status for p in report.parts]


@pytest.fixture(scope="module")
def reference_report():
    return check(MemorySink, spark=False)  # part d: tests/labs/test_lab_spark.py


def test_the_package_s_sink_passes_every_part(reference_report):
    report = reference_report
    assert report.lab == "two-phase-commit"
    assert report.passed
    assert statuses(report) == ["passed", "passed", "passed", "not run"]
    assert report.counterexample is None
    text = str(report)
    assert "MemorySink passes the two-phase-commit lab." in text
    assert f"{len(CASES)} cases (Flink's TwoPhaseCommitSinkFunctionTest" in text
    assert "80 runs (word count 3 x 2 x 2 into one transaction store" in text
    for search in SEARCHES:
        assert search.bounds() in text
    with pytest.raises(ValueError, match="every part passed"):
        report.stepper()


def test_part_d_is_a_run_on_spark_unless_asked_not_to():
    """Part d itself runs in tests/labs/test_lab_spark.py."""
    assert LAB.spark is not None
    assert LAB.spark.failure.task == "sink[1]"
    part = on_spark(LAB, MemorySink, spark=False, failed=False)
    assert (part.status, part.summary) == ("not run", "skipped by spark=False (--no-spark)")


def test_a_student_s_correct_sink_passes_every_part():
    report = check(Correct, lab="two-phase-commit", spark=False)
    assert statuses(report) == ["passed", "passed", "passed", "not run"]


@pytest.mark.parametrize("case", CASES, ids=[c.title[:40] for c in CASES])
def test_each_case_s_committed_records_are_the_reference_s(case):
    sink = OneSink(MemorySink)
    for step in case.steps:
        sink.do(step)
    assert tuple(sink.store.rows) == case.committed


BUGS = [
    (
        CommitsAtTheSnapshot,
        "case 1 of 7",
        6,
        "sink[0]/t1 (('a', 1)) is committed, but checkpoint 1, for which it was "
        "pre-committed, has not completed",
        "Phase two comes after the checkpoint",
    ),
    (
        CommitsOnlyTheLatest,
        "case 2 of 7",
        13,
        "sink heard that checkpoint 2 completed, but sink/t1 (('a', 1)), pre-committed for "
        "checkpoint 1, is still not committed",
        "(the notification of checkpoint 1 was skipped)",
    ),
    (
        ForgetsTheRestoredTransactions,
        "case 5 of 7",
        10,
        "whose state names sink/t1 (('a', 1), ('b', 1)) as pre-committed, and sink/t1 is "
        "aborted after the restore, not committed",
        "restore() commits every transaction the restored state names",
    ),
    (
        CommitsTwice,
        "case 6 of 7",
        11,
        "restore(state) raised TransactionError: cannot commit transaction 'sink/t1': it is "
        "committed already",  # then the line of the student's code: self.commit(txn)
        "Step 9: sink heard that checkpoint 1 completed; sink committed sink/t1",
    ),
    (
        LeavesTheLeftovers,
        "case 5 of 7",
        5,
        "which does not name sink/t1 (('a', 1)), and sink/t1 is still open after the restore, "
        "not aborted",
        "restore() aborts every other unfinished transaction",
    ),
]


@pytest.mark.parametrize(
    ("sink", "case", "steps", "problem", "words"), BUGS, ids=[b[0].__name__ for b in BUGS]
)
def test_a_typical_bug_fails_part_a_with_a_shortest_counterexample(
    sink, case, steps, problem, words
):
    report = check(sink)
    failed = report.failed_part
    assert failed is not None
    assert failed.status == "failed"
    assert failed.part.startswith("a.")
    assert case in failed.summary
    assert statuses(report)[1:] == ["not run"] * 3
    found = report.counterexample
    assert found is not None
    assert len(found.actions) == steps
    assert problem in found.problem
    assert words in "\n".join(found.words)
    assert f"Shortest run that shows it: {steps} steps" in str(report)
    widget = report.stepper(timeline=False)
    assert widget.world.clock == 0
    for action in found.actions:
        if type(action) is Recover:  # after a crash, Step waits for a Recover button
            widget.controls.recover_full.click()
        else:
            widget.step()
    assert [e.action for e in widget.stepper.trace] == list(found.actions)


def test_each_bug_also_fails_the_random_runs_and_the_search():
    """Parts b and c see every bug on their own (part a stops the check before them)."""
    for sink in [b[0] for b in BUGS]:
        assert random_runs(sink).status == "failed", sink.__name__
        result, found = exhaustive(LAB, sink)
        assert result.status == "failed", sink.__name__
        assert found is not None


def test_the_skeleton_reports_not_implemented():
    report = check(TransactionalSink)
    assert statuses(report) == ["not implemented", "not run", "not run", "not run"]
    assert "invoke(state, value) is not written yet" in report.verdict()
    assert report.counterexample is None


@pytest.mark.parametrize(
    ("sink", "told"),
    [
        (ReturnsNothing, "ReturnsNothing.invoke returned None, not the sink's state"),
        (ReturnsAList, "ReturnsAList.snapshot returned [(1, 'sink/t1')], not the sink's state"),
        (
            ChangesTheState,
            "invoke(state, 'a') raised FrozenInstanceError: cannot assign to field 'current' "
            "(line ",
        ),
        (ChangesTheState, ": state.current = txn)"),
        (TakesNoStore, "TakesNoStore(store) raised TypeError"),
    ],
)
def test_a_sink_that_breaks_the_rules_is_told_what_to_change(sink, told):
    report = check(sink)
    assert report.failed_part.part.startswith("a.")
    assert told in "\n".join(report.failed_part.details)
    assert report.counterexample is not None


def test_a_decision_raises_outside_the_check():
    sink = ReturnsNothing()
    state = sink.initialize_state(absnb.core.ids.TaskId("sink", 0, 1), sink.initial_state(), False)
    with pytest.raises(absnb.labs.LabError, match="returned None"):
        sink.process(state, "a")


def test_the_lab_is_inferred_from_the_class_or_refused():
    assert check(TransactionalSink).lab == "two-phase-commit"
    with pytest.raises(InvalidTypeError, match="of the 'abs' lab"):
        check(AlignedBarrierHandler, lab="two-phase-commit")
    with pytest.raises(InvalidTypeError, match="TransactionalSink"):
        check(int)


def test_a_store_world_gives_each_branch_its_own_store():
    job = absnb.word_count([["a"]], sources=1, counters=1, sinks=1, sink=MemorySink())
    with pytest.raises(GraphError, match="writes to an external system"):
        explore(World(job, "abs", max_checkpoints=1))
    world = StoreWorld(job, "abs", max_checkpoints=1)
    result = explore(world)
    assert result.ok
    assert result.complete
    a, b = world.clone(), world.clone()
    for _ in range(3):
        a.apply(a.enabled_actions()[0])
    assert a.key() != b.key()
    assert b.output() == []


def test_a_skipping_world_lets_a_later_notification_overtake():
    store = TransactionStore()
    job = absnb.word_count([["a", "b"]], sources=1, counters=1, sinks=1, sink=MemorySink(store))
    world = SkippingWorld(job, "abs", max_checkpoints=2)
    sink = job.graph.task("sink")
    while len(world.notices.get(sink, ())) < 2:
        acts = [a for a in world.enabled_actions() if type(a).__name__ != "Notify"]
        world.apply(acts[-1] if world.input_remaining() or not acts else acts[0])
    skip = absnb.sim.actions.Notify(sink, 2)
    assert skip in world.enabled_actions()
    world.apply(skip)
    assert sink not in world.notices
    assert world.output() == [("a", 1), ("b", 1)]


NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "labs" / "two_phase_commit_lab.ipynb"


def _code_cells() -> list[str]:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def test_the_notebook_ships_no_solution_and_passes_once_filled_in():
    code = _code_cells()
    assert not any("recover_and_commit(" in c or "leftovers(" in c for c in code)
    skeleton = next(c for c in code if c.startswith("class MySink"))
    assert skeleton.count("raise NotImplementedError") == 4
    scope: dict[str, object] = {}
    for cell in code:
        if cell is skeleton:
            cell = "class MySink(Correct):\n    pass\n\n\nmy_report = check(MySink, spark=False)"
            scope["Correct"] = Correct
        if "report.stepper()" in cell:
            continue
        exec(compile(cell, str(NOTEBOOK), "exec"), scope)
    assert scope["my_report"].passed
