"""The real run's own event log (issue 22's done-when): word count on local[2] with ABS
every 0.5 s and a failure after checkpoint 2."""

from __future__ import annotations

import json

import absnb
from absnb import datasets
from absnb.runtime import load_events
from absnb.runtime.failures import Failure
from absnb.runtime.spark import SparkRuntime, final_counts, quiet_task_failures, word_count_answer
from absnb.views import show_run


def test_a_real_run_logs_what_it_did_checks_its_cuts_and_restores_checkpoint_2(
    spark, tmp_path
) -> None:
    parts = datasets.text_partitions("large")
    lines = [parts[0] + parts[2], parts[1] + parts[3]]
    runtime = SparkRuntime(spark, checkpoint_dir=str(tmp_path / "checkpoints"))
    with quiet_task_failures(spark):
        run = runtime.run(
            absnb.word_count(lines),
            "abs",
            checkpoint_interval=0.5,
            failures=[Failure("count[1]", after_checkpoint=2)],
            source_rate=300,
        )
    assert final_counts(run.output) == word_count_answer(spark, lines)
    assert run.restarts == 1
    assert run.restored[1] >= 2
    df = run.events
    assert {"time", "attempt", "task", "kind", "channel", "checkpoint"} <= set(df.columns)
    kinds = set(df.kind)
    every = {"barrier", "block", "unblock", "snapshot", "ack", "triggered", "completed"}
    assert every | {"failure", "restored", "end_of_input", "records"} <= kinds
    (failure,) = df[df.kind == "failure"].itertuples()
    assert (failure.task, failure.attempt) == ("count[1]", 0)
    restored = df[df.kind == "restored"]
    assert set(restored.checkpoint) == {run.restored[1]}
    assert set(restored.attempt) == {1}
    assert failure.time < restored.time.min()
    completed_before = df[(df.kind == "completed") & (df.time < failure.time)].checkpoint
    assert 2 in set(completed_before)  # the failure came after checkpoint 2 completed
    snap = df[(df.kind == "snapshot") & (df.task == "count[1]")].iloc[0]
    assert set(snap.consumed) == {"source[0]->count[1]", "source[1]->count[1]"}
    assert set(snap.sent) == {"count[1]->sink[1]"}
    assert run.check_cuts() == []
    # the log is saved and read back, and written as a Chrome trace
    run.save_events(str(tmp_path / "events.jsonl"))
    assert load_events(str(tmp_path / "events.jsonl")).check_cuts() == []
    run.to_chrome_trace(str(tmp_path / "trace.json"))
    trace = json.loads((tmp_path / "trace.json").read_text())
    names = {e["name"] for e in trace["traceEvents"]}
    assert any(n.startswith("alignment ") for n in names)
    assert any(n.startswith("barrier 2 on ") for n in names)
    # and drawn: lanes, every completed checkpoint's cut, the failure and the restore
    svg = show_run(run).svg
    assert all(f"checkpoint {n}" in svg for n in run.checkpoints)
    assert "✗ count[1] fails" in svg
    assert f"restored checkpoint {run.restored[1]}" in svg


def test_the_cli_says_a_crash_that_never_fired_and_exits_1(spark, capsys) -> None:
    from absnb.cli import main

    argv = ["run", "--runtime", "spark", "--master", "local[2]", "--job", "word_count"]
    assert main([*argv, "--crash", "count[1]@40"]) == 1
    out = capsys.readouterr().out
    assert "sources read at most 0.4 lines a second" in out  # the default input, paced
    assert "the crash never fired: count[1] consumed " in out
    assert "every snapshot is a consistent cut (checked from the run's own log)" in out


def test_the_python_api_returns_and_warns_of_a_failure_that_never_fired(spark, tmp_path) -> None:
    import pytest

    from absnb.core.errors import FailureNotFiredWarning

    runtime = SparkRuntime(spark, checkpoint_dir=str(tmp_path / "checkpoints"))
    never = Failure("count[1]", after_records=10**6)  # the default input is 11 words
    fires = Failure("count[0]", after_records=1)
    with quiet_task_failures(spark), pytest.warns(FailureNotFiredWarning) as warned:
        run = runtime.run(absnb.word_count(), "abs", failures=[never, fires])
    assert list(run.failures_not_fired) == [never]  # the one that fired is not listed
    (why,) = run.failures_not_fired.values()
    assert why.startswith("the crash never fired: count[1] consumed ")
    assert "waited for 1000000 records" in why
    assert [str(w.message) for w in warned] == [why]
    assert run.restarts == 1
