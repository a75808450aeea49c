"""The paper's experiments at a tiny scale: the tables have the runs and the properties
they must have, whatever the timings; ``absnb bench`` end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from absnb.cli import main
from absnb.experiments import paper
from absnb.experiments.bench import BenchResult, overheads, shape, targets
from absnb.runtime.events.memory import PROPORTIONAL, SUMMED_RSS

TINY = 0.01
"""The Figure 5 job generating 4,000 records (and the text sample read once: 12,086 words)."""
WORDS = 12_086
RECORDS = 4_000


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.skip("Java is not installed (PySpark needs it)")
    from absnb.runtime.spark import SparkRuntime, default_session

    # getOrCreate: the session of tests/runtime when it is running, else a new one
    spark = default_session("local[2]")
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


def test_text_job_deals_the_sample_to_the_sources() -> None:
    job = paper.text_job(TINY, 3)
    parts = [job.inputs[t] for t in job.graph.tasks_of("source")]
    assert len(parts) == 3
    assert sum(len(line.split()) for part in parts for line in part) == WORDS
    doubled = paper.text_lines(2 / paper.BASE_REPEAT, 1)
    assert sum(len(line.split()) for part in doubled for line in part) == 2 * WORDS
    with pytest.raises(ValueError, match="scale"):
        paper.text_lines(0)


def test_paper_job_is_the_figure5_job_at_scale() -> None:
    job = paper.paper_job(TINY, 3)
    assert job.builder == "paper_topology"
    assert job.params["records"] == RECORDS
    assert job.params["keys"] == round(paper.BASE_KEYS * TINY)
    assert sum(len(log) for log in job.inputs.values()) == RECORDS
    assert all(op.parallelism == 3 for op in job.graph.operators.values())
    with pytest.raises(ValueError, match="scale"):
        paper.paper_job(0)


def test_figure6_has_every_run_and_only_chandy_lamport_records_channels(runtime) -> None:
    seen: list[paper.Progress] = []
    df = paper.figure6(
        runtime,
        scale=TINY,
        intervals=(0.02,),
        parallelism=2,
        progress=seen.append,
    )
    assert [(p.done, p.total) for p in seen] == [(i, 4) for i in range(1, 5)]
    runs = list(zip(df["protocol"], df["interval"].fillna(0), strict=True))
    assert runs == [("none", 0), ("abs", 0.02), ("synchronous", 0.02), ("chandy-lamport", 0.02)]
    assert (df["records"] == RECORDS).all()  # every run processed the whole input once
    assert (df["restarts"] == 0).all()
    assert df.loc[df["protocol"] == "none", "relative_runtime"].tolist() == [1.0]
    assert (df.loc[df["protocol"] == "none", "checkpoints"] == 0).all()
    assert (df.loc[df["protocol"].isin(["abs", "synchronous"]), "persisted_data"] == 0).all()
    assert (df["persisted_data"] >= 0).all()
    # every run measured the machine's CPUs: a share, and some CPU was busy running it
    assert df["cpu_busy"].between(0.0, 1.0).all()
    assert (df["cpu_busy"] > 0).all()
    # and the CPU time each run took (the driver's, the JVM's and the workers'): a run's
    # hosts ran on the workers, which a meter of the driver alone would not have seen
    assert (df["cpu_seconds"] > 0).all()
    assert df.loc[df["protocol"] == "none", "relative_cpu"].tolist() == [1.0]
    assert (df["relative_cpu"] > 0).all()
    # the hosts' time waiting for input with nothing to do: a share of their time
    assert df["idle_share"].between(0.0, 1.0).all()


def test_figure7_runs_each_parallelism_against_its_baseline(runtime) -> None:
    df = paper.figure7(runtime, scale=TINY, parallelism=(1, 2), interval=0.05, protocols=("abs",))
    assert list(zip(df["parallelism"], df["protocol"], strict=True)) == [
        (1, "none"),
        (1, "abs"),
        (2, "none"),
        (2, "abs"),
    ]
    assert (df.loc[df["protocol"] == "none", "relative_runtime"] == 1.0).all()
    assert (df["records"] == RECORDS).all()


def test_an_experiment_wider_than_the_cluster_says_what_to_do(runtime) -> None:
    with pytest.raises(ValueError, match=r"local\[8\]"):
        paper.figure7(runtime, scale=TINY, parallelism=(8,))


def test_alignment_rows_are_the_snapshots_of_tasks_behind_a_shuffle(runtime) -> None:
    # 200,000 records: the sources are still emitting when the first barriers come (10 ms)
    df = paper.alignment(runtime, scale=0.5, interval=0.01, parallelism=2)
    assert len(df) >= 2
    assert set(df["operator"]) <= {"sum_per_key", "count_per_group", "sink"}
    assert (df["alignment_duration"] >= 0).all()
    assert (df["end_to_end_duration"] >= df["alignment_duration"]).all()


def test_recovery_measures_failure_to_running_again(runtime) -> None:
    df = paper.recovery(runtime, scale=TINY, kinds=("raise",), parallelism=2, interval=0.05)
    assert list(df["kind"]) == ["raise"]
    row = df.iloc[0]
    assert "injected failure" in row["error"]
    assert 0 <= row["failure_timestamp"] <= row["running_timestamp"] <= row["seconds"]
    assert row["recovery_time"] >= 0
    with pytest.raises(ValueError, match="raise"):
        paper.recovery(runtime, scale=TINY, kinds=("explode",), parallelism=2)


def test_targets_table_reads_the_experiments() -> None:
    import pandas as pd

    nan = float("nan")
    fig6 = pd.DataFrame(
        {
            "protocol": ["none", "abs", "synchronous", "abs", "synchronous"],
            "interval": [None, 1.0, 1.0, 0.5, 0.5],
            "records_per_second": [100.0, 97.0, 50.0, 90.0, 80.0],
            "relative_runtime": [1.0, 1.04, 2.0, 1.10, 1.15],
            "checkpoints": [0, 3, 3, 6, 6],
            "state_size": [nan, 2**20, 3 * 2**20, 2**20, 2**20],
            "checkpoint_seconds": [nan, 0.2, 0.3, 0.2, 0.25],
            "alignment_median": [nan, 0.01, 0.02, 0.01, 0.02],
            "cpu_busy": [0.95, 0.94, 0.5, 0.95, 0.93],
        }
    )
    rows = dict(targets(BenchResult(1.0, {"fig6": fig6}, peak_memory=3 << 29, peak_rss=2 << 30)))
    assert rows["Figure 5 job, no snapshots, records/s"] == "100"
    one = rows["shape every 1 s"]
    assert one.startswith("ABS +4%, synchronous +100% (25.0x, target >= 2x: holds)")
    assert "ABS at 1 s target <= +10 %: holds" in one
    assert (
        "(1.5x, target >= 2x: does NOT hold); synchronous halt 0.25 s" in rows["shape every 0.5 s"]
    )
    # the measured reason: did the synchronous halts leave the CPUs idle?
    assert rows["shape every 0.5 s"].endswith(
        "CPUs 95% busy without snapshots, 93% with synchronous halts"
    )
    assert "CPUs 95% busy without snapshots, 50% with synchronous halts" in one
    assert rows["snapshot size, median (max)"] == "1.0 MiB (3.0 MiB)"
    assert rows["peak memory (driver, JVM, Python workers)"] == (
        "1,536 MiB proportional: each page counted once across the driver, the JVM and the"
        " Python workers; summed RSS 2,048 MiB (target <= 1,200 MiB)"
    )
    on_a_cluster = BenchResult(
        1.0, {}, peak_memory=3 << 29, peak_rss=2 << 30, peak_anon=1 << 30, master="spark://h:7077"
    )
    assert dict(targets(on_a_cluster)) == {
        "peak memory (driver and its JVM; the cluster's executors not counted)": (
            "1,536 MiB proportional: each page counted once across the driver and its JVM;"
            " anonymous 1,024 MiB; summed RSS 2,048 MiB (target <= 1,200 MiB)"
        )
    }
    # where smaps_rollup cannot be read, the peak is summed RSS and says so
    without = BenchResult(1.0, {}, peak_memory=2 << 30, peak_rss=2 << 30, peak_method=SUMMED_RSS)
    assert dict(targets(without))["peak memory (driver, JVM, Python workers)"] == (
        "2,048 MiB summed RSS: pages shared between processes counted once per process"
        " (no /proc/PID/smaps_rollup to read proportional sizes from here)"
        " (target <= 1,200 MiB)"
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["bench", "--scale", "0"], "not a number > 0"),
        (["bench", "--only", "fig9"], "invalid choice"),
        (["bench", "--storage-latency", "-0.1"], "not a number >= 0"),
    ],
)
def test_bench_bad_input_exits_2(capsys: pytest.CaptureFixture[str], argv, says) -> None:
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_bench_command_prints_tables_and_peak_memory(
    runtime, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``absnb bench`` in this process, on the session :func:`runtime` started (its quiet
    start in a fresh process is tests/test_cli_quiet.py's)."""
    monkeypatch.chdir(tmp_path)
    argv = ["bench", "--scale", str(TINY), "--only", "alignment", "--json", "out.json",
            "--storage-latency", "0.01", "--min-pause", "0.1"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "[alignment 1/1] abs every 0.25 s, parallelism 2" in out
    assert "ABS alignment durations" in out
    assert "peak memory (driver, JVM, Python workers)" in out
    assert "Figure 6" not in out  # --only
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["scale"] == TINY
    assert data["repeats"] == 1
    assert data["storage_latency"] == 0.01  # every checkpoint write waited 10 ms
    assert data["min_pause"] == 0.1
    assert "CPUs" in data["machine"]
    assert data["peak_memory"] > 0
    assert data["peak_memory_method"] in {PROPORTIONAL, SUMMED_RSS}
    assert data["peak_memory"] <= data["peak_memory_rss"]  # PSS: shared pages counted once
    if data["peak_memory_anon"] is not None:  # the anonymous part of the proportional peak
        assert 0 < data["peak_memory_anon"] <= data["peak_memory"]
    assert isinstance(data["tables"]["alignment"], list)  # a run this short may not align
    assert set(data["targets"]) >= {"peak memory (driver, JVM, Python workers)"}


def test_medians_fold_the_repeats_in_run_order() -> None:
    import pandas as pd

    nan = float("nan")
    df = pd.DataFrame(
        {
            "protocol": ["none", "abs", "none", "abs", "none", "abs"],
            "interval": [nan, 0.5, nan, 0.5, nan, 0.5],
            "parallelism": [4] * 6,
            "seconds": [1.0, 2.0, 3.0, 4.0, 2.0, 9.0],
            "repeat": [0, 0, 1, 1, 2, 2],
        }
    )
    m = paper.medians(df)
    assert list(m["protocol"]) == ["none", "abs"]
    assert list(m["seconds"]) == [2.0, 4.0]
    assert list(m["runs"]) == [3, 3]


def test_readable_table_is_the_medians_in_round_units() -> None:
    import pandas as pd

    nan = float("nan")
    runs = pd.DataFrame(
        {
            "protocol": ["none", "abs", "abs"],
            "interval": [None, 0.5, 0.5],
            "parallelism": [2, 2, 2],
            "repeat": [0, 0, 1],
            "seconds": [2.0, 2.5, 2.7],
            "relative_runtime": [1.0, 1.25, 1.35],
            "checkpoints": [0, 4, 5],
            "state_size": [nan, 5 * 2**20, 6 * 2**20],
            "checkpoint_seconds": [nan, 0.0612, 0.0655],
            "alignment_median": [nan, 0.004, 0.006],
            "persisted_data": [0, 0, 1500],
            "cpu_busy": [0.95, 0.9, 0.92],
        }
    )
    table = paper.readable(runs)
    assert list(table.columns) == list(paper.READABLE.values())
    abs_row = table.loc["abs"].to_dict()
    assert abs_row == {
        "interval s": 0.5,
        "seconds": 2.6,
        "vs none": 1.3,
        "checkpoints": 4.5,
        "snapshot MiB": 5.5,
        "checkpoint s": 0.063,
        "alignment ms": 5.0,
        "channel kB": 0.8,
        "CPUs busy %": 91.0,
    }
    assert table.loc["none", "CPUs busy %"] == 95.0


def test_recovery_breakdown_names_detection_restart_and_the_restore_within_it() -> None:
    from absnb.experiments.bench import _breakdown

    row = {
        "failure_timestamp": 1.0,
        "stage_failed_timestamp": 1.2,
        "running_timestamp": 1.5,
        "restore_seconds": 0.012,
    }
    assert _breakdown(row) == "detection 0.20 s, restart and restore 0.30 s (restore 0.012 s)"
    assert _breakdown({**row, "restore_seconds": None}) == (
        "detection 0.20 s, restart and restore 0.30 s"
    )
    assert _breakdown({**row, "running_timestamp": None}) == "breakdown n/a"


def test_overheads_are_read_from_cpu_time_too() -> None:
    rows = [
        {"protocol": p, "interval": i, "parallelism": 2, "seconds": w, "cpu_seconds": c}
        for p, i, w, c in [
            ("none", None, 10.0, 20.0),
            ("none", None, 13.0, 21.0),  # wall times spread, CPU times far less
            ("abs", 1.0, 12.0, 22.0),
            ("synchronous", 1.0, 15.0, 23.0),
        ]
    ]
    df = paper._relative(rows)
    assert df["relative_cpu"].tolist() == pytest.approx(
        [20 / 20.5, 21 / 20.5, 22 / 20.5, 23 / 20.5]
    )
    assert df["relative_runtime"].tolist() == pytest.approx(
        [10 / 11.5, 13 / 11.5, 12 / 11.5, 15 / 11.5]
    )
    o = overheads(df).set_index("protocol")
    assert o.loc["abs", "cpu_overhead"] == pytest.approx(22 / 20.5 - 1)
    assert o.loc["synchronous", "overhead"] == pytest.approx(15 / 11.5 - 1)
    df["checkpoint_seconds"] = df["alignment_median"] = 0.1
    one = dict(shape(df))["every 1 s"]
    assert one.startswith("ABS +4% (CPU time +7%), synchronous +30% (CPU time +12%) (")
    # not measured (no psutil): the relative column is NaN, and the lines say nothing of it
    unmeasured = paper._relative([{**r, "cpu_seconds": None} for r in rows])
    assert unmeasured["relative_cpu"].isna().all()
    assert (
        "CPU time"
        not in dict(shape(unmeasured.assign(checkpoint_seconds=0.1, alignment_median=0.1)))[
            "every 1 s"
        ]
    )


def test_runs_that_completed_no_checkpoint_are_said_so_not_compared() -> None:
    # Runs shorter than the interval complete no checkpoint: checkpoint_seconds is None.
    def runs(plan: list[tuple[str, float | None, float, int, float | None]]) -> Any:
        return paper._relative(
            [
                {
                    "protocol": p,
                    "interval": i,
                    "parallelism": 2,
                    "seconds": w,
                    "cpu_seconds": None,
                    "checkpoints": n,
                    "checkpoint_seconds": d,
                    "alignment_median": d,
                }
                for p, i, w, n, d in plan
            ]
        )

    short = [("none", None, 1.0, 0, None), ("abs", 1.0, 1.1, 0, None)]
    short += [("synchronous", 1.0, 1.2, 0, None)]
    # None in every row (a column of objects) once broke the table and the verdicts.
    o = overheads(runs(short))
    assert o["checkpoint_seconds"].dtype == float
    assert o["checkpoint_seconds"].isna().all()
    none_done = "no checkpoint completed in the ABS and synchronous runs"
    assert none_done in dict(shape(runs(short)))["every 1 s"]
    verdicts = dict(
        shape(runs([*short, ("abs", 0.5, 1.1, 1, 0.05), ("synchronous", 0.5, 1.3, 1, 0.06)]))
    )
    assert none_done in verdicts["every 1 s"]
    assert "target >= 2x" not in verdicts["every 1 s"]
    assert "no checkpoint" not in verdicts["every 0.5 s"]
    assert "synchronous +30%" in verdicts["every 0.5 s"]
    assert "target >= 2x" in verdicts["every 0.5 s"]
