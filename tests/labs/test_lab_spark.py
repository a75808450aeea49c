"""Part d of the labs' check: one run on Spark, the student's class at every task, through
the runtime the package's own protocols run on (skipped here without Java)."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from absnb.labs import check
from absnb.labs.registry import LABS
from absnb.labs.report import PartResult
from absnb.labs.spark import java_found, spark_part
from absnb.protocols.aligned import AlignedBarrierHandler
from absnb.protocols.chandy_lamport import ChandyLamportHandler
from absnb.protocols.cyclic import CyclicBarrierHandler
from absnb.sinks import MemorySink
from tests.labs.handlers import NeverUnblocks
from tests.labs.sink_handlers import CommitsAtTheSnapshot, CommitsTwice, LeavesTheLeftovers

pytestmark = pytest.mark.skipif(not java_found(), reason="Java is not installed (Spark needs it)")


def test_the_package_s_algorithm_1_passes_every_part_with_spark(monkeypatch):
    """check() runs part d once parts a-c pass (stubbed here: their own tests run them)."""
    passed = PartResult("a-c", "passed", "stubbed")
    lab = dataclasses.replace(
        LABS["abs"],
        scripted=lambda c: passed,
        random_runs=lambda c: passed,
        searches=(),
    )
    monkeypatch.setitem(LABS, "abs", lab)
    report = check(AlignedBarrierHandler)
    assert [p.status for p in report.parts] == ["passed"] * 4, str(report)
    spark = report.parts[3]
    assert spark.part == "d. on Spark"
    assert spark.seconds > 0
    assert "on 2 Spark tasks" in spark.summary
    assert "count[1] failing once checkpoint 2 completed" in spark.summary
    assert "every one a consistent cut" in spark.summary
    assert "output exactly once" in spark.summary
    assert report.passed


def test_the_package_s_chandy_lamport_passes_part_d(monkeypatch):
    """Part d starts Spark, when none is running, as quiet_session: a student's first check
    shows the report, not the JVM's start-up lines (a fresh process starting it so is
    tests/test_cli_quiet.py's)."""
    from absnb.runtime.spark import session

    started = []

    def quiet_session(master: str) -> Any:
        started.append(master)
        return real(master)

    real = session.quiet_session
    monkeypatch.setattr(session, "quiet_session", quiet_session)
    part = spark_part(LABS["chandy-lamport"].spark, ChandyLamportHandler)
    assert started == [f"local[{LABS['chandy-lamport'].spark.hosts}]"]
    assert part.status == "passed", part.lines()
    assert "bank A, B, D" in part.summary
    assert "D failing once checkpoint 2 completed" in part.summary


def test_the_package_s_algorithm_2_passes_part_d_on_the_loop():
    part = spark_part(LABS["abs-cyclic"].spark, CyclicBarrierHandler)
    assert part.status == "passed", part.lines()
    assert "the Collatz loop over 1..1,000" in part.summary
    assert "head[1] failing once checkpoint 2 completed" in part.summary
    assert "every one a consistent cut" in part.summary


def test_the_package_s_sink_passes_part_d_of_the_two_phase_commit_lab(monkeypatch):
    """Its sink writes to files every executor shares; sink[1] fails right after its
    pre-commit for checkpoint 3, which never completes: the restart restores checkpoint 2,
    commits what it names and aborts what the failed attempt left."""
    passed = PartResult("a-c", "passed", "stubbed")
    lab = dataclasses.replace(
        LABS["two-phase-commit"],
        scripted=lambda c: passed,
        random_runs=lambda c: passed,
        searches=(),
    )
    monkeypatch.setitem(LABS, "two-phase-commit", lab)
    report = check(MemorySink, lab="two-phase-commit")
    assert [p.status for p in report.parts] == ["passed"] * 4, str(report)
    spark = report.parts[3]
    assert "into your sink's transaction files on 2 Spark tasks" in spark.summary
    assert "sink[1] failing right after its snapshot of checkpoint 3" in spark.summary
    assert "a restart from checkpoint 2; output exactly once" in spark.summary
    assert spark.summary.endswith("every transaction committed or aborted")


@pytest.mark.parametrize(
    ("sink", "said"),
    [
        (
            CommitsAtTheSnapshot,
            "committed records are not the failure-free run's once each but twice or more "
            "(duplicates after the restart)",
        ),
        (LeavesTheLeftovers, "transaction(s) unfinished after the run"),
        (CommitsTwice, "it is committed already"),
    ],
)
def test_a_wrong_sink_fails_part_d_of_the_two_phase_commit_lab(sink, said):
    """Checkpoint 3's records, visible at its snapshot, come again after the restart; the
    failed attempt's transactions stay behind; a transaction committed before the failure
    is committed again (the store refuses it), each said with its cause."""
    part = spark_part(LABS["two-phase-commit"].spark, sink)
    assert part.status == "failed", part.lines()
    said_all = "\n".join([part.summary, *part.details])
    assert said in said_all
    if sink is CommitsTwice:
        assert "raised by your restore(state) at sink[" in said_all
        assert "in restore: self.commit(txn)" in said_all


STUDENT = '''
from absnb.labs import (
    AbsHandler, Acknowledge, Block, BroadcastEvent, CheckpointBarrier, SnapshotState, Unblock,
)


class GivesUpAtThree(AbsHandler):
    """Algorithm 1, but it raises at the third checkpoint."""

    def waiting_for_more(self, n, channel):
        return [Block(channel)]

    def all_arrived(self, n, blocked):
        if n >= 3:
            raise RuntimeError("three is too many")
        return [
            BroadcastEvent(CheckpointBarrier(n)),
            SnapshotState(n),
            Acknowledge(n),
            *map(Unblock, blocked),
        ]
'''


def test_a_decision_that_raises_on_spark_fails_part_d_with_the_student_s_line(tmp_path: Path):
    """The class comes from a file loaded by name, as ``absnb lab grade FILE`` loads one: the
    executors cannot import it, so it travels by value; what it raises comes back with its
    line in the student's file."""
    path = tmp_path / "student_gives_up.py"
    path.write_text(textwrap.dedent(STUDENT))
    spec = importlib.util.spec_from_file_location("student_gives_up", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["student_gives_up"] = module
    try:
        spec.loader.exec_module(module)
        part = spark_part(LABS["abs"].spark, module.GivesUpAtThree)
    finally:
        del sys.modules["student_gives_up"]
    assert part.status == "failed", part.lines()
    said = "\n".join(part.details)
    assert said.startswith("RuntimeError: three is too many"), said
    assert "all_arrived(3, " in said or "all_arrived(4, " in said
    assert 'line 15 of student_gives_up.py, in all_arrived: raise RuntimeError("three' in said


def test_a_run_that_never_ends_fails_part_d_when_its_time_is_up(monkeypatch):
    """The cancelled run's folder is gone afterwards, though its stopped hosts may write
    into it for a moment (see test_abs_lab.py's test of the removal)."""
    folders: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recorded(**kwargs: Any) -> str:
        folders.append(mkdtemp(**kwargs))
        return folders[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recorded)
    # longer than the lab's run with a handler that unblocks (about 3 s: its input lasts 2 s)
    part = spark_part(LABS["abs"].spark, NeverUnblocks, timeout=5)
    assert part.status == "failed", part.lines()
    assert part.summary.endswith("no end after 5 s")
    assert "an input blocked for good" in part.details[0]
    lab_folders = [f for f in folders if os.path.basename(f).startswith("absnb-lab-")]
    assert len(lab_folders) == 1
    assert not os.path.exists(lab_folders[0])
