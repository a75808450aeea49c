"""A soak of the Spark runtime: many runs, each with one random failure, counted against
Spark's own answer.

    python benchmarks/soak/run.py [--runs 100] [--seed 1] [--master local[2]] [--no-postgres]
                                  [--only N [N ...]]

Each run is word count (into the file sink or the PostgreSQL sink, both two-phase commit)
or the paper's Figure 5 job (``absnb.jobs.paper_topology``), under one of abs, unaligned,
abs with an alignment timeout, chandy-lamport and synchronous, with one failure drawn at
random (:class:`absnb.runtime.failures.Failure`): raise or SIGKILL in a random task after a
random number of records, during a random checkpoint, or in a sink between its pre-commit
and its commit (told that a checkpoint completed, before committing). Every mode here is
exactly-once, so the committed output must equal Spark's batch answer on the same input:
word count's every running count once (``groupBy(word).count()``), the Figure 5 job's
count per group (an RDD over the same generated records). The script prints one line per
run and a table per mode, and exits 1 if any run lost or duplicated output (2 if a run
failed outright, 3 if a failure did not fire). Seeded: the same ``--seed`` draws the same
runs; ``--only 17`` makes only run 17 of them (the same ``--runs`` and ``--seed``), to look
into one.

Failures are drawn from the run's own length: a failure-free run of each job, mode and sink
(a calibration, made once, before the first trial that needs it) gives the records each
task reads, the checkpoints each takes its part of and those each sink commits, and a
failure's moment is drawn within its task's (its records within the first 90 %, its
checkpoint within the first half). The seed fixes the draw's fractions; the moments they
give follow the calibration, so another machine may draw other numbers. A failure whose
moment still never comes (the run took fewer checkpoints, or its sink committed fewer
times, than its calibration did) did not fire
(:attr:`~absnb.runtime.spark.SparkRun.failures_not_fired`): it is a failed draw, counted
in the ``unfired`` column, and the script exits 3 when any draw failed.

PostgreSQL needs Debian's ``postgresql`` binaries and psycopg; without them (or with
``--no-postgres``) word count uses the file sink only, and the table says so.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import absnb
from absnb import datasets
from absnb.core.errors import FailureNotFiredWarning
from absnb.experiments.sessions import quiet_session
from absnb.jobs.paper_topology import KEYS_PER_GROUP, paper_topology
from absnb.runtime.failures import Failure
from absnb.runtime.spark import SparkRuntime, quiet_task_failures, word_count_answer
from absnb.sinks import FileSink

MODES: dict[str, tuple[str, float | None]] = {
    "abs": ("abs", None),
    "unaligned": ("unaligned", None),
    "abs-timeout": ("abs", 0.005),  # alignments longer than 5 ms switch to unaligned
    "chandy-lamport": ("chandy-lamport", None),
    "synchronous": ("synchronous", None),
}
"""Mode name -> (protocol, alignment timeout in seconds)."""
INTERVAL = 0.05
"""Seconds between checkpoints: several complete in every run."""
WC_REPEAT = 2
"""Word count reads the ``large`` sample this many times (about 12,000 words a source)."""
WC_RATE = 1_000
"""Lines a second each word-count source reads (2,000 each): a run lasts about two
seconds, so that several checkpoints complete in it; read as fast as it could, a run
ended after one or two, and a failure drawn at one of them often never came."""
PAPER = {"parallelism": 2, "records": 60_000, "keys": 5_000, "groups": 97}
"""The Figure 5 job's size: 60,000 records over 5,000 keys in 97 groups."""
PAPER_RATE = 30_000
"""Records a second each Figure 5 source reads: a run lasts about a second."""
MOMENTS = ("records", "checkpoint", "pre-commit")
"""When a failure fires: after some records, during a checkpoint, or in a sink told that a
checkpoint completed, before it commits."""


OPERATORS = {
    "word_count": ("source", "count", "sink"),
    "paper_topology": ("source", "parse", "sum_per_key", "to_group", "count_per_group", "sink"),
}
"""Each job's operators (two subtasks each)."""
RECORDS_SHARE = 0.9
"""A failure after records fires within this share of what its task reads in the
calibration run."""
CHECKPOINTS_SHARE = 0.5
"""A failure at a checkpoint fires within this share of the checkpoints its task took part
in (or, told of one, committed) in the calibration run: a trial on a loaded machine
checkpoints less often than its calibration did (within three quarters, 2 of 100 draws of
seed 1 on a busy machine never came: the run ended first)."""


@dataclass(frozen=True)
class Drawn:
    """What the seeded draw fixes of a run: the job, mode, sink, and a failure's kind, task
    and moment, as a fraction of the run's length (:meth:`Calibration.failure` makes it a
    :class:`~absnb.runtime.failures.Failure`)."""

    number: int
    job: str
    mode: str
    sink: str
    kind: Literal["raise", "kill"]
    moment: str
    task: str
    at: float
    """Where in the run, from 0 (its start) to 1 (its end)."""


@dataclass(frozen=True)
class Calibration:
    """A failure-free run of one job, mode and sink, by task: the records each read, the
    checkpoints each took its part of, and those each sink committed."""

    records: dict[str, int]
    snapshots: dict[str, list[int]]
    commits: dict[str, list[int]]

    @classmethod
    def of(cls, run: Any) -> Calibration:
        """The calibration of ``run`` (a :class:`~absnb.runtime.spark.SparkRun`)."""
        tasks = [h.metrics.get("tasks", {}) for h in run.hosts]
        records = {str(t): n["records_in"] for mine in tasks for t, n in mine.items()}
        rows = run.log.rows

        def by_task(kind: str) -> dict[str, list[int]]:
            out: dict[str, set[int]] = {}
            for r in rows:
                if r.kind == kind and r.task and r.checkpoint:
                    out.setdefault(r.task, set()).add(int(r.checkpoint))
            return {t: sorted(ns) for t, ns in out.items()}

        return cls(records, by_task("snapshot"), by_task("commit"))

    def failure(self, d: Drawn) -> Failure:
        """``d``'s failure, at its fraction of this run's records or checkpoints."""
        if d.moment == "records":
            n = max(1, int(d.at * RECORDS_SHARE * self.records.get(d.task, 0)))
            return Failure(d.task, after_records=n, kind=d.kind)
        if d.moment == "pre-commit":
            return Failure(d.task, notified=self._pick(self.commits, d), kind=d.kind)
        return Failure(d.task, during_checkpoint=self._pick(self.snapshots, d), kind=d.kind)

    @staticmethod
    def _pick(checkpoints: dict[str, list[int]], d: Drawn) -> int:
        """The checkpoint at ``d``'s fraction of the first :data:`CHECKPOINTS_SHARE` of
        those of its task (1 when the task had none: that draw fails)."""
        mine = checkpoints.get(d.task) or [1]
        return mine[int(d.at * max(1, math.ceil(CHECKPOINTS_SHARE * len(mine))))]


@dataclass(frozen=True)
class Trial:
    """One run to make: the job, mode, sink and failure."""

    number: int
    job: str
    mode: str
    sink: str
    failure: Failure

    def describe(self) -> str:
        f = self.failure
        if f.after_records is not None:
            when = f"after {f.after_records:,} records"
        elif f.during_checkpoint is not None:
            when = f"during checkpoint {f.during_checkpoint}"
        else:
            when = f"told checkpoint {f.notified} completed, before committing"
        return f"{f.kind} {f.task} {when}"


@dataclass
class Outcome:
    """What one run gave, against the answer."""

    trial: Trial
    expected: int = 0
    lost: int = 0
    duplicated: int = 0
    restarts: int = 0
    fired: bool = False
    seconds: float = 0.0
    error: str = ""


def draw(rng: random.Random, number: int, sinks: tuple[str, ...]) -> Drawn:
    """A random run: job, mode, sink, then a failure of a random task at a random moment
    (a fraction of the run, made a number of records or a checkpoint by its calibration)."""
    job = rng.choice(("word_count", "paper_topology"))
    mode = rng.choice(list(MODES))
    sink = rng.choice(sinks) if job == "word_count" else "latest-count"
    kind: Literal["raise", "kill"] = rng.choice(("raise", "kill"))
    moment = rng.choice(MOMENTS)
    if moment == "pre-commit":
        task = f"sink[{rng.randrange(2)}]"
    else:
        task = f"{rng.choice(OPERATORS[job])}[{rng.randrange(2)}]"
    return Drawn(number, job, mode, sink, kind, moment, task, rng.random())


def lines() -> list[list[str]]:
    parts = datasets.text_partitions("large")
    return [(parts[0] + parts[2]) * WC_REPEAT, (parts[1] + parts[3]) * WC_REPEAT]


def word_count_expected(answer: dict[str, int]) -> Counter[tuple[str, int]]:
    """Word count's failure-free output: every running count from 1 to the total, once."""
    return Counter((w, i) for w, n in answer.items() for i in range(1, n + 1))


def paper_answer(spark: Any, job: absnb.Job) -> Counter[int]:
    """Spark's answer for the Figure 5 job: records per group, over the same generated
    records (an RDD of the sources' logs, one partition each)."""
    keys, groups, run = job.params["keys"], job.params["groups"], KEYS_PER_GROUP
    logs = list(job.inputs.values())
    rdd = spark.sparkContext.parallelize(logs, len(logs))
    # a record's key is record mod keys; its group, a run of consecutive keys (to_group)
    counts = rdd.flatMap(lambda log: ((r % keys) // run % groups for r in log)).countByValue()
    return Counter(dict(counts))


def difference(expected: Counter[Any], got: Counter[Any]) -> tuple[int, int]:
    """(lost, duplicated): what the answer has and the output lacks, and the reverse."""
    return sum((expected - got).values()), sum((got - expected).values())


class Soak:
    """The runtime, the answers and the sinks the trials share."""

    def __init__(self, runtime: SparkRuntime, workdir: Path, dsn: str | None) -> None:
        self.calibrations: dict[tuple[str, str, str], Calibration] = {}
        self.runtime = runtime
        self.workdir = workdir
        self.dsn = dsn
        self.lines = lines()
        self.wc_answer = word_count_expected(word_count_answer(runtime.spark, self.lines))
        self.paper_job = paper_topology(
            PAPER["parallelism"], PAPER["records"], PAPER["keys"], PAPER["groups"]
        )
        self.paper_answer = paper_answer(runtime.spark, self.paper_job)

    def make_sink(self, sink: str, name: str) -> Any:
        if sink == "postgres":
            from absnb.sinks.postgres import PostgresSink

            assert self.dsn is not None
            return PostgresSink(self.dsn, f"soak_{name}", job=f"soak{name}")
        return FileSink(self.workdir / f"out-{name}")

    def trial(self, d: Drawn) -> Trial:
        """``d`` with its failure drawn from its calibration run's length."""
        return Trial(d.number, d.job, d.mode, d.sink, self.calibration(d).failure(d))

    def calibration(self, d: Drawn) -> Calibration:
        """The failure-free run of ``d``'s job, mode and sink (made once)."""
        key = (d.job, d.mode, d.sink)
        if key not in self.calibrations:
            protocol, timeout = MODES[d.mode]
            name = "calibration_" + "_".join(k.replace("-", "_") for k in key)
            if d.job == "word_count":
                job = absnb.word_count(self.lines, sink=self.make_sink(d.sink, name))
                run = self._run(job, protocol, timeout, [], WC_RATE)
            else:
                run = self._run(self.paper_job, protocol, timeout, [], PAPER_RATE)
            self.calibrations[key] = Calibration.of(run)
        return self.calibrations[key]

    def run(self, trial: Trial) -> Outcome:
        protocol, timeout = MODES[trial.mode]
        out = Outcome(trial)
        began = time.monotonic()
        expected: Counter[Any]
        try:
            if trial.job == "word_count":
                sink = self.make_sink(trial.sink, str(trial.number))
                job = absnb.word_count(self.lines, sink=sink)
                run = self._run(job, protocol, timeout, [trial.failure], WC_RATE)
                expected, got = Counter(self.wc_answer), Counter(sink.committed())
            else:
                run = self._run(self.paper_job, protocol, timeout, [trial.failure], PAPER_RATE)
                expected, got = Counter(self.paper_answer), Counter(dict(run.output))
            out.restarts = run.restarts
            out.fired = not run.failures_not_fired
            out.expected = sum(expected.values())
            out.lost, out.duplicated = difference(expected, got)
        except Exception as e:  # a run that failed outright is reported, not hidden
            out.error = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            traceback.print_exc(file=sys.stderr)
        out.seconds = time.monotonic() - began
        return out

    def _run(
        self,
        job: absnb.Job,
        protocol: str,
        timeout: float | None,
        failures: list[Failure],
        rate: float | None,
    ) -> Any:
        with quiet_task_failures(self.runtime.spark), warnings.catch_warnings():
            warnings.simplefilter("ignore", FailureNotFiredWarning)  # the table counts them
            return self.runtime.run(
                job,
                protocol,
                checkpoint_interval=INTERVAL,
                failures=failures,
                alignment_timeout=timeout,
                source_rate=rate,
            )


@contextmanager
def postgres(wanted: bool) -> Iterator[str | None]:
    """A throwaway PostgreSQL server's DSN, or None (with the reason on stderr)."""
    if not wanted:
        yield None
        return
    from absnb.sinks.pg_server import PostgresServer, PostgresUnavailableError

    try:
        server = PostgresServer().start()
    except PostgresUnavailableError as e:
        print(f"no PostgreSQL sink: {e}", file=sys.stderr)
        yield None
        return
    try:
        yield server.dsn
    finally:
        server.stop()


def line(o: Outcome) -> str:
    t = o.trial
    verdict = o.error or f"lost {o.lost}, duplicated {o.duplicated} of {o.expected:,}"
    return (
        f"{t.number:4d} {t.job:15} {t.mode:15} {t.sink:13} fired={o.fired!s:5} "
        f"{o.seconds:5.1f}s  {verdict}  [{t.describe()}]"
    )


def table(outcomes: list[Outcome]) -> str:
    """Per mode and job: runs, failures that fired and that did not (failed draws), lost and
    duplicated output, errors."""
    head = f"{'mode':15} {'job':15} {'runs':>5} {'fired':>6} {'unfired':>8} {'lost':>6} {'dup':>6}"
    rows = [f"{head} {'errors':>7}"]
    keys = sorted({(o.trial.mode, o.trial.job) for o in outcomes})
    for mode, job in keys:
        mine = [o for o in outcomes if (o.trial.mode, o.trial.job) == (mode, job)]
        rows.append(
            f"{mode:15} {job:15} {len(mine):5d} {sum(o.fired for o in mine):6d} "
            f"{sum(unfired(o) for o in mine):8d} "
            f"{sum(o.lost for o in mine):6d} {sum(o.duplicated for o in mine):6d} "
            f"{sum(bool(o.error) for o in mine):7d}"
        )
    fired = sum(o.fired for o in outcomes)
    rows.append(
        f"{'all':15} {'':15} {len(outcomes):5d} {fired:6d} "
        f"{sum(unfired(o) for o in outcomes):8d} "
        f"{sum(o.lost for o in outcomes):6d} {sum(o.duplicated for o in outcomes):6d} "
        f"{sum(bool(o.error) for o in outcomes):7d}"
    )
    sinks = Counter(o.trial.sink for o in outcomes)
    rows.append("sinks: " + ", ".join(f"{s} {n}" for s, n in sorted(sinks.items())))
    return "\n".join(rows)


def unfired(o: Outcome) -> bool:
    """A failed draw: the run ended without its failure firing."""
    return not o.error and not o.fired


def verdict(outcomes: list[Outcome]) -> int:
    """0: every run exactly once, every failure fired; 1: some run lost or duplicated;
    2: some run failed; 3: some failure did not fire (a failed draw)."""
    if any(o.lost or o.duplicated for o in outcomes):
        return 1
    if any(o.error for o in outcomes):
        return 2
    return 3 if any(unfired(o) for o in outcomes) else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=100, help="how many runs (default 100)")
    p.add_argument("--seed", type=int, default=1, help="seed of the draws (default 1)")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--no-postgres", action="store_true", help="word count into files only")
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="S",
        help="start no run after S seconds; the table counts the runs made (default: none)",
    )
    p.add_argument(
        "--only",
        type=int,
        nargs="+",
        default=None,
        metavar="N",
        help="make only these runs of the seeded draw (numbers from 0 to --runs - 1)",
    )
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error(f"--runs must be at least 1, not {args.runs}")
    unknown = sorted(set(args.only or ()) - set(range(args.runs)))
    if unknown:
        p.error(
            f"--only {unknown} not among the {args.runs} runs: give numbers 0 to {args.runs - 1}"
        )
    rng = random.Random(args.seed)
    with ExitStack() as stack:
        dsn = stack.enter_context(postgres(not args.no_postgres))
        sinks = ("file", "postgres") if dsn else ("file",)
        drawn = [draw(rng, i, sinks) for i in range(args.runs)]
        if args.only is not None:
            drawn = [d for d in drawn if d.number in args.only]
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="absnb-soak-")))
        spark = quiet_session(args.master)
        stack.callback(spark.stop)
        runtime = SparkRuntime(spark, checkpoint_dir=str(workdir / "checkpoints"))
        soak = Soak(runtime, workdir, dsn)
        outcomes = run_all(lambda d: soak.run(soak.trial(d)), drawn, args.budget)
    print(table(outcomes))
    return verdict(outcomes)


def run_all(
    run: Callable[[Drawn], Outcome], drawn: list[Drawn], budget: float | None
) -> list[Outcome]:
    """Every drawn run in turn, each printed when done; none started after ``budget`` s."""
    began = time.monotonic()
    outcomes: list[Outcome] = []
    for d in drawn:
        if budget is not None and time.monotonic() - began > budget:
            print(f"budget of {budget:g} s spent: {len(outcomes)} of {len(drawn)} runs made")
            break
        outcomes.append(run(d))
        print(line(outcomes[-1]), flush=True)
    return outcomes


if __name__ == "__main__":
    sys.exit(main())
