"""The command line accepts the production modes and their settings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from absnb.cli import main


def run_json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> dict[str, Any]:
    assert main([*argv, "--json"]) == code
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("protocol", ["unaligned", "abs-timeout"])
def test_each_mode_runs_on_word_count(capsys, protocol) -> None:
    report = run_json(capsys, "run", "--job", "word_count", "--protocol", protocol)
    assert report["protocol"] == protocol
    assert report["snapshots"]
    assert ["be", 4] in report["output"]


def test_at_least_once_snapshots_are_reported_inconsistent(capsys) -> None:
    """Without alignment a snapshot may count records after a barrier: the feasibility
    verdict says so, and the run exits 1 as for any infeasible snapshot."""
    report = run_json(capsys, "run", "--job", "word_count", "--protocol", "at-least-once", code=1)
    assert report["protocol"] == "at-least-once"
    assert not report["verdicts"]["feasible"]
    assert "counted twice" in report["verdicts"]["problems"][0]


def test_unaligned_prints_in_flight_data(capsys) -> None:
    assert main(["run", "--job", "word_count", "--protocol", "unaligned", "--interval", "3"]) == 0
    out = capsys.readouterr().out
    assert "in-flight data source[0]->count[0]: [to, be, be, quick]" in out


def test_alignment_and_checkpoint_timeouts(capsys) -> None:
    report = run_json(
        capsys, "run", "--job", "word_count", "--alignment-timeout", "1", "--interval", "3"
    )
    assert report["protocol"] == "abs-timeout"
    assert main(["run", "--job", "word_count", "--checkpoint-timeout", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["snapshots"] == []


def test_an_alignment_timeout_for_a_protocol_that_does_not_align_is_refused(capsys) -> None:
    code = main(
        ["run", "--job", "word_count", "--protocol", "unaligned", "--alignment-timeout", "2"]
    )
    assert code == 2
    assert "does not align" in capsys.readouterr().err
