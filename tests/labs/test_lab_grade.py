"""``absnb lab grade``: a student's file or notebook graded outside the notebook, its report,
its scores in Gradescope's results format (Otter-Grader's), a time limit per part, and a
file that does not run scored nothing with its line named."""

from __future__ import annotations

import json
from pathlib import Path

from absnb.cli import main

ROOT = Path(__file__).resolve().parents[2]

ALGORITHM_2 = """
from absnb.labs import (
    Acknowledge, Block, BroadcastEvent, CheckpointBarrier, CyclicAbsHandler,
    RecordChannelState, SnapshotState, Unblock,
)


def done(n, missing):
    return [] if missing else [Acknowledge(n)]


class Mine(CyclicAbsHandler):
    def waiting_for_more(self, n, channel):
        return [Block(channel)]

    def regular_arrived(self, n, blocked, missing):
        return [SnapshotState(n), BroadcastEvent(CheckpointBarrier(n)),
                *map(Unblock, blocked), *done(n, missing)]

    def loop_barrier(self, n, channel, logged, missing):
        return [RecordChannelState(n, channel, logged), *done(n, missing)]
"""


def gradescope(found):
    """Gradescope's results format, as Otter-Grader writes it."""
    assert set(found) >= {"score", "tests"}
    for test in found["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility"}
        assert 0 <= test["score"] <= test["max_score"]
    assert found["score"] == sum(t["score"] for t in found["tests"])
    return found


def test_a_file_that_passes_scores_every_part(tmp_path, capsys):
    student = tmp_path / "mine.py"
    student.write_text(ALGORITHM_2)
    scores = tmp_path / "results.json"
    grade = ["lab", "grade", str(student), "--lab", "abs-cyclic", "--no-spark"]
    assert main([*grade, "--json", str(scores)]) == 0
    out = capsys.readouterr().out
    assert "d. on Spark: not run: skipped by spark=False (--no-spark)" in out
    assert "Mine passes the abs-cyclic lab." in out
    assert "total: 3 / 3" in out
    found = gradescope(json.loads(scores.read_text()))
    assert found["score"] == found["max_score"] == 3
    assert [t["name"][:2] for t in found["tests"]] == ["a.", "b.", "c."]


def test_the_lab_notebook_s_skeleton_scores_nothing(capsys):
    notebook = ROOT / "notebooks" / "labs" / "abs_lab.ipynb"
    code = main(["lab", "grade", str(notebook), "--lab", "abs-cyclic", "--json", "-"])
    assert code == 1
    captured = capsys.readouterr()
    found = gradescope(json.loads(captured.out))  # stdout: the JSON alone
    assert found["score"] == 0
    assert "MyCyclicAbs is not finished" in found["output"]
    assert "regular_arrived(n, blocked, missing)" not in captured.out.split("{", 1)[0]
    assert "Lab abs-cyclic: MyCyclicAbs" in captured.err


def test_an_endless_loop_fails_its_part_at_its_time_limit(tmp_path, capsys):
    student = tmp_path / "loops.py"
    student.write_text(
        ALGORITHM_2
        + """

class Loops(Mine):
    def regular_arrived(self, n, blocked, missing):
        while True:
            pass
"""
    )
    code = main(["lab", "grade", str(student), "--lab", "abs-cyclic", "--timeout", "1"])
    assert code == 1
    out = capsys.readouterr().out
    assert "Lab abs-cyclic: Loops" in out
    assert "a. scripted cases at one task: failed" in out
    assert "stopped after 1 s, its time limit: does a decision loop forever" in out


def test_a_file_that_does_not_run_scores_nothing_and_names_its_line(tmp_path, capsys):
    student = tmp_path / "broken.py"
    student.write_text("import absnb\n\nclass Mine(absnb.labs.CyclicAbsHandler):\n    x = 1 / 0\n")
    scores = tmp_path / "results.json"
    assert main(["lab", "grade", str(student), "--lab", "abs-cyclic", "--json", str(scores)]) == 1
    err = capsys.readouterr().err
    assert "broken.py, line 4: ZeroDivisionError" in err
    found = gradescope(json.loads(scores.read_text()))
    assert found["score"] == 0
    assert found["max_score"] == 3


def test_an_unknown_lab_is_a_usage_error(tmp_path, capsys):
    student = tmp_path / "mine.py"
    student.write_text(ALGORITHM_2)
    assert main(["lab", "grade", str(student), "--lab", "cyclic"]) == 2
    assert (
        "--lab 'cyclic' is no lab: choose one of abs, abs-cyclic, chandy-lamport, two-phase-commit"
        in (capsys.readouterr().err)
    )
