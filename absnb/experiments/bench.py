"""``absnb bench``: the paper's experiments on Spark, printed as tables, with the targets.

Runs :mod:`absnb.experiments.paper` on the paper's Figure 5 job (all of it, or ``only``
one experiment) on a fresh ``local[4]`` session while sampling the memory of the whole job
(the driver's Python, the JVM and its Python workers), and prints one table per experiment
and a table of the figures the targets are stated in: ABS's and synchronous snapshots'
overhead against no snapshots at each interval (the paper's shape: synchronous at least
twice ABS's at every interval of 1 s or less, ABS at most 10 % at 1 s), with the snapshot
size, write time and how long a checkpoint takes (a synchronous one halts the job that
long), the median alignment, failure to running again, and peak memory (proportional set
size, each page counted once across the processes that share it, with the summed RSS
beside it: :class:`~absnb.runtime.events.memory.MemorySampler`). Figures are from
this one run: compare the ratios, the absolute numbers depend on the machine and its load
(:func:`machine` says which). :func:`bench_json` is what ``absnb bench --json`` writes.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from absnb.experiments import paper, sessions
from absnb.experiments.report import print_table
from absnb.runtime.events.memory import PROPORTIONAL

if TYPE_CHECKING:
    import pandas as pd

    from absnb.runtime.spark import SparkRuntime

DEFAULT_SCALE = 8.0
"""The scale ``absnb bench`` runs at unless told otherwise: 3.2 M records over 2.1 M keys
per run (about 5 s on 2 cores, touching 1.5 M keys: snapshots of about 10 MiB, and a
checkpoint in every run at every interval of Figure 6). ``--scale 16`` doubles the state
and the runtime; ``--scale 1`` is a quick check (runs of half a second)."""
DEFAULT_MIN_PAUSE = 0.25
"""Seconds ``absnb bench`` lets pass after a completed checkpoint before the next periodic
one (Flink's ``minPauseBetweenCheckpoints``), for every protocol alike: Figure 6's shortest
interval. Without it, a synchronous checkpoint that takes longer than the interval (writes
to a slow remote store) is followed at once by the next, and the job stands halted from one
to the next."""
PEAK_MEMORY_TARGET = 1200 * 2**20
RECOVERY_TARGET = 0.5


def machine() -> str:
    """The machine the figures come from: system, CPUs, load average, Python."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{load:.1f} at the end, Python {platform.python_version()}"
    )


@dataclass
class BenchResult:
    """What :func:`run_bench` measured: one DataFrame per experiment run, peak memory."""

    scale: float
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    peak_memory: int = 0
    """Peak memory of the driver's process tree (bytes), counted as ``peak_method`` says;
    0 where psutil cannot read it."""
    peak_method: str = PROPORTIONAL
    """How ``peak_memory`` was counted (:attr:`~absnb.runtime.events.memory.MemorySampler.method`):
    ``proportional`` (each page once) or ``summed RSS`` (where PSS could not be read)."""
    peak_rss: int = 0
    """Peak of the tree's summed resident set sizes (bytes): shared pages counted once per
    process, as ``absnb bench`` reported its peak before it read proportional sizes."""
    peak_anon: int | None = None
    """Peak of the tree's proportional anonymous memory (bytes; ``Pss_Anon``: heaps and
    stacks, no mapped files), what a cgroup counts as anon; None where it was not read."""
    seconds: float = 0.0
    repeats: int = 1
    machine: str = ""
    master: str = "local[4]"
    """The Spark master the runs went to: with a local one the peak memory is the whole
    job's; with a cluster's, only the driver's (the executors run elsewhere)."""
    storage_latency: float = 0.0
    """Seconds each durable checkpoint write waited (0: the storage's own speed)."""
    min_pause: float = DEFAULT_MIN_PAUSE
    """Seconds between a completed checkpoint and the next periodic trigger."""


def run_bench(
    *,
    scale: float = DEFAULT_SCALE,
    only: Sequence[str] = paper.EXPERIMENTS,
    runtime: SparkRuntime | None = None,
    progress: paper.ProgressFn | None = paper.print_progress,
    intervals: Sequence[float] = paper.FIGURE6_INTERVALS,
    repeats: int = 1,
    master: str = "local[4]",
    storage_latency: float = 0.0,
    min_pause: float = DEFAULT_MIN_PAUSE,
) -> BenchResult:
    """Run the experiments named in ``only`` at ``scale``, Figures 6 and 7 ``repeats``
    times over (interleaved, so that a change of the machine's load hits every protocol);
    see the module docstring.

    ``runtime`` defaults to a new session on ``master`` (``local[4]``; a ``spark://``
    URL runs the same experiments on a standalone cluster) checkpointing to a temporary
    directory (removed at the end), every durable write of which waits ``storage_latency``
    seconds: a model of a remote store (the paper wrote its snapshots to HDFS). Figures 6
    and 7 wait ``min_pause`` seconds after each completed checkpoint before the next.
    """
    from absnb.runtime.events.memory import MemorySampler

    unknown = [name for name in only if name not in paper.EXPERIMENTS]
    if unknown:
        raise ValueError(
            f"unknown experiment(s) {unknown}: choose from {', '.join(paper.EXPERIMENTS)}"
        )
    began = time.monotonic()
    own = runtime is None
    if runtime is None:
        rt = sessions.scratch_runtime(master=master, storage_latency=storage_latency)
    else:
        rt = runtime
    result = BenchResult(
        scale,
        repeats=repeats,
        master=str(rt.spark.sparkContext.master),  # a live context's master URL
        storage_latency=rt.storage.write_latency,
        min_pause=min_pause,
    )
    experiments: dict[str, Callable[[], pd.DataFrame]] = {
        "fig6": lambda: paper.figure6(
            rt,
            scale=scale,
            intervals=intervals,
            repeats=repeats,
            progress=progress,
            min_pause=min_pause,
        ),
        "fig7": lambda: paper.figure7(
            rt,
            scale=scale,
            repeats=repeats,
            progress=progress,
            parallelism=[p for p in paper.FIGURE7_PARALLELISM if p <= rt.slots()],
            min_pause=min_pause,
        ),
        "alignment": lambda: paper.alignment(rt, scale=scale, progress=progress),
        "recovery": lambda: paper.recovery(rt, scale=scale, progress=progress),
    }
    try:
        with MemorySampler() as memory:
            # as wide as the runs to come: a Python worker started and kept costs memory
            widest = max(paper.FIGURE7_PARALLELISM) if "fig7" in only else 2
            paper.warm_up(rt, min(rt.slots(), widest))
            for name in paper.EXPERIMENTS:
                if name in only:
                    result.tables[name] = experiments[name]()
        result.peak_memory, result.peak_method = memory.peak, memory.method
        result.peak_rss, result.peak_anon = memory.peak_rss, memory.peak_pss_anon
    finally:
        if own:
            shutil.rmtree(rt.checkpoint_dir, ignore_errors=True)
    result.seconds = time.monotonic() - began
    result.machine = machine()
    return result


def bench_json(result: BenchResult) -> str:
    """``result`` as JSON for scripts: the machine, scale, repeats, peak memory, the target
    figures, and every experiment's rows (one per run)."""
    tables = {name: json.loads(df.to_json(orient="records")) for name, df in result.tables.items()}
    return json.dumps(
        {
            "machine": result.machine,
            "scale": result.scale,
            "repeats": result.repeats,
            "storage_latency": result.storage_latency,
            "min_pause": result.min_pause,
            "seconds": result.seconds,
            "peak_memory": result.peak_memory,
            "peak_memory_method": result.peak_method,
            "peak_memory_rss": result.peak_rss,
            "peak_memory_anon": result.peak_anon,
            "targets": dict(targets(result)),
            "tables": tables,
        },
        indent=1,
    )


# -- tables ---------------------------------------------------------------------------------
def _every(interval: Any) -> str:
    return "no snapshots" if interval is None or interval != interval else f"every {interval:g} s"


def run_rows(df: pd.DataFrame, label: Callable[[dict[str, Any]], str]) -> list[tuple[str, str]]:
    """One printed row per protocol, interval and parallelism (medians over repeats):
    runtime, throughput, relative runtime, checkpoints."""
    rows = []
    for r in paper.medians(df).to_dict("records"):
        value = (
            f"{r['seconds']:6.2f} s  {r['records_per_second']:>9,.0f} records/s  "
            f"x{r['relative_runtime']:.2f}  {r['checkpoints']:>5g} checkpoints"
        )
        if r["runs"] > 1:
            value += f"  (median of {r['runs']})"
        if r.get("state_size") == r.get("state_size") and r.get("state_size"):
            value += (
                f"  snapshot {r['state_size'] / 2**20:.1f} MiB, written in "
                f"{r['write_seconds']:.2f} s, checkpoint {r['checkpoint_seconds']:.2f} s"
            )
        if r.get("persisted_data"):
            value += f"  {int(r['persisted_data']):,} B channel state"
        if r.get("cpu_busy") == r.get("cpu_busy") and r.get("cpu_busy") is not None:
            value += f"  CPUs {r['cpu_busy']:.0%} busy"
        if r.get("cpu_seconds") == r.get("cpu_seconds") and r.get("cpu_seconds") is not None:
            value += f"  {r['cpu_seconds']:.2f} s of CPU"
        if r.get("idle_share") == r.get("idle_share") and r.get("idle_share") is not None:
            value += f", hosts idle {r['idle_share']:.0%}"
        rows.append((label(r), value))
    return rows


def overheads(fig6: pd.DataFrame) -> pd.DataFrame:
    """Per protocol and interval: the median runtime over the baseline's minus 1 (the
    overhead), the same of CPU time (``cpu_overhead``, where measured: the extra work,
    which the machine's load moves far less than the wall clock), the runs, and the
    median checkpoint duration, alignment, CPU share and checkpoints completed."""
    measures = [
        "relative_runtime",
        "relative_cpu",
        "checkpoints",
        "checkpoint_seconds",
        "alignment_median",
        "cpu_busy",
    ]
    present = [m for m in measures if m in fig6.columns]
    # A measure no run had (no checkpoint completed: every value None) is NaN, not None.
    snap = fig6[fig6["protocol"] != "none"].astype(dict.fromkeys(present, float))
    grouped = snap.groupby(["protocol", "interval"], sort=False)
    out = grouped[present].median()
    out["overhead"] = out["relative_runtime"] - 1
    if "relative_cpu" in out:
        out["cpu_overhead"] = out["relative_cpu"] - 1
    out["runs"] = grouped.size()
    return out.reset_index()


def shape(fig6: pd.DataFrame) -> list[tuple[str, str]]:
    """The paper's shape, checked at every interval of 1 s or less: synchronous overhead
    at least twice ABS's, and ABS at most 10 % at 1 s; each with the measured reason
    (synchronous halt = checkpoint duration, ABS alignment, and how busy the CPUs were
    with no snapshots and with synchronous halts: a halt costs runtime only in so far as it
    leaves CPUs idle)."""
    o = overheads(fig6).set_index(["protocol", "interval"])
    base = fig6.loc[fig6["protocol"] == "none", "cpu_busy"] if "cpu_busy" in fig6 else None
    base_busy = base.dropna().median() if base is not None and base.notna().any() else None
    rows = []
    for interval in sorted({i for _, i in o.index}):
        if interval > 1.0 or ("abs", interval) not in o.index:
            continue
        a = o.loc[("abs", interval)]
        line = f"ABS {a['overhead']:+.0%}{_cpu(a)}"
        idle = [p for p in ("abs", "synchronous") if _no_checkpoint(o, p, interval)]
        if idle:
            rows.append((f"every {interval:g} s", f"{line}; {_unmeasured(idle)}"))
            continue
        if ("synchronous", interval) in o.index:
            sy = o.loc[("synchronous", interval)]
            if a["overhead"] > 0 and sy["overhead"] > 0:
                ratio = f"{sy['overhead'] / a['overhead']:.1f}x"
                held = "holds" if sy["overhead"] >= 2 * a["overhead"] else "does NOT hold"
            elif a["overhead"] > 0:  # ABS measurably slower, synchronous not
                ratio, held = "synchronous overhead not measurable", "does NOT hold"
            else:  # no measurable ABS overhead: the ratio means nothing (noise)
                ratio = "ABS overhead not measurable"
                held = "n/a"
            line += (
                f", synchronous {sy['overhead']:+.0%}{_cpu(sy)} ({ratio}, target >= 2x: {held}); "
                f"synchronous halt {sy['checkpoint_seconds']:.2f} s a checkpoint, ABS "
                f"alignment {1000 * (a['alignment_median'] or 0):.0f} ms median"
            )
            sy_busy = sy.get("cpu_busy")
            if base_busy is not None and sy_busy is not None and sy_busy == sy_busy:
                line += (
                    f"; CPUs {base_busy:.0%} busy without snapshots, {sy_busy:.0%} with "
                    "synchronous halts"
                )
        if interval == 1.0:
            held = "holds" if a["overhead"] <= 0.10 else "does NOT hold"
            line += f"; ABS at 1 s target <= +10 %: {held}"
        rows.append((f"every {interval:g} s", line))
    return rows


def _no_checkpoint(o: pd.DataFrame, protocol: str, interval: float) -> bool:
    """Whether ``protocol``'s runs at ``interval`` (median) completed no checkpoint."""
    if (protocol, interval) not in o.index or "checkpoints" not in o.columns:
        return False
    n = o.loc[(protocol, interval), "checkpoints"]
    return bool(n == n and n < 1)


def _unmeasured(protocols: list[str]) -> str:
    names = " and ".join("ABS" if p == "abs" else p for p in protocols)
    return (
        f"no checkpoint completed in the {names} runs (they ended before one could): "
        "nothing to compare at this interval; run longer jobs (a larger --scale)"
    )


def _cpu(row: Any) -> str:
    """`` (CPU time +x %)`` of an :func:`overheads` row, or nothing where not measured."""
    cpu = row.get("cpu_overhead")
    return "" if cpu is None or cpu != cpu else f" (CPU time {cpu:+.0%})"


def targets(result: BenchResult) -> list[tuple[str, str]]:
    """The figures the targets are stated in, from what ``result`` holds."""
    rows: list[tuple[str, str]] = []
    fig6 = result.tables.get("fig6")
    if fig6 is not None:
        base = fig6[fig6["protocol"] == "none"]
        if len(base):
            rows.append(
                (
                    "Figure 5 job, no snapshots, records/s",
                    f"{base['records_per_second'].median():,.0f}",
                )
            )
            rows += [(f"shape {k}", v) for k, v in shape(fig6)]
        sizes = fig6["state_size"].dropna()
        if len(sizes):
            rows.append(
                (
                    "snapshot size, median (max)",
                    f"{sizes.median() / 2**20:.1f} MiB ({sizes.max() / 2**20:.1f} MiB)",
                )
            )
    alignment = result.tables.get("alignment")
    if alignment is not None and len(alignment):
        ms = alignment["alignment_duration"].astype(float) * 1000
        rows.append(
            (
                "ABS alignment, median (max)",
                f"{ms.median():.1f} ms ({ms.max():.1f} ms) over {len(ms)} task snapshots",
            )
        )
    recovery = result.tables.get("recovery")
    if recovery is not None and len(recovery):
        for r in recovery.to_dict("records"):
            t = r["recovery_time"]
            rows.append(
                (
                    f"failure ({r['kind']}) to running again",
                    ("n/a" if t is None or t != t else f"{t:.2f} s")
                    + f" (target <= {RECOVERY_TARGET:g} s)",
                )
            )
    if result.peak_memory:
        rows.append(
            (
                "peak memory (driver, JVM, Python workers)"
                if result.master.startswith("local")
                else "peak memory (driver and its JVM; the cluster's executors not counted)",
                f"{_peak(result)} (target <= {PEAK_MEMORY_TARGET / 2**20:,.0f} MiB)",
            )
        )
    return rows


def _peak(result: BenchResult) -> str:
    """The peak memory and how it was counted, with the summed RSS beside a proportional
    peak (the figure earlier versions reported)."""
    peak, local = f"{result.peak_memory / 2**20:,.0f} MiB", result.master.startswith("local")
    who = "the driver, the JVM and the Python workers" if local else "the driver and its JVM"
    if result.peak_method == PROPORTIONAL:
        anon = (
            "" if result.peak_anon is None else f"anonymous {result.peak_anon / 2**20:,.0f} MiB; "
        )
        return (
            f"{peak} proportional: each page counted once across {who}; "
            f"{anon}summed RSS {result.peak_rss / 2**20:,.0f} MiB"
        )
    return (
        f"{peak} summed RSS: pages shared between processes counted once per process "
        "(no /proc/PID/smaps_rollup to read proportional sizes from here)"
    )


def _breakdown(r: dict[str, Any]) -> str:
    """Where the time from failure to running goes: detection (the coordinator losing a
    host to the driver seeing the stage fail), then restart and restore (until every host
    of the next attempt, restored, has registered; in brackets the slowest host's restore:
    reading the checkpoint and restoring its tasks). Replay is not measured apart: it is
    part of the rest of the run."""
    seen, failed, running = (
        r.get("failure_timestamp"),
        r.get("stage_failed_timestamp"),
        r.get("running_timestamp"),
    )
    if seen is None or failed is None or running is None:
        return "breakdown n/a"
    detect, restart = failed - seen, running - failed
    line = f"detection {detect:.2f} s, restart and restore {restart:.2f} s"
    restore = r.get("restore_seconds")
    if restore is not None and restore == restore:
        line += f" (restore {restore:.3f} s)"
    return line


def print_bench(result: BenchResult) -> None:
    """Print one table per experiment, then the targets."""
    t = result.tables
    if "fig6" in t:
        print(
            "\nFigure 6: runtime against the snapshot interval (the Figure 5 job, parallelism "
            f"{int(t['fig6']['parallelism'].iloc[0])}, scale {result.scale:g}, "
            f"{result.repeats} repetition(s), interleaved, min pause {result.min_pause:g} s "
            "between checkpoints, "
            + (
                f"every checkpoint write waiting {result.storage_latency:g} s: a remote store's "
                "latency, modelled)"
                if result.storage_latency
                else "checkpoints to local disk)"
            )
        )
        print_table(
            run_rows(t["fig6"], lambda r: f"{r['protocol']} {_every(r['interval'])}"),
            ("run", "runtime, throughput, runtime vs none, checkpoints"),
        )
    if "fig7" in t:
        interval = t["fig7"]["interval"].dropna()
        every = f"every {interval.iloc[0]:g} s" if len(interval) else ""
        print(
            f"\nFigure 7: runtime against parallelism (snapshots {every}; on a machine with "
            "fewer cores than tasks the runtime cannot fall)"
        )
        print_table(
            run_rows(t["fig7"], lambda r: f"parallelism {r['parallelism']}: {r['protocol']}"),
            ("run", "runtime, throughput, runtime vs none, checkpoints"),
        )
    if "alignment" in t:
        a = t["alignment"]
        ms = a["alignment_duration"].astype(float) * 1000
        print("\nABS alignment durations (tasks with more than one input)")
        quantiles = [(f"{q:.0%}", f"{ms.quantile(q):.1f} ms") for q in (0.0, 0.5, 0.9, 1.0)]
        print_table([("task snapshots", str(len(a))), *quantiles] if len(a) else [("none", "")])
    if "recovery" in t:
        print("\nRecovery: failure to running again")
        print_table(
            [
                (
                    f"{r['kind']} (restored checkpoint {r['restored_checkpoint']})",
                    f"{r['recovery_time']:.2f} s: {_breakdown(r)} (whole run {r['seconds']:.2f} s)",
                )
                for r in t["recovery"].to_dict("records")
            ]
            or [("no restart happened", "")]
        )
    print("\nTargets (figures from this run)")
    print_table(targets(result))
    print(f"\n{result.seconds:.0f} s in all on {result.machine}")
