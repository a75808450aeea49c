"""``absnb bench``: the paper's experiments on Spark, printed as tables, with the targets.

Runs :mod:`absnb.experiments.paper` (all of it, or ``only`` one experiment) on a fresh
``local[4]`` session while sampling the memory of the whole job (the driver's Python, the
JVM and its Python workers), and prints one table per experiment and a table of the
figures the targets are stated in: records per second with ABS every 1 s, ABS's cost
against no snapshots at 1 s, synchronous snapshots' cost at each interval, the median
alignment, failure to running again, and peak memory. Figures are from this one run:
compare the ratios, the absolute numbers depend on the machine and its load.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from absnb.experiments import paper
from absnb.experiments.report import print_table

if TYPE_CHECKING:
    import pandas as pd

    from absnb.runtime.spark import SparkRuntime

DEFAULT_SCALE = 10.0
"""The scale ``absnb bench`` runs at unless told otherwise (about a minute on 2 cores)."""


@dataclass
class BenchResult:
    """What :func:`run_bench` measured: one DataFrame per experiment run, peak memory."""

    scale: float
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    peak_memory: int = 0
    """Peak resident memory of the driver process tree (bytes); 0 where /proc is missing."""
    seconds: float = 0.0


def run_bench(
    *,
    scale: float = DEFAULT_SCALE,
    only: Sequence[str] = paper.EXPERIMENTS,
    runtime: SparkRuntime | None = None,
    progress: paper.ProgressFn | None = paper.print_progress,
    intervals: Sequence[float] = paper.FIGURE6_INTERVALS,
    repeats: int = 1,
) -> BenchResult:
    """Run the experiments named in ``only`` at ``scale``, Figures 6 and 7 ``repeats``
    times over (interleaved, so that a change of the machine's load hits every protocol);
    see the module docstring.

    ``runtime`` defaults to a new ``local[4]`` session checkpointing to a temporary
    directory (removed at the end).
    """
    from absnb.runtime.metrics import MemorySampler

    unknown = [name for name in only if name not in paper.EXPERIMENTS]
    if unknown:
        raise ValueError(
            f"unknown experiment(s) {unknown}: choose from {', '.join(paper.EXPERIMENTS)}"
        )
    began = time.monotonic()
    own = runtime is None
    rt = paper.scratch_runtime() if runtime is None else runtime
    result = BenchResult(scale)
    experiments: dict[str, Callable[[], pd.DataFrame]] = {
        "fig6": lambda: paper.figure6(
            rt, scale=scale, intervals=intervals, repeats=repeats, progress=progress
        ),
        "fig7": lambda: paper.figure7(rt, scale=scale, repeats=repeats, progress=progress),
        "alignment": lambda: paper.alignment(rt, scale=scale, progress=progress),
        "recovery": lambda: paper.recovery(rt, scale=scale, progress=progress),
    }
    try:
        with MemorySampler() as memory:
            paper.warm_up(rt)
            for name in paper.EXPERIMENTS:
                if name in only:
                    result.tables[name] = experiments[name]()
        result.peak_memory = memory.peak
    finally:
        if own:
            shutil.rmtree(rt.checkpoint_dir, ignore_errors=True)
    result.seconds = time.monotonic() - began
    return result


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
        if r.get("persisted_data"):
            value += f"  {int(r['persisted_data']):,} B channel state"
        rows.append((label(r), value))
    return rows


def targets(result: BenchResult) -> list[tuple[str, str]]:
    """The figures the targets are stated in, from what ``result`` holds."""
    rows: list[tuple[str, str]] = []
    fig6 = result.tables.get("fig6")
    if fig6 is not None:
        base = fig6[fig6["protocol"] == "none"]
        abs1 = fig6[(fig6["protocol"] == "abs") & (fig6["interval"] == 1.0)]
        if len(abs1):
            rows.append(
                (
                    "word count, ABS every 1 s, records/s",
                    f"{abs1['records_per_second'].median():,.0f} (target >= 1,000,000)",
                )
            )
            if len(base):
                cost = 1 - abs1["records_per_second"].median() / base["records_per_second"].median()
                rows.append(
                    ("ABS throughput cost vs no snapshots, 1 s", f"{cost:+.1%} (target <= 5%)")
                )
        sync = fig6[fig6["protocol"] == "synchronous"]
        for interval, part in sync.groupby("interval"):
            rows.append(
                (
                    f"synchronous every {interval:g} s, runtime vs none",
                    f"x{part['relative_runtime'].median():.2f} "
                    f"({int(part['checkpoints'].median())} checkpoints)",
                )
            )
    alignment = result.tables.get("alignment")
    if alignment is not None and len(alignment):
        ms = alignment["alignment_duration"].astype(float) * 1000
        rows.append(
            (
                "ABS alignment, median (max)",
                f"{ms.median():.1f} ms ({ms.max():.1f} ms) over {len(ms)} task snapshots "
                "(target median <= 100 ms)",
            )
        )
    recovery = result.tables.get("recovery")
    if recovery is not None and len(recovery):
        for r in recovery.to_dict("records"):
            t = r["recovery_time"]
            rows.append(
                (
                    f"failure ({r['kind']}) to running again",
                    ("n/a" if t is None or t != t else f"{t:.2f} s") + " (target <= 3 s)",
                )
            )
    if result.peak_memory:
        rows.append(
            (
                "peak memory (driver, JVM, Python workers)",
                f"{result.peak_memory / 2**20:,.0f} MiB (target <= 1,536 MiB)",
            )
        )
    return rows


def print_bench(result: BenchResult) -> None:
    """Print one table per experiment, then the targets."""
    t = result.tables
    if "fig6" in t:
        print(
            "\nFigure 6: runtime against the snapshot interval (word count, parallelism "
            f"{int(t['fig6']['parallelism'].iloc[0])}, scale {result.scale:g})"
        )
        print_table(
            run_rows(t["fig6"], lambda r: f"{r['protocol']} {_every(r['interval'])}"),
            ("run", "runtime, throughput, runtime vs none, checkpoints"),
        )
    if "fig7" in t:
        interval = t["fig7"]["interval"].dropna()
        every = f"every {interval.iloc[0]:g} s" if len(interval) else ""
        print(f"\nFigure 7: runtime against parallelism (snapshots {every})")
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
                    f"{r['recovery_time']:.2f} s (whole run {r['seconds']:.2f} s)",
                )
                for r in t["recovery"].to_dict("records")
            ]
            or [("no restart happened", "")]
        )
    print("\nTargets (figures from this run)")
    print_table(targets(result))
    print(f"\n{result.seconds:.0f} s in all")
