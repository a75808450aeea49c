"""The command line: `absnb run` and `absnb replay` (absnb.cli)."""

from __future__ import annotations

import json
import os
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
    [("word_count", "count[1]@28"), ("bank_transfer", "B@38"), ("cyclic", "step@40")],
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


def test_a_crash_after_the_end_is_reported_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # as the Spark runtime's command line does for a failure that never fired
    assert main(["run", "--job", "word_count", "--crash", "count[1]@4000"]) == 1
    out = capsys.readouterr().out
    assert "crash: count[1] at step 4000 did not happen: the run ended at step " in out
    assert "exactly-once: yes" in out


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
        (["run", "--accounts", "A=1,A=2"], "account 'A' is named twice"),
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


def test_a_shipped_trace_is_replayed_by_its_name_from_any_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``traces/seed_001.jsonl`` names the sample under datasets/ wherever the command runs
    (a notebook in notebooks/ or notebooks/ko/ prints the same line); a file of that name
    in the working folder comes first."""
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "traces/seed_001.jsonl"]) == 0
    out = capsys.readouterr().out
    assert "replay of traces/seed_001.jsonl: 11 actions" in out
    assert "  B  3,000  (offset 2)" in out
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "seed_001.jsonl").write_text("not a trace\n", encoding="utf-8")
    assert main(["replay", "traces/seed_001.jsonl"]) != 0
    assert "traces/seed_001.jsonl, line 1: not valid JSON" in capsys.readouterr().err


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


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """``absnb replay run.jsonl | head``: no "[Errno 32] Broken pipe", no traceback."""
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "absnb", "replay", str(SEED_001)],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            cwd=tmp_path,
        )
    finally:
        os.close(writer)
    assert done.stderr == ""
    assert done.returncode == 141


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


# -- replay tells the truth ------------------------------------------------------------------
BANK_HEADER = (
    '{"absnb": "trace", "version": 1, "job": "bank_transfer", "params": {"accounts": '
    '{"A": 10000, "B": 5000}, "transfers": 0}, "protocol": "chandy-lamport"}'
)


def script(tmp_path: Path, *actions: str, name: str = "script.jsonl") -> str:
    path = tmp_path / name
    path.write_text("\n".join([BANK_HEADER, *actions]) + "\n")
    return str(path)


def test_replay_names_an_aborted_checkpoint_and_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = script(
        tmp_path,
        '{"action": "trigger", "at": "A"}',
        '{"action": "crash", "task": "B"}',
        '{"action": "recover", "mode": "full"}',
    )
    assert main(["replay", path]) == 0  # the abort is the protocol's answer to a crash
    out = capsys.readouterr().out
    assert "checkpoint 1: aborted at step 1: B crashed" in out
    assert "every checkpoint completed" not in out
    assert "termination: yes, no checkpoint is left pending (1 aborted" in out
    report = run_json(capsys, "replay", path)
    assert report["aborted"] == [
        {"checkpoint_id": 1, "why": "aborted at step 1: B crashed before every task had taken "
         "its part"}
    ]  # fmt: skip


def test_a_trace_that_stops_mid_checkpoint_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = script(
        tmp_path,
        '{"action": "transfer", "src": "A", "dst": "B", "amount": 1000}',
        '{"action": "trigger", "at": "A"}',
        '{"action": "deliver", "channel": "A->B"}',
    )
    assert main(["replay", path]) == 1
    out = capsys.readouterr().out
    assert "checkpoint 1 is still pending at the end: triggered at step 1" in out
    # the marker from A is still behind the transfer on A->B: no task has finished its part
    assert "acknowledged by 0 of 2 tasks (waiting for A, B)" in out
    assert "termination: not judged" in out
    report = run_json(capsys, "replay", path, code=1)
    assert report["verdicts"]["terminated"] is None
    assert report["verdicts"]["all_hold"] is False
    assert len(report["pending"]) == 1
    # the same script, finished: the marker back from B completes the snapshot, exit 0
    done = script(
        tmp_path,
        '{"action": "transfer", "src": "A", "dst": "B", "amount": 1000}',
        '{"action": "trigger", "at": "A"}',
        '{"action": "deliver", "channel": "A->B"}',
        '{"action": "deliver", "channel": "A->B"}',
        '{"action": "deliver", "channel": "B->A"}',
        name="done.jsonl",
    )
    assert run_json(capsys, "replay", done)["verdicts"]["terminated"] is True


def test_a_trace_that_ends_with_a_task_failed_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = script(tmp_path, '{"action": "crash", "task": "B"}')
    report = run_json(capsys, "replay", path, code=1)
    assert report["verdicts"]["exactly_once"] is None


def test_a_subsumed_checkpoint_is_named_with_the_one_that_subsumed_it() -> None:
    import absnb
    from absnb.cli.drive import drive
    from absnb.protocols.chandy_lamport import ChandyLamportProtocol
    from absnb.sim.actions import Deliver, TriggerCheckpoint
    from absnb.sim.schedulers import ScriptedScheduler
    from absnb.sim.stepper import Stepper

    class Subsuming(ChandyLamportProtocol):
        subsumes = True  # as ABS does: a completed checkpoint aborts older pending ones

    job = absnb.bank_transfer()
    g = job.graph
    a, b = g.task("A"), g.task("B")
    actions = [TriggerCheckpoint(a), TriggerCheckpoint(b)] + [
        Deliver(g.channel(c)) for c in ("B->A", "A->B", "A->B", "B->A")
    ]
    stepper = Stepper(absnb.World(job, Subsuming()), ScriptedScheduler(actions), history=False)
    why = drive(stepper)
    assert [c.checkpoint_id for c in stepper.world.coordinator.completed] == [2]
    assert why == {1: "aborted at step 4: subsumed: the newer checkpoint 2 completed first"}


# -- times in traces -----------------------------------------------------------------------------
def test_timed_actions_replay_in_order_of_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A schedule given in time units, written out of order (ties keep the written order),
    replays as the same schedule written in order."""
    timed = script(
        tmp_path,
        '{"action": "deliver", "channel": "A->B", "time": 5}',
        '{"action": "transfer", "src": "A", "dst": "B", "amount": 1000, "time": 0}',
        '{"action": "trigger", "at": "A", "time": 2}',
        '{"action": "deliver", "channel": "A->B"}',  # no time: at 2, right after the trigger
        '{"action": "deliver", "channel": "B->A", "time": 5}',  # a tie: after the first line
        name="timed.jsonl",
    )
    ordered = script(
        tmp_path,
        '{"action": "transfer", "src": "A", "dst": "B", "amount": 1000}',
        '{"action": "trigger", "at": "A"}',
        '{"action": "deliver", "channel": "A->B"}',
        '{"action": "deliver", "channel": "A->B"}',
        '{"action": "deliver", "channel": "B->A"}',
        name="ordered.jsonl",
    )
    a, b = run_json(capsys, "replay", timed), run_json(capsys, "replay", ordered)
    for key in ("snapshots", "output", "steps"):
        strip = (
            [{k: v for k, v in s.items() if not k.endswith("_time")} for s in a[key]]
            if (key == "snapshots")
            else a[key]
        )
        assert strip == b[key], key
    (snap,) = a["snapshots"]
    assert (snap["triggered_time"], snap["completed_time"]) == (2, 5)
    assert main(["replay", timed]) == 0
    out = capsys.readouterr().out
    assert "triggered at step 1 (t=2), complete at step 4 (t=5)" in out


def test_times_round_trip_through_save_trace(tmp_path: Path) -> None:
    import absnb
    from absnb.sim.actions import Emit
    from absnb.sim.trace import load_trace, save_trace

    world = absnb.World(absnb.word_count(), "abs")
    src = world.graph.task("source[0]")
    path = tmp_path / "t.jsonl"
    save_trace(path, world, [Emit(src), Emit(src)], times=[0.5, 1.25])
    trace = load_trace(path)
    assert trace.times == [0.5, 1.25]
    assert trace.actions == [Emit(src), Emit(src)]


# -- custom jobs ---------------------------------------------------------------------------------
CUSTOM_JOB = """
from absnb.core.graph import JobGraph
from absnb.core.job import Job
from absnb.operators import CollectSink, Map, Source


def doubled(numbers=(1, 2, 3, 4)):
    g = JobGraph("doubled")
    g.add("numbers", "source", Source(), 1)
    g.add("double", "operator", Map(lambda x: 2 * x), 1)
    g.add("out", "sink", CollectSink(), 1)
    g.connect("numbers", "double")
    g.connect("double", "out")
    graph = g.compile()
    return Job("doubled", {}, graph, {graph.task("numbers"): tuple(numbers)})
"""


def test_a_custom_job_round_trips_through_a_trace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_absnb_jobs.py").write_text(CUSTOM_JOB)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "doubled.jsonl"
    argv = ["run", "--job", "my_absnb_jobs:doubled", "--interval", "2", "--crash", "double@5"]
    ran = run_json(capsys, *argv, "--save-trace", str(path))
    assert ran["job"] == "my_absnb_jobs:doubled"
    assert ran["protocol"] == "abs"  # no processes, no cycle
    assert ran["output"] == [2, 4, 6, 8]
    assert ran["crash"]["happened"] is True
    assert ran["verdicts"]["exactly_once"] is True
    assert json.loads(path.read_text().splitlines()[0])["job"] == "my_absnb_jobs:doubled"
    replayed = run_json(capsys, "replay", str(path))
    for key in ("job", "params", "protocol", "topology", "snapshots", "aborted", "output"):
        assert replayed[key] == ran[key], key


# -- explore -------------------------------------------------------------------------------------
def test_explore_word_count_is_exhaustive_and_clean(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "explore", "--job", "word_count")
    assert report["complete"] is True
    assert report["violation"] is None
    # every interleaving ends in the same state, which the explorer's key merges into one
    assert report["terminal"] == 1
    assert report["states"] > 100


def test_explore_finds_the_deadlock_of_abs_on_a_cycle(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "deadlock.jsonl"
    argv = ["explore", "--job", "cyclic", "--protocol", "abs", "--allow-deadlock"]
    assert main([*argv, "--save-trace", str(path)]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION" in out
    # the counterexample replays to the same deadlock
    assert main(["replay", str(path)]) == 1
    assert "termination: no" in capsys.readouterr().out


def test_explore_with_crashes_is_bounded_by_depth(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "explore", "--transfers", "1", "--crashes", "--max-depth", "6")
    assert report["crashes"] is True
    assert report["max_depth"] <= 6
    assert report["violation"] is None


def test_explore_with_ends_reaches_an_end_of_input(capsys: pytest.CaptureFixture[str]) -> None:
    # The path every Spark run takes at its end (FLIP-147) is explored: channels end, and
    # every invariant still holds. Without --ends no channel ever ends. (Ends multiply the
    # interleavings: bounded here to stay quick.)
    bound = ("--max-states", "3000")
    report = run_json(capsys, "explore", "--job", "word_count", "--ends", *bound)
    assert report["ends"] is True
    assert report["ended"] > 0
    assert report["violation"] is None
    plain = run_json(capsys, "explore", "--job", "word_count", *bound)
    assert plain["ends"] is False
    assert plain["ended"] == 0
    assert main(["explore", "--job", "word_count", "--ends", *bound]) == 0
    assert "transitions end a channel)" in capsys.readouterr().out


# -- progress ------------------------------------------------------------------------------------
def test_plain_progress_lines_on_a_stream_that_is_no_terminal() -> None:
    import io

    from absnb.cli.progress import Progress

    stream = io.StringIO()
    with Progress("run", "steps", total=5000, stream=stream, every=0) as progress:
        progress.update(1000)
        progress.update(1500)
    assert stream.getvalue().splitlines() == [
        "absnb run: 1,000 steps of at most 5,000",
        "absnb run: 2,500 steps of at most 5,000",
    ]
    quiet = io.StringIO()
    with Progress("run", "steps", stream=quiet) as progress:  # every 5 s: a short run is quiet
        progress.update(10)
    assert quiet.getvalue() == ""


def test_a_tqdm_bar_when_asked() -> None:
    import io

    pytest.importorskip("tqdm")
    from absnb.cli.progress import Progress

    stream = io.StringIO()
    with Progress("explore", "transitions", stream=stream, bar=True) as progress:
        progress.update(7)
        assert progress.count == 7
    shown = stream.getvalue()
    assert "explore: 0 transitions" in shown  # tqdm drew its bar on the stream
    assert "absnb explore" not in shown  # and no plain-text line


# -- Spark ---------------------------------------------------------------------------------------
def test_word_count_on_spark_with_a_crash_is_exactly_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The command line's Spark runtime: a checkpoint completes, count[1] fails, the job
    restarts from it and the output is the failure-free output."""
    import shutil

    if shutil.which("java") is None:
        pytest.skip("Java is not installed (PySpark needs it)")
    small = ROOT / "datasets" / "text" / "small"
    argv = ["run", "--runtime", "spark", "--master", "local[2]", "--job", "word_count",
            "--input", str(small), "--crash", "count[1]@20", "--interval", "0.05",
            "--source-rate", "20"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "word_count with abs on Spark (local[2])" in out
    assert "restart 1: InjectedFailure: injected failure of count[1]" in out
    assert "checkpoint statistics:" in out
    assert "exactly-once: yes" in out


@pytest.mark.parametrize("lang", ["en", "ko", "zh"])
def test_the_course_in_each_language_carries_its_labs(tmp_path: Path, lang: str) -> None:
    """``absnb notebooks --lang`` writes the labs in the course's language, in ``labs/``
    beside its chapters (where notebook 00 links them), from the repository's folders."""
    from absnb.cli.notebooks import labs_dir, notebooks_dir, write_course

    written, _ = write_course(tmp_path, lang=lang)
    labs = sorted(p.name for p in (ROOT / "notebooks" / "labs").glob("*.ipynb"))
    assert labs
    assert sorted(p.name for p in written if p.parent == labs_dir(lang)) == labs
    start = (tmp_path / notebooks_dir(lang) / "00_start_here.ipynb").read_text(encoding="utf-8")
    for lab in labs:
        assert (tmp_path / labs_dir(lang) / lab).is_file()
        assert f"](labs/{lab})" in start
