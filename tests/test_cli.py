"""The command line: `absnb run` and `absnb replay` (absnb.cli)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from absnb.cli import json_safe, main

ROOT = Path(__file__).resolve().parents[1]
SEED_001 = ROOT / "datasets" / "traces" / "seed_001.jsonl"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> dict[str, Any]:
    """Run the command line with --json; check the exit code and parse stdout."""
    assert main([*argv, "--json"]) == code
    return json.loads(capsys.readouterr().out)


def test_default_bank_run_prints_snapshots_and_verdicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("bank_transfer with chandy-lamport: 2 tasks, 2 channels")
    assert "checkpoint 1: triggered at step" in out
    assert "channel B->A: [" in out
    assert "feasible: yes" in out
    assert "termination: yes" in out
    assert "exactly-once: yes" in out
    assert "conserved: yes, 15,000" in out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bank_snapshots_add_up_to_the_total(capsys: pytest.CaptureFixture[str], seed: int) -> None:
    report = run_json(
        capsys, "run", "--accounts", "A=10000,B=5000,C=2000", "--transfers", "30",
        "--seed", str(seed),
    )  # fmt: skip
    assert report["params"]["accounts"] == {"A": 10000, "B": 5000, "C": 2000}
    assert len(report["topology"]["channels"]) == 6
    snapshots = report["snapshots"]
    assert snapshots, "the run should complete some checkpoints"
    for snap in snapshots:
        balances = sum(part["state"] for part in snap["tasks"].values())
        in_transit = sum(sum(values) for values in snap["channels"].values())
        assert balances + in_transit == 17_000, snap["checkpoint_id"]
        assert set(snap["channels"]) == set(report["topology"]["channels"])
    # the cut is not trivial: some snapshot recorded money in transit
    assert any(any(snap["channels"].values()) for snap in snapshots)
    assert sum(report["output"].values()) == 17_000
    assert report["verdicts"] == {
        "feasible": True,
        "problems": [],
        "terminated": True,
        "deadlock": None,
        "exactly_once": True,
        "conserved": True,
        "all_hold": True,
    }


@pytest.mark.parametrize("recovery", ["full", "partial"])
@pytest.mark.parametrize(
    ("job", "crash"),
    [("word_count", "count[1]@28"), ("bank_transfer", "B@30"), ("cyclic", "step@40")],
)
def test_crash_and_recovery_is_exactly_once(
    capsys: pytest.CaptureFixture[str], job: str, crash: str, recovery: str
) -> None:
    report = run_json(capsys, "run", "--job", job, "--crash", crash, "--recovery", recovery)
    task, step = crash.split("@")
    assert report["crash"] == {
        "task": task,
        "step": int(step),
        "recovery": recovery,
        "happened": True,
    }
    # a snapshot completed before the crash, so recovery restored from it
    assert report["snapshots"][0]["completed_at"] < int(step)
    assert report["verdicts"]["exactly_once"] is True
    assert report["verdicts"]["feasible"] is True


def test_crash_text_names_the_crash_and_recovery(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--job", "word_count", "--crash", "count[1]@28"]) == 0
    out = capsys.readouterr().out
    assert "crash: count[1] at step 28, full recovery" in out
    assert "exactly-once: yes" in out


def test_a_crash_after_the_end_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--job", "word_count", "--crash", "count[1]@4000"]) == 0
    assert "did not happen" in capsys.readouterr().out


def test_abs_on_the_cycle_deadlocks_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--job", "cyclic", "--protocol", "abs", "--allow-deadlock"]) == 1
    out = capsys.readouterr().out
    assert "termination: no, deadlock at step" in out
    assert "head waits for barrier 1 on step->head" in out  # the loop head
    assert "exactly-once: no" in out


def test_deadlock_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(
        capsys, "run", "--job", "cyclic", "--protocol", "abs", "--allow-deadlock", code=1
    )
    assert report["topology"]["back_edges"] == ["step->head"]
    assert report["verdicts"]["terminated"] is False
    assert "head waits" in report["verdicts"]["deadlock"]
    assert report["snapshots"] == []
    assert report["in_transit"]  # records held behind the blocked channel


def test_abs_on_the_cycle_without_allow_deadlock_is_bad_input(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--job", "cyclic", "--protocol", "abs"]) == 2
    assert "abs-cyclic" in capsys.readouterr().err


def test_cyclic_run_shows_the_backup_log(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "run", "--job", "cyclic")
    assert report["protocol"] == "abs-cyclic"
    for snap in report["snapshots"]:
        assert set(snap["channels"]) <= {"step->head"}
    assert main(["run", "--job", "cyclic"]) == 0
    assert "backup log step->head: [" in capsys.readouterr().out


def test_word_count_states_are_json_safe(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "run", "--job", "word_count")
    assert report["protocol"] == "abs"
    (snap,) = report["snapshots"][:1]
    assert snap["channels"] == {}
    sink = snap["tasks"]["sink[0]"]["state"]
    assert all(isinstance(pair, list) and len(pair) == 2 for pair in sink)
    assert ["be", 4] in report["output"]
    assert main(["run", "--job", "word_count"]) == 0
    assert "channels: none (ABS records no channel state)" in capsys.readouterr().out


def test_json_safe() -> None:
    value = {1: (2, {3}), ("a", 1): [None, True]}
    assert json_safe(value) == {"1": [2, [3]], '["a", 1]': [None, True]}


def test_unknown_protocol_exits_2_naming_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--protocol", "paxos"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "paxos" in captured.err
    for name in ("chandy-lamport", "abs", "abs-cyclic", "synchronous", "none"):
        assert name in captured.err
    assert "Traceback" not in captured.err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "--crash", "B"], "TASK@STEP"),
        (["run", "--crash", "B@soon"], "TASK@STEP"),
        (["run", "--crash", "@3"], "TASK@STEP"),
        (["run", "--crash", "C@3"], "its tasks are: A, B"),
        (["run", "--job", "word_count", "--crash", "count[7]@3"], "count[0]"),
        (["run", "--accounts", "A:10"], "NAME=BALANCE"),
        (["run", "--job", "cyclic", "--transfers", "3"], "bank_transfer only"),
        (["run", "--job", "pizza"], "unknown job 'pizza'"),
        (["run", "--interval", "-1"], "'-1' is not an interval"),
        (["run", "--interval", "2.5"], "whole number"),
        (["replay", "no/such/file.jsonl"], "cannot read trace file"),
        ([], "required"),
    ],
)
def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str], says: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err


def test_replay_of_the_seed_001_script(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "replay", str(SEED_001))
    (snap,) = report["snapshots"]
    assert {t: part["state"] for t, part in snap["tasks"].items()} == {"A": 9000, "B": 3000}
    assert snap["channels"] == {"A->B": [], "B->A": [1000, 2000]}
    # after the crash of B and full recovery: the snapshot restored, 3,000 back in transit
    assert report["output"] == {"A": 9000, "B": 3000}
    assert report["in_transit"] == {"B->A": [1000, 2000]}
    assert report["verdicts"]["conserved"] is True
    assert report["verdicts"]["exactly_once"] is None  # the script stops with work left
    assert report["steps"] == 11


def test_replay_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(SEED_001)]) == 0
    out = capsys.readouterr().out
    assert "  A  9,000  (offset 1)" in out
    assert "  B  3,000  (offset 2)" in out
    assert "channel B->A: [1,000, 2,000]" in out
    assert "in transit on B->A: [1,000, 2,000]" in out


def test_saved_run_replays_to_the_same_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    argv = ["run", "--job", "word_count", "--crash", "count[0]@20", "--recovery", "partial"]
    ran = run_json(capsys, *argv, "--seed", "5", "--save-trace", str(path))
    header = json.loads(path.read_text().splitlines()[0])
    assert header["command"].startswith("absnb run --job word_count")
    replayed = run_json(capsys, "replay", str(path))
    for key in ("job", "params", "protocol", "topology", "snapshots", "output", "steps"):
        assert replayed[key] == ran[key], key
    assert replayed["verdicts"] == ran["verdicts"]


def test_replay_of_a_malformed_trace_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = SEED_001.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"deliver"' in line)
    lines[index] = '{"action": "deliver", "channel": "A->Q"}'
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines))
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"line {index + 1}:" in err
    assert "A->Q" in err


def test_python_dash_m(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "absnb", "replay", str(SEED_001), "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["snapshots"][0]["channels"]["B->A"] == [1000, 2000]


def test_two_phase_commit_sink_is_exactly_once_after_a_crash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "tpc.jsonl"
    argv = ["run", "--job", "word_count", "--sink", "two-phase-commit", "--interval", "4"]
    argv += ["--crash", "count[1]@20", "--save-trace", str(trace)]
    report = run_json(capsys, *argv)
    assert report["verdicts"]["exactly_once"] is True
    assert report["crash"]["happened"] is True
    # notifications are steps of their own, and the trace replays them
    assert '"action": "notify"' in trace.read_text()
    replayed = run_json(capsys, "replay", str(trace))
    assert replayed["output"] == report["output"]


def test_at_least_once_sink_duplicates_after_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--job", "word_count", "--sink", "at-least-once", "--interval", "4"]
    report = run_json(capsys, *argv, "--crash", "count[1]@20", code=1)
    assert report["verdicts"]["exactly_once"] is False
    assert len(report["output"]) > len(run_json(capsys, *argv)["output"])


def test_sink_applies_to_word_count_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--job", "bank_transfer", "--sink", "at-least-once"]) == 2
    assert "--sink applies to --job word_count only" in capsys.readouterr().err
