"""The paper's evaluation at laptop scale, on the Spark runtime: results as DataFrames.

Carbone et al. 2015, section 6, compare no snapshots (the baseline), ABS and synchronous
snapshots on the job of their Figure 5 (:mod:`absnb.jobs.paper_topology`: 6 operators,
3 full shuffles, per-key aggregates, generated records): runtime against the snapshot
interval (Figure 6) and against the number of nodes at a fixed interval (Figure 7). Here
the same comparison runs on PySpark (``local[2]`` by default), with Chandy-Lamport added to
Figure 6 to show what it records in flight, plus the distribution of alignment durations
and the time from a failure to running again. :data:`~absnb.jobs.paper_topology.PAPER_FIGURE6` holds
the paper's own values (read off its Figure 6) to draw beside the measured ones.
``python3 -m absnb bench`` prints these tables; notebook 06 draws them (:mod:`absnb.views.charts`).

Every experiment takes a :class:`~absnb.runtime.SparkRuntime`, a ``scale`` (1 runs
in seconds per run on 2 cores; the input grows linearly with it) and a ``progress``
callback called once per run with a :class:`Progress` (:func:`print_progress` prints a
line). Spark timings vary from run to run and with the machine's load: compare ratios
within one call, not absolute numbers across machines.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from absnb import datasets
from absnb.core.columns import Columns
from absnb.jobs import Job, word_count
from absnb.jobs.paper_topology import PAPER_BASELINE_SECONDS as PAPER_BASELINE_SECONDS
from absnb.jobs.paper_topology import PAPER_FIGURE6 as PAPER_FIGURE6
from absnb.jobs.paper_topology import paper_topology
from absnb.operators.base import Operator
from absnb.operators.columnar import group
from absnb.runtime.events.cpu import CpuMeter
from absnb.runtime.events.memory import release_freed

if TYPE_CHECKING:
    import pandas as pd

    from absnb.runtime.spark import SparkRuntime
    from absnb.runtime.spark.result import SparkRun

BASE_REPEAT = 100
"""How many times the ``large`` text sample (12,086 words) is read at scale 1."""

BASE_RECORDS = 400_000
"""Records the Figure 5 job generates at scale 1 (the paper: 10^9 on 10 nodes)."""
BASE_KEYS = 2**18
"""The key space of its per-key totals at scale 1 (grows with the scale, so that the state
grows with the run as in the paper: at scale 8, 3.2 M records over 2 M keys touch 1.6 M)."""

FIGURE6_PROTOCOLS = ("abs", "synchronous", "chandy-lamport")
FIGURE6_INTERVALS = (0.25, 0.5, 1.0, 2.0)
"""The paper's 0.5-10 s against a 260 s run, scaled to a run of tens of seconds."""
FIGURE7_PROTOCOLS = ("none", "abs", "synchronous")
FIGURE7_PARALLELISM = (1, 2, 4)
FIGURE7_INTERVAL = 1.0

RUN_COLUMNS = (
    "protocol",
    "interval",
    "parallelism",
    "seconds",
    "records",
    "records_per_second",
    "checkpoints",
    "alignment_median",
    "alignment_max",
    "persisted_data",
    "restarts",
    "state_size",
    "write_seconds",
    "checkpoint_seconds",
    "cpu_busy",
    "cpu_seconds",
    "idle_share",
)
"""The columns every experiment's rows start with (one row per run)."""


@dataclass(frozen=True)
class Progress:
    """One finished run of an experiment: the ``done``-th of ``total``, and what it was."""

    experiment: str
    done: int
    total: int
    message: str

    def __str__(self) -> str:
        return f"[{self.experiment} {self.done}/{self.total}] {self.message}"


ProgressFn = Callable[[Progress], None]
JobFn = Callable[[float, int], Job]
"""Builds an experiment's job from ``(scale, parallelism)``."""


def print_progress(p: Progress) -> None:
    """The default progress callback: one printed line per run."""
    print(p, flush=True)


def _quiet(p: Progress) -> None:
    pass


# -- input and one run ----------------------------------------------------------------------
def text_lines(scale: float = 1.0, parallelism: int = 4) -> list[list[str]]:
    """The word count input at ``scale``: the ``large`` text sample read
    ``BASE_REPEAT * scale`` times (at least once), dealt line by line to ``parallelism``
    sources."""
    if scale <= 0:
        raise ValueError(f"scale must be > 0, not {scale}")
    if parallelism < 1:
        raise ValueError(f"parallelism must be >= 1, not {parallelism}")
    lines = [line for part in datasets.text_partitions("large") for line in part]
    lines = lines * max(1, round(BASE_REPEAT * scale))
    return [lines[i::parallelism] for i in range(parallelism)]


class FinalCountSink(Operator[dict[str, int]]):
    """A word count sink that keeps the latest count of every word (at the end: the final
    counts). Its state grows with the vocabulary, not with the output, as a sink writing to
    an external store would; the teaching sink (``CollectSink``) keeps every record, so its
    snapshots grow with the run and would dominate the cost of every checkpoint."""

    kind = "sink"
    emits_to = False

    def initial_state(self) -> dict[str, int]:
        return {}

    def process(
        self, state: dict[str, int], value: tuple[str, int]
    ) -> tuple[dict[str, int], Sequence[object]]:
        word, n = value
        state[word] = n  # the latest: a word's counts come from one counter, in order
        return state, ()

    def process_batch(
        self, state: dict[str, int], values: Sequence[tuple[str, int]]
    ) -> tuple[dict[str, int], list[object]]:
        """:meth:`process` of each pair in turn: the batch's last count of each word wins
        (one ``dict.update``, no Python step per record)."""
        state.update(values)
        return state, []

    def process_columns(
        self, state: dict[str, int], columns: Columns
    ) -> tuple[dict[str, int], list[object]] | None:
        """:meth:`process_batch` of ``(word, count)`` columns: each distinct word's last
        count in the batch (:meth:`~absnb.operators.columnar.Groups.last_rows`), new words
        added in order of first appearance, as ``dict.update`` of the pairs would."""
        if len(columns.arrays) != 2:
            return None
        words, counts = columns.arrays
        groups = group(words)
        latest = counts.to_numpy(zero_copy_only=False)[groups.last_rows()].tolist()
        state.update(zip(groups.distinct.to_pylist(), latest, strict=True))
        return state, []


def paper_job(
    scale: float = 1.0,
    parallelism: int = 2,
    seed: int = 1,
    *,
    incremental: bool = True,
    array: bool = True,
) -> Job:
    """The Figure 5 job (:func:`~absnb.jobs.paper_topology.paper_topology`) at ``scale``:
    :data:`BASE_RECORDS` and :data:`BASE_KEYS` times ``scale``, ``parallelism`` tasks per
    operator; with ``array`` (the default), its per-key and per-group state is held in
    arrays (:mod:`absnb.operators.array_state`), and with ``incremental`` (the default) it
    takes incremental snapshots, whatever the protocol."""
    if scale <= 0:
        raise ValueError(f"scale must be > 0, not {scale}")
    records = max(1, round(BASE_RECORDS * scale))
    keys = max(1, round(BASE_KEYS * scale))
    return paper_topology(
        parallelism, records, keys, seed=seed, incremental=incremental, array=array
    )


def text_job(
    scale: float = 1.0, parallelism: int = 4, *, collect: bool = False, array: bool = True
) -> Job:
    """Word count over :func:`text_lines`, every operator with ``parallelism`` tasks, into
    :class:`FinalCountSink` (or, with ``collect``, the teaching sink keeping every record);
    with ``array`` (the default), the counters hold their counts in an array
    (:mod:`absnb.operators.array_state`)."""
    lines = text_lines(scale, parallelism)
    sink: str | Operator = "collect" if collect else FinalCountSink()
    return word_count(lines, counters=parallelism, sinks=parallelism, sink=sink, array=array)


def run_row(
    run: SparkRun,
    interval: float | None,
    parallelism: int,
    cpu_busy: float | None = None,
    cpu_seconds: float | None = None,
) -> dict[str, Any]:
    """The experiment row of one run (:data:`RUN_COLUMNS`); ``records`` are the words the
    sources emitted, and ``records_per_second`` is that over the whole run (stage start,
    checkpoints and restarts included). Per completed checkpoint (medians): ``state_size``
    (bytes, all tasks), ``write_seconds`` (the slowest task's write) and
    ``checkpoint_seconds`` (trigger to complete: how long a synchronous checkpoint halts
    the job); ``cpu_busy``, if measured (:class:`~absnb.runtime.events.cpu.CpuMeter`), the
    share of this machine's CPU time that was busy during the run, and ``cpu_seconds`` the
    CPU time the run took (driver, JVM and Python workers: a run's work, which moves far
    less with the machine's load than ``seconds``); ``idle_share``, the share of its hosts'
    time they waited for input with nothing else to do (time that is no task's work)."""
    s = run.metrics.summary()
    host_seconds = sum(h.metrics.get("seconds", 0.0) for h in run.hosts)
    idle = sum(h.metrics.get("idle_seconds", 0.0) for h in run.hosts)
    cps = run.metrics.checkpoints()
    if len(cps):
        cps = cps[cps["status"] == "COMPLETED"]
    return {
        "protocol": run.protocol,
        "interval": interval,
        "parallelism": parallelism,
        "seconds": run.seconds,
        "records": s["records_emitted"],
        "records_per_second": s["records_per_second"],
        "checkpoints": s["completed"],
        "alignment_median": s["alignment_median"],
        "alignment_max": s["alignment_max"],
        "persisted_data": s["persisted_data"],
        "restarts": run.restarts,
        "state_size": _median_of(cps, "state_size"),
        "write_seconds": _median_of(cps, "async_duration_max"),
        "checkpoint_seconds": _median_of(cps, "end_to_end_duration"),
        "cpu_busy": cpu_busy,
        "cpu_seconds": cpu_seconds,
        "idle_share": idle / host_seconds if host_seconds > 0 else None,
    }


def _median_of(df: pd.DataFrame, column: str) -> float | None:
    if not len(df):
        return None
    values = df[column].dropna().astype(float)
    return float(values.median()) if len(values) else None


def _describe(row: dict[str, Any]) -> str:
    every = f"every {row['interval']:g} s" if row["interval"] else "no snapshots"
    line = (
        f"{row['protocol']} {every}, parallelism {row['parallelism']}: {row['seconds']:.2f} s, "
        f"{row['records_per_second']:,.0f} records/s, {row['checkpoints']} checkpoint(s)"
    )
    if row.get("state_size"):
        line += f", snapshot {row['state_size'] / 2**20:.1f} MiB"
    if row.get("checkpoint_seconds"):
        line += f" in {row['checkpoint_seconds']:.2f} s"
    if row.get("persisted_data"):
        line += f", {row['persisted_data']:,} B in flight recorded"
    return line


def warm_up(runtime: SparkRuntime, parallelism: int | None = None) -> None:
    """Two small runs as wide as the cluster (or ``parallelism``), so that the first
    measured run does not pay for starting Spark's Python workers and importing absnb."""
    p = parallelism or min(runtime.slots(), max(FIGURE7_PARALLELISM))
    for _ in range(2):
        runtime.run(paper_job(0.1, p), "abs", checkpoint_interval=0.05, keep_states=False)


def _rows(
    name: str,
    runtime: SparkRuntime,
    plan: Sequence[tuple[str, float | None, int]],
    scale: float,
    repeats: int,
    progress: ProgressFn | None,
    job: JobFn | None = None,
    min_pause: float = 0.0,
) -> list[dict[str, Any]]:
    """Run every ``(protocol, interval, parallelism)`` of ``plan`` ``repeats`` times, the
    plan over and over (interleaved: a change of the machine's load hits every protocol),
    each round rotated by one;
    one row each, with ``repeat``. ``job(scale, parallelism)`` builds each run's job
    (default :func:`paper_job`); every run waits ``min_pause`` seconds after a completed
    checkpoint before the next (:meth:`SparkRuntime.run`)."""
    make = job or paper_job
    progress = progress or _quiet
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, not {repeats}")
    slots = runtime.slots()
    too_wide = [p for _, _, p in plan if p > slots]
    if too_wide and runtime.hosts is None:
        raise ValueError(
            f"experiment {name!r} runs parallelism {max(too_wide)} but the cluster has {slots} "
            f"task slots: start the session with default_session('local[{max(too_wide)}]')"
        )
    total = len(plan) * repeats
    rows = []
    for r in range(repeats):
        # Each round starts one step further into the plan: the first run of a round pays
        # for the previous run's leftovers (its workers winding down, garbage), and that
        # cost must not land on the same protocol every time.
        for protocol, interval, p in [*plan[r % len(plan) :], *plan[: r % len(plan)]]:
            release_freed()  # the last run's garbage, and the pages it freed
            job_ = make(scale, p)
            with CpuMeter() as cpu:
                run = runtime.run(
                    job_,
                    protocol,
                    checkpoint_interval=interval,
                    min_pause=min_pause,
                    keep_states=False,  # the rows need measurements, not the keyed state
                )
            row = {**run_row(run, interval, p, cpu.busy, cpu.seconds), "repeat": r}
            rows.append(row)
            progress(Progress(name, len(rows), total, _describe(row)))
    return rows


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows)


def _relative(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as a DataFrame with ``relative_runtime``: each run's seconds over the
    median seconds of the baseline (protocol ``none``) at the same parallelism; and
    ``relative_cpu``, the same of ``cpu_seconds`` (NaN where not measured)."""
    df = _frame(rows)
    none = df["protocol"] == "none"
    for column, relative in (("seconds", "relative_runtime"), ("cpu_seconds", "relative_cpu")):
        values = df[column].astype(float)
        base = values[none].groupby(df.loc[none, "parallelism"]).median()
        df[relative] = values / df["parallelism"].map(base)
    return df


# -- Figure 6 -------------------------------------------------------------------------------
def figure6(
    runtime: SparkRuntime,
    *,
    scale: float = 1.0,
    intervals: Sequence[float] = FIGURE6_INTERVALS,
    protocols: Sequence[str] = FIGURE6_PROTOCOLS,
    parallelism: int = 2,
    repeats: int = 1,
    progress: ProgressFn | None = None,
    job: JobFn | None = None,
    min_pause: float = 0.0,
) -> pd.DataFrame:
    """Runtime against the snapshot interval (the paper's Figure 6): one baseline run
    without snapshots, then each protocol at each interval, ``repeats`` times over.

    One row per run (:data:`RUN_COLUMNS`, ``repeat``, and ``relative_runtime``: seconds
    over the median baseline seconds). Chandy-Lamport's ``persisted_data`` is the channel
    state it recorded; ABS and synchronous snapshots record none. ``min_pause``: seconds
    after a completed checkpoint before the next is triggered (Flink's min pause).
    """
    plan: list[tuple[str, float | None, int]] = [("none", None, parallelism)]
    plan += [(p, i, parallelism) for p in protocols for i in intervals]
    return _relative(_rows("fig6", runtime, plan, scale, repeats, progress, job, min_pause))


# -- Figure 7 -------------------------------------------------------------------------------
def figure7(
    runtime: SparkRuntime,
    *,
    scale: float = 1.0,
    parallelism: Sequence[int] = FIGURE7_PARALLELISM,
    interval: float = FIGURE7_INTERVAL,
    protocols: Sequence[str] = FIGURE7_PROTOCOLS,
    repeats: int = 1,
    progress: ProgressFn | None = None,
    job: JobFn | None = None,
    min_pause: float = 0.0,
) -> pd.DataFrame:
    """Runtime against parallelism at a fixed interval (the paper's Figure 7, where it is
    the number of nodes). The input is the same for every parallelism; on a machine with
    fewer cores than tasks (2 cores: any parallelism above 1 with 6 operators) the runtime
    cannot fall, but the gap between the protocols shows.

    One row per run (:data:`RUN_COLUMNS`, ``repeat``, ``relative_runtime`` against the
    baseline at the same parallelism).
    """
    if "none" not in protocols:
        protocols = ("none", *protocols)
    plan = [(pr, None if pr == "none" else interval, p) for p in parallelism for pr in protocols]
    return _relative(_rows("fig7", runtime, plan, scale, repeats, progress, job, min_pause))


# -- alignment ------------------------------------------------------------------------------
def alignment(
    runtime: SparkRuntime,
    *,
    scale: float = 1.0,
    interval: float = 0.25,
    parallelism: int = 2,
    progress: ProgressFn | None = None,
) -> pd.DataFrame:
    """The alignment durations of ABS: one run checkpointing every ``interval`` seconds.

    One row per task snapshot of a task with more than one input (the tasks behind a
    shuffle: the only tasks that align), from
    :meth:`RunMetrics.subtasks <absnb.runtime.events.metrics.RunMetrics.subtasks>`:
    ``checkpoint_id``, ``task``, ``alignment_duration`` (seconds, first barrier to last) and the
    rest.
    """
    job = paper_job(scale, parallelism)
    run = runtime.run(job, "abs", checkpoint_interval=interval, keep_states=False)
    row = run_row(run, interval, parallelism)
    (progress or _quiet)(Progress("alignment", 1, 1, _describe(row)))
    subtasks = run.metrics.subtasks()
    return subtasks[subtasks["task"].isin(run.metrics.aligning())].reset_index(drop=True)


# -- recovery -------------------------------------------------------------------------------
def recovery(
    runtime: SparkRuntime,
    *,
    scale: float = 1.0,
    kinds: Sequence[Literal["raise", "kill"]] = ("raise", "kill"),
    protocol: str = "abs",
    interval: float = 0.25,
    parallelism: int = 2,
    progress: ProgressFn | None = None,
) -> pd.DataFrame:
    """Failure to running again: one run per failure kind (``raise``: the task raises;
    ``kill``: its Python worker is killed with SIGKILL), the first ``sum_per_key`` task
    failing once it has consumed a third of its share of the records.

    One row per restart
    (:meth:`RunMetrics.restarts <absnb.runtime.events.metrics.RunMetrics.restarts>`) with ``kind``,
    ``seconds`` (the whole run) and ``recovery_time`` (seconds from the failure, as the coordinator
    first saw it, until every host of the next attempt had registered).
    """
    from absnb.runtime.failures import Failure
    from absnb.runtime.spark import quiet_task_failures

    progress = progress or _quiet
    job = paper_job(scale, parallelism)
    records = job.params["records"]
    assert isinstance(records, int)
    after = max(1, records // (3 * parallelism))
    rows = []
    for i, kind in enumerate(kinds):
        if kind not in ("raise", "kill"):
            raise ValueError(f"failure kind {kind!r} is not 'raise' or 'kill'")
        victim = str(job.graph.tasks_of("sum_per_key")[0])
        failure = Failure(victim, after_records=after, kind=kind)
        with quiet_task_failures(runtime.spark):  # the failures are on purpose
            run = runtime.run(
                paper_job(scale, parallelism),
                protocol,
                checkpoint_interval=interval,
                failures=[failure],
                keep_states=False,
            )
        restarts = run.metrics.restarts()
        for r in restarts.to_dict("records"):
            rows.append({"kind": kind, "protocol": protocol, "seconds": run.seconds, **r})
        times = ", ".join(f"{t:.2f} s" for t in restarts["recovery_time"].dropna())
        progress(
            Progress(
                "recovery",
                i + 1,
                len(kinds),
                f"{kind}: {run.restarts} restart(s), failure to running again {times or 'n/a'}; "
                f"whole run {run.seconds:.2f} s",
            )
        )
    return _frame(rows)


# -- everything -----------------------------------------------------------------------------
EXPERIMENTS = ("fig6", "fig7", "alignment", "recovery")


def medians(df: pd.DataFrame) -> pd.DataFrame:
    """One row per ``(protocol, interval, parallelism)`` of an experiment's runs, in the
    order they ran: the median of every measure over the repeats, and ``runs``."""
    keys = ["protocol", "interval", "parallelism"]
    measures = [c for c in df.columns if c not in (*keys, "repeat")]
    grouped = df.groupby(keys, dropna=False, sort=False)
    with warnings.catch_warnings():  # runs without checkpoints: no sizes, a NaN median
        warnings.simplefilter("ignore", RuntimeWarning)
        out = grouped[measures].median()
    out["runs"] = grouped.size()
    return out.reset_index()


READABLE = {
    "interval": "interval s",
    "seconds": "seconds",
    "relative_runtime": "vs none",
    "checkpoints": "checkpoints",
    "state_size": "snapshot MiB",
    "checkpoint_seconds": "checkpoint s",
    "alignment_median": "alignment ms",
    "persisted_data": "channel kB",
    "cpu_busy": "CPUs busy %",
}
"""The columns :func:`readable` shows, and its names for them (units in the names)."""


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`medians` of an experiment's runs as a table narrow enough for a projector:
    the protocol, then the columns of :data:`READABLE` renamed, in round units (sizes in
    MiB and kB, alignment in ms, CPU share in %); one row per protocol and interval."""
    m = medians(df)
    scaled = {"state_size": 2**-20, "alignment_median": 1e3, "persisted_data": 1e-3}
    scaled["cpu_busy"] = 100
    out = m[["protocol", *READABLE]].copy()
    for column, factor in scaled.items():
        out[column] = out[column].astype(float) * factor
    out = out.rename(columns=READABLE).set_index("protocol")
    digits = {"interval s": 2, "seconds": 2, "vs none": 2, "checkpoint s": 3, "CPUs busy %": 0}
    return out.round({name: digits.get(name, 1) for name in out.columns})
