"""Checkpoint and task statistics: from recorded events (no Spark), and from real runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import absnb
from absnb import datasets
from absnb.core.ids import ChannelId, TaskId
from absnb.runtime import Failure, SparkRun
from absnb.runtime.events.cpu import CpuMeter
from absnb.runtime.events.metrics import (
    CHECKPOINT_COLUMNS,
    SUBTASK_COLUMNS,
    TASK_COLUMNS,
    RunMetrics,
)
from absnb.runtime.plan import HostResult
from absnb.runtime.spark import SparkRuntime

ROOT = Path(__file__).resolve().parents[2]

SRC = TaskId("source", 0, 1)
SINK = TaskId("sink", 0, 1)
EDGE = ChannelId(SRC, SINK)


def ack(t: float, n: int, task: TaskId, align: float, state: int, channel: int = 0) -> tuple:
    metrics = {
        "state_size": state,
        "channel_state_size": channel,
        "channel_state_records": channel // 10,
        "async_duration": 0.001,
    }
    details = {
        "checkpoint_id": n,
        "task": task,
        "alignment_s": align,
        "state_bytes": state + channel,
        "metrics": metrics,
    }
    return (t, "acknowledged", details)


def recorded_run() -> SparkRun:
    """A two-task run as the coordinator and hosts would have recorded it: checkpoint 1
    completes, 2 is aborted by a failure, attempt 1 restores 1 and 3 stays pending."""
    events = [
        (100.5, "running", {"attempt": 0, "restore": 0}),
        (101.0, "triggered", {"checkpoint_id": 1, "attempt": 0}),
        ack(101.1, 1, SRC, 0.0, 4),
        ack(101.3, 1, SINK, 0.05, 200, channel=30),
        (101.3, "completed", {"checkpoint_id": 1, "duration": 0.3}),
        (102.0, "triggered", {"checkpoint_id": 2, "attempt": 0}),
        ack(102.1, 2, SRC, 0.0, 4),
        (102.2, "disconnected", {"host_id": 1, "attempt": 0}),
        (102.9, "aborted", {"checkpoint_id": 2, "reason": "new attempt"}),
        (103.5, "running", {"attempt": 1, "restore": 1}),
        (104.0, "triggered", {"checkpoint_id": 3, "attempt": 1}),
        ack(104.2, 3, SRC, 0.0, 4),
    ]
    net = {
        "sent": {EDGE: {"bytes": 1000, "records": 50}},
        "received": {EDGE: {"bytes": 1000, "records": 50, "blocked_seconds": 0.25}},
    }
    source_host = {"tasks": {SRC: {"records_in": 5, "records_out": 50}}, "net": net}
    sink_host = {"tasks": {SINK: {"records_in": 50, "records_out": 0}}, "net": net}
    hosts = [
        HostResult(0, 1, {SRC: None}, {**source_host, "restore_seconds": 0.02}),
        HostResult(1, 1, {SINK: []}, {**sink_host, "restore_seconds": 0.07}),
    ]
    return SparkRun(
        output=[],
        states={SRC: None, SINK: []},
        restarts=1,
        checkpoints=[1],
        seconds=5.0,
        hosts=hosts,
        coordinator_events=events,
        errors=["task sink failed"],
        restored=[0, 1],
        protocol="chandy-lamport",
        started=100.0,
        failed_at=[102.6],
    )


def test_checkpoint_history_from_recorded_events() -> None:
    df = recorded_run().checkpoint_stats()
    assert tuple(df.columns) == CHECKPOINT_COLUMNS
    assert list(df["checkpoint_id"]) == [1, 2, 3]
    assert list(df["status"]) == ["COMPLETED", "FAILED", "IN_PROGRESS"]
    assert list(df["attempt"]) == [0, 0, 1]
    first = df.iloc[0]
    assert first["trigger_timestamp"] == pytest.approx(1.0)
    assert first["end_to_end_duration"] == pytest.approx(0.3)
    assert first["latest_ack_timestamp"] == pytest.approx(1.3)
    assert first["state_size"] == 204
    assert first["persisted_data"] == 30
    assert first["checkpointed_size"] == 234
    assert first["alignment_duration_max"] == pytest.approx(0.05)
    assert (first["num_subtasks"], first["num_acknowledged_subtasks"]) == (2, 2)
    assert df.iloc[1]["failure_message"] == "new attempt"
    assert df.iloc[1]["num_acknowledged_subtasks"] == 1
    assert df["end_to_end_duration"].iloc[1:].isna().all()


def test_subtask_rows_are_the_acknowledgements() -> None:
    df = recorded_run().metrics.subtasks()
    assert tuple(df.columns) == SUBTASK_COLUMNS
    assert list(zip(df["checkpoint_id"], df["task"], strict=True)) == [
        (1, "source"),
        (1, "sink"),
        (2, "source"),
        (3, "source"),
    ]
    assert df.iloc[1]["end_to_end_duration"] == pytest.approx(0.3)
    assert df.iloc[3]["attempt"] == 1


def test_task_rows_count_records_and_network_bytes() -> None:
    df = recorded_run().task_stats().set_index("task")
    assert tuple(df.reset_index().columns) == TASK_COLUMNS
    assert df.loc["source", "records_out"] == 50
    assert df.loc["sink", "records_in"] == 50
    assert df.loc["source", "bytes_out"] == 1000
    assert df.loc["sink", "bytes_in"] == 1000
    assert df.loc["sink", "blocked_duration"] == pytest.approx(0.25)
    assert df.loc["source", "checkpoints_acknowledged"] == 3


def test_recovery_time_is_failure_to_running_again() -> None:
    df = recorded_run().metrics.restarts()
    assert len(df) == 1
    row = df.iloc[0]
    assert row["failure_timestamp"] == pytest.approx(2.2)  # the coordinator lost the host
    assert row["stage_failed_timestamp"] == pytest.approx(2.6)
    assert row["running_timestamp"] == pytest.approx(3.5)
    assert row["recovery_time"] == pytest.approx(1.3)
    assert row["restored_checkpoint"] == 1
    assert row["restore_seconds"] == pytest.approx(0.07)  # the slowest host's restore


def test_a_run_without_checkpoints_has_empty_tables() -> None:
    run = SparkRun(output=[], states={}, restarts=0, checkpoints=[], seconds=1.0)
    m = RunMetrics(run)
    assert m.checkpoints().empty
    assert tuple(m.checkpoints().columns) == CHECKPOINT_COLUMNS
    assert m.subtasks().empty
    assert m.tasks().empty
    assert m.restarts().empty
    assert m.summary()["completed"] == 0
    assert m.summary()["alignment_median"] is None


def test_importing_the_metrics_module_does_not_import_pandas() -> None:
    code = "import absnb.runtime.events.metrics, sys; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_host_set_up_for_columns_imports_nothing_more_at_its_first_batch() -> None:
    # pyarrow imports pandas at its first conversion from NumPy (some 2 s of CPU in a fresh
    # worker): paid as the host sets up, not inside its loop, where it is counted busy time
    code = (
        "import sys\n"
        "from tests.test_columnar_differential import job\n"
        "from tests.differential.pipeline import run\n"
        "from absnb.runtime.host.parts import load_columns\n"
        "load_columns()\n"
        "before = set(sys.modules)\n"
        "j = job([['to be or not to be', 'caf\u00e9 \u65e5\u672c'], ['be not']], 2, True, False)\n"
        "r = run(j, 'abs', 'columnar', [('emit', 0, 2), ('trigger',), ('deliver', 1)])\n"
        "print(r.columnar_batches, sorted(set(sys.modules) - before))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    batches, imported = out.stdout.split(" ", 1)
    assert int(batches) > 0  # the batches were columns
    assert imported.strip() == "[]"


# -- real runs ----------------------------------------------------------------------------------
LINES_PER_SECOND = 50
"""A source's pace in the test of idle time: two seconds for its 100 lines, of which a
warm host spends some 0.3 s of CPU (at 500 lines a second, 1,000 lines, it worked 1.2 s of 2:
a batch of one line costs its fixed Arrow calls; and before the host imported pandas as
it set up, a fresh worker's first batch held it busy for a second and a half)."""
PACED_LINES = 100


def text(repeat: int = 1) -> list[list[str]]:
    parts = datasets.text_partitions("large")
    return [(parts[0] + parts[2]) * repeat, (parts[1] + parts[3]) * repeat]


@pytest.fixture(scope="module")
def runtime(spark, tmp_path_factory):
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


def test_abs_run_statistics(runtime) -> None:
    lines = text(3)
    run = runtime.run(absnb.word_count(lines), "abs", checkpoint_interval=0.05, source_rate=6_000)
    checkpoints = run.checkpoint_stats()
    completed = checkpoints[checkpoints["status"] == "COMPLETED"]
    assert sorted(completed["checkpoint_id"]) == sorted(run.checkpoints)
    assert completed["checkpoint_id"].is_unique
    assert len(completed) >= 1
    assert (completed["end_to_end_duration"] >= 0).all()
    assert (completed["end_to_end_duration"] >= completed["alignment_duration_max"]).all()
    assert (completed["num_acknowledged_subtasks"] == completed["num_subtasks"]).all()
    # ABS on an acyclic graph records no channel state
    assert (checkpoints["persisted_data"] == 0).all()
    assert (completed["state_size"] > 0).all()

    tasks = run.task_stats().set_index("task")
    sinks = tasks[tasks["operator"] == "sink"]
    assert sinks["records_in"].sum() == len(run.output)
    words = sum(len(line.split()) for part in lines for line in part)
    sources = tasks[tasks["operator"] == "source"]
    assert sources["records_in"].sum() == sum(len(part) for part in lines)
    assert sources["records_out"].sum() == words
    assert tasks[tasks["operator"] == "count"]["records_in"].sum() == words
    # the counters are on other hosts than half of the sources: words cross the network
    assert tasks[tasks["operator"] == "count"]["bytes_in"].sum() > 0
    assert run.metrics.aligning() == {"count[0]", "count[1]"}
    assert run.metrics.summary()["records_emitted"] == words


def test_chandy_lamport_records_channel_state(runtime) -> None:
    run = runtime.run(
        absnb.word_count(text(3)), "chandy-lamport", checkpoint_interval=0.02, source_rate=6_000
    )
    checkpoints = run.checkpoint_stats()
    completed = checkpoints[checkpoints["status"] == "COMPLETED"]
    assert len(completed) >= 1
    # with a checkpoint every 20 ms over thousands of words, records are in flight
    assert completed["persisted_data"].sum() > 0
    assert completed["persisted_records"].sum() > 0
    subtasks = run.metrics.subtasks()
    recorded = subtasks[subtasks["persisted_records"] > 0]
    assert set(recorded["operator"]) <= {"count", "sink"}  # sources have no inputs


def test_hosts_count_the_time_they_waited_with_nothing_to_do(runtime) -> None:
    # paced sources: every host spends most of its time waiting for the next lines
    lines = [part[:PACED_LINES] for part in text()]
    paced = runtime.run(absnb.word_count(lines), "none", source_rate=LINES_PER_SECOND)
    for host in paced.hosts:
        assert 0.5 * host.metrics["seconds"] <= host.metrics["idle_seconds"]
        assert host.metrics["idle_seconds"] <= host.metrics["seconds"]


def test_recovery_time_of_a_real_failure(runtime) -> None:
    failure = Failure("count[1]", after_records=2_000, kind="raise")
    run = runtime.run(absnb.word_count(text()), "abs", checkpoint_interval=0.05, failures=[failure])
    assert run.restarts == 1
    restarts = run.metrics.restarts()
    assert len(restarts) == 1
    row = restarts.iloc[0]
    assert 0 <= row["failure_timestamp"] <= row["running_timestamp"]
    assert row["recovery_time"] == pytest.approx(
        row["running_timestamp"] - row["failure_timestamp"]
    )
    assert row["restored_checkpoint"] == run.restored[1]
    # the hosts of the attempt that ran to the end timed their restore, within the recovery
    assert 0 < row["restore_seconds"] < row["recovery_time"]
    assert run.metrics.summary()["restarts"] == 1


def test_cpu_meter_sees_a_core_kept_busy() -> None:
    with CpuMeter() as idle_ish:
        pass
    with CpuMeter() as meter:
        end = time.process_time() + 0.5
        while time.process_time() < end:  # one core busy for 0.5 s of CPU
            pass
    assert meter.busy is not None, "psutil reads the machine's CPU times"
    cores = os.cpu_count() or 1
    # at least this process's core was busy (less a margin for clock ticks), never over all
    assert 0.8 / cores <= meter.busy <= 1.0
    assert idle_ish.busy is None or 0.0 <= idle_ish.busy <= 1.0
    assert meter.seconds is not None
    assert meter.seconds >= 0.45  # this process's 0.5 s


def test_cpu_meter_counts_the_cpu_time_of_child_processes() -> None:
    # a Spark run's hosts work in the JVM's Python workers, descendants of the driver
    psutil = pytest.importorskip("psutil")
    burn = (
        "import sys, time\n"
        "end = time.process_time() + 0.5\n"
        "while time.process_time() < end:\n"
        "    pass\n"
        "sys.stdin.read()"  # alive until measured
    )
    meter = CpuMeter().__enter__()
    child = subprocess.Popen([sys.executable, "-c", burn], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while sum(psutil.Process(child.pid).cpu_times()[:2]) < 0.45:
            assert time.monotonic() < deadline, "the child burnt its 0.5 s of CPU"
            time.sleep(0.02)
        meter.__exit__(None, None, None)  # measured while the child still lives
    finally:
        child.communicate(b"")
    assert meter.seconds is not None
    assert meter.seconds >= 0.45
