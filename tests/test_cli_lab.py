"""``absnb lab grade``: a student's file or notebook graded outside the notebook, scored
per part in Otter-Grader's results.json form, each part within its time."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from absnb.cli import main

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "labs" / "two_phase_commit_lab.ipynb"

SINK = """
from dataclasses import replace

from absnb.labs import TransactionalSink, check


class MySink(TransactionalSink):
    def invoke(self, state, value):
        txn = state.current or self.begin_transaction(state.task)
        self.write(txn, value)
        return replace(state, current=txn, written=state.written + 1)

    def snapshot(self, state, n):
        if state.current is None:
            return state
        txn = self.pre_commit(state.current, n)
        return replace(state, current=None, written=0, pending=(*state.pending, (n, txn)))

    def checkpoint_complete(self, state, n):
        for m, txn in state.pending:
            if m <= n:
                self.commit(txn)
        return replace(state, pending=tuple(p for p in state.pending if p[0] > n))

    def restore(self, state):
        named = {txn for _, txn in state.pending}
        for txn in named:
            self.recover_and_commit(txn)
        for txn in self.leftovers(state.task):
            if txn not in named:
                self.recover_and_abort(txn)
        return replace(state, current=None, written=0, pending=())
"""


def test_a_correct_sink_scores_every_part(tmp_path, capsys):
    src = tmp_path / "my_sink.py"
    src.write_text(SINK)
    out = tmp_path / "results.json"
    grade = ["lab", "grade", str(src), "--lab", "two-phase-commit", "--no-spark"]
    assert main([*grade, "--json", str(out)]) == 0
    assert "total: 3 / 3" in capsys.readouterr().out
    results = json.loads(out.read_text())
    assert results["score"] == 3
    assert [t["max_score"] for t in results["tests"]] == [1, 1, 1]
    assert [t["status"] for t in results["tests"]] == ["passed"] * 3


def test_the_unfilled_notebook_scores_nothing_and_says_what_is_missing(tmp_path, capsys):
    book = tmp_path / "lab.ipynb"
    shutil.copy(NOTEBOOK, book)
    assert main(["lab", "grade", str(book), "--lab", "two-phase-commit", "--json", "-"]) == 1
    captured = capsys.readouterr()
    assert "Lab two-phase-commit: MySink" in captured.err  # the last class, not the worked bug
    assert "not implemented: write MySink.invoke" in captured.err
    results = json.loads(captured.out)  # stdout: the JSON alone
    assert results["score"] == 0
    assert "not implemented" in results["tests"][0]["output"]


def test_a_bug_comes_with_its_counterexample(tmp_path, capsys):
    src = tmp_path / "bug.py"
    src.write_text(SINK.replace("self.recover_and_abort(txn)", "pass"))
    grade = ["lab", "grade", str(src), "--lab", "two-phase-commit", "--handler", "MySink"]
    assert main(grade) == 1
    out = capsys.readouterr().out
    assert "Shortest run that shows it: 5 steps" in out
    assert "total: 0 / 3" in out


def test_an_endless_loop_fails_its_part_within_the_timeout(tmp_path, capsys):
    src = tmp_path / "loop.py"
    src.write_text(
        SINK.replace(
            "        txn = state.current or",
            "        while True:\n            pass\n        txn = state.current or",
        )
    )
    assert main(["lab", "grade", str(src), "--lab", "two-phase-commit", "--timeout", "1"]) == 1
    assert "stopped after 1 s, its time limit" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("x = 1\n", "TransactionalSink"),
        ("x = 1\n\n1 / 0\n", "ZeroDivisionError"),
    ],
)
def test_a_file_without_a_class_to_grade_is_refused(tmp_path, capsys, text, said):
    src = tmp_path / "nothing.py"
    src.write_text(textwrap.dedent(text))
    assert main(["lab", "grade", str(src), "--lab", "two-phase-commit"]) == 1
    err = capsys.readouterr().err
    assert "does not run" in err
    assert said in err
