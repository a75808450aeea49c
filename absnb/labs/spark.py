"""Part d of a lab's check: one run on Spark, the student's class at every task.

The run goes through :class:`~absnb.runtime.SparkRuntime`, the runtime the package's
own protocols run on: the lab's protocol around the student's class (pickled to every
executor, by value when the class is defined in a notebook or a file of the student's),
periodic checkpoints, and one task failure after a checkpoint completed, so that the
restart restores it. It is checked as the package's own Spark tests check a run: the
failure fired and a checkpoint was restored, every completed checkpoint read back from
storage is a consistent cut (a bank's money adds up in it), the run's event log finds no
record on the wrong side of a cut, and the output equals the failure-free output (exactly
once). In the two-phase-commit lab the student writes the sink rather than a handler: the
job's sinks are the student's class writing to files every executor shares
(:class:`~absnb.sinks.file_store.FileTransactionStore`), their committed records must be
the failure-free output, each once (what was lost and what came twice are named), and no
transaction may be left open or pre-committed after the run. Without Java (or PySpark)
the part is skipped, not failed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from absnb.core.job import Job
from absnb.i18n import gettext as _
from absnb.labs.handler import say_where
from absnb.labs.report import PartResult
from absnb.operators.base import Operator
from absnb.protocols.base import SnapshotProtocol
from absnb.runtime.failures import Failure

if TYPE_CHECKING:
    from absnb.core.ids import CheckpointId
    from absnb.core.snapshot import GlobalSnapshot
    from absnb.runtime.spark.result import SparkRun
    from absnb.runtime.storage.checkpoints import CheckpointStorage

PART = "d. on Spark"

SPARK_TIMEOUT = 180.0
"""Seconds part d waits for its run (the session's start included) before it cancels the
run and fails the part: a handler that never unblocks would otherwise hang the grader."""

QUIET = 1.0
"""Seconds part d's folder must go unwritten before it is removed (``_remove``)."""

REMOVE_WAIT = 10.0
"""Seconds part d waits at most for its folder to go quiet, and keeps trying to remove it."""


@dataclass(frozen=True)
class SparkCase:
    """The run of a lab's part d.

    Attributes:
        title: the job, as the report names it.
        job: makes the job (given the sink that ``sink`` made, when it is set).
        protocol: the lab's protocol around a handler class.
        failure: the one failure injected (after a checkpoint completed).
        checkpoint_interval: seconds between two checkpoints.
        source_rate: input-log entries each source reads per second, so that the run lasts
            long enough for several checkpoints however fast the machine is.
        hosts: Spark tasks of the barrier stage (at most the cluster's slots).
        sink: for a lab whose student writes a sink rather than a handler: makes it of the
            student's class, writing under the folder it is given (every executor opens
            it); the run then also checks that its external system committed the
            failure-free output once and holds no transaction left unfinished.
    """

    title: str
    job: Callable[..., Job]
    protocol: Callable[..., SnapshotProtocol]
    failure: Failure
    checkpoint_interval: float
    source_rate: float
    hosts: int = 2
    sink: Callable[[type, str], Operator] | None = None

    def describe(self, hosts: int | None = None) -> str:
        """The run in words; ``hosts``: the Spark tasks it ran on (by default
        ``hosts``)."""
        f = self.failure
        if f.after_checkpoint is not None:
            when = _("once checkpoint {n} completed").format(n=f.after_checkpoint)
        elif f.during_checkpoint is not None:
            when = _("right after its snapshot of checkpoint {n}").format(n=f.during_checkpoint)
        else:
            when = _("after {records} records").format(records=f.after_records)
        return _(
            "{job} on {hosts} Spark tasks, a checkpoint every {interval} s, {task} failing {when}"
        ).format(
            job=_(self.title),
            hosts=hosts or self.hosts,
            interval=f"{self.checkpoint_interval:g}",
            task=f.task,
            when=when,
        )


def spark_word_count(sink: str | Operator = "collect") -> Job:
    """Word count over the large text, 1,000 lines a source (2 sources, counters and sinks),
    the sinks writing to ``sink`` (:func:`~absnb.jobs.word_count.word_count`'s)."""
    from absnb import datasets
    from absnb.jobs.word_count import word_count

    parts = datasets.text_partitions("large")
    return word_count([parts[0] + parts[2], parts[1] + parts[3]], sink=sink)


def missing() -> str | None:
    """What Spark lacks here to start (None: nothing): Java, on ``JAVA_HOME`` or the PATH,
    or PySpark."""
    from absnb.runtime.spark.jvm_archive import java_path

    if java_path() is None:
        return _(
            "no Java: Spark needs Java 17 (apt-get install openjdk-17-jre-headless, or set "
            "JAVA_HOME)"
        )
    if importlib.util.find_spec("pyspark") is None:
        return _("no PySpark: pip install pyspark")
    return None


def java_found() -> bool:
    """Whether Spark can start here (:func:`~absnb.labs.spark.missing` finds nothing)."""
    return missing() is None


def spark_part(
    case: SparkCase, handler_class: type, *, timeout: float = SPARK_TIMEOUT
) -> PartResult:
    """Part d: ``case``'s run under ``handler_class``, checked; skipped without Java."""
    lacking = missing()
    if lacking is not None:
        return PartResult(PART, "skipped", lacking)
    start = time.perf_counter()
    folder = tempfile.mkdtemp(prefix="absnb-lab-")
    outcome = None
    try:
        if case.sink is None:
            job = case.job()
        else:
            job = case.job(case.sink(handler_class, os.path.join(folder, "sink")))
        storage = _auditing_storage(os.path.join(folder, "checkpoints"), job)
        outcome = _run(case, handler_class, job, storage, timeout)
        result = _judge(case, job, storage, outcome)
    finally:  # a run that ended of itself has no host left writing
        _remove(folder, quiet=0.0 if outcome and outcome.run else QUIET)
    result.seconds = time.perf_counter() - start
    return result


def _remove(folder: str, quiet: float = QUIET, wait: float = REMOVE_WAIT) -> None:
    """Remove ``folder`` once nothing has written into it for ``quiet`` seconds (at most
    ``wait`` seconds from now): the hosts of a cancelled run stop on the coordinator's
    Stop, and a snapshot writer of theirs may still be writing a file a moment later."""
    deadline = time.monotonic() + wait
    seen, since = _entries(folder), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet:
        time.sleep(quiet / 5)
        now = _entries(folder)
        if now != seen:
            seen, since = now, time.monotonic()
    while True:
        try:
            shutil.rmtree(folder)
            return
        except OSError:  # a file written or removed while the tree was being removed
            if not os.path.exists(folder):
                return
            if time.monotonic() >= deadline:
                shutil.rmtree(folder, ignore_errors=True)
                return
        time.sleep(0.05)


def _entries(folder: str) -> set[tuple[str, int]]:
    """Every path under ``folder`` with its size: what tells a tree still being written."""
    found = set()
    for root, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            try:
                found.add((path, os.stat(path).st_size))
            except OSError:  # renamed or removed meanwhile (an atomic write's temporary)
                continue
    return found


@dataclass
class _Outcome:
    run: SparkRun | None = None
    error: BaseException | None = None
    timed_out: bool = False
    hosts: int | None = None
    timeout: float = SPARK_TIMEOUT


def _run(
    case: SparkCase,
    handler_class: type,
    job: Job,
    storage: CheckpointStorage,
    timeout: float,
) -> _Outcome:
    """``case``'s run on a local session (the running one, if any; else a new one, quiet),
    in a thread that is cancelled after ``timeout`` seconds."""
    from absnb.runtime.spark import SparkRuntime, quiet_task_failures
    from absnb.runtime.spark.session import quiet_session
    from absnb.runtime.spark.stage import shipped_by_value

    outcome = _Outcome(timeout=timeout)
    # the JVM's start-up lines go to a log file: a student's notebook shows the report only
    runtime = SparkRuntime(quiet_session(f"local[{case.hosts}]"), storage=storage)
    runtime.hosts = outcome.hosts = min(case.hosts, runtime.slots())
    protocol = case.protocol(handler_class)

    def run() -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a failure that did not fire is checked below
                outcome.run = runtime.run(
                    job,
                    protocol,
                    checkpoint_interval=case.checkpoint_interval,
                    failures=[case.failure],
                    max_restarts=1,
                    source_rate=case.source_rate,
                )
        except BaseException as e:
            outcome.error = e

    # a class in a file of the student's travels by value: the executors cannot import it
    with quiet_task_failures(runtime.spark), shipped_by_value(handler_class.__module__):
        worker = threading.Thread(target=run, name="absnb-lab-spark", daemon=True)
        worker.start()
        worker.join(timeout)
        while worker.is_alive():  # every attempt's stage, until the run gives up
            outcome.timed_out = True
            runtime.spark.sparkContext.cancelAllJobs()
            worker.join(1.0)
    return outcome


def _judge(case: SparkCase, job: Job, storage: Any, outcome: _Outcome) -> PartResult:
    """The part's result: what went wrong first, or what passed."""
    what = case.describe(outcome.hosts)
    if outcome.timed_out:
        return PartResult(
            PART,
            "failed",
            _("{run}: no end after {seconds} s").format(run=what, seconds=f"{outcome.timeout:g}"),
            [
                _(
                    "the run was cancelled: something in it never ended (an input blocked for "
                    "good, a decision that loops, a checkpoint that never completes)"
                )
            ],
        )
    if outcome.error is not None:
        return PartResult(
            PART, "failed", _("{run}: the run failed").format(run=what), _said(outcome.error)
        )
    run = outcome.run
    assert run is not None  # neither an error nor a timeout
    for attempt, error in enumerate(run.errors):
        if "injected failure of" not in error:  # the student's code failed, then recovered
            return PartResult(
                PART,
                "failed",
                _("{run}: attempt {attempt} failed").format(run=what, attempt=attempt),
                [error, *_restarted(run)],
            )
    problems: list[str] = []
    if run.restarts != 1 or run.failures_not_fired:
        problems.append(
            _("{failure} did not fire once ({restarts} restarts): {why}").format(
                failure=case.failure,
                restarts=run.restarts,
                why="; ".join(run.failures_not_fired.values()),
            )
        )
    if not run.checkpoints:
        problems.append(_("no checkpoint completed"))
    for n, found in sorted(storage.audited.items()):
        problems.extend(
            _("checkpoint {n} read back from storage: {problem}").format(n=n, problem=p)
            for p in found
        )
    problems.extend(run.check_cuts())
    problems.extend(_output_problems(case, job, run.output))
    if problems:
        return PartResult(PART, "failed", f"{what}: {problems[0]}", problems[1:6])
    restored = max(run.restored)
    summary = _(
        "{run}: {checkpoints} checkpoints, every one a consistent cut; a restart from "
        "checkpoint {restored}; output exactly once"
    ).format(run=what, checkpoints=len(run.checkpoints), restored=restored)
    if case.sink is not None:
        summary += _("; every transaction committed or aborted")
    return PartResult(PART, "passed", summary)


def _output_problems(case: SparkCase, job: Job, output: object) -> list[str]:
    """Why ``output`` is not the failure-free output of ``job``, each record once, and
    for a lab's sink, the transactions it left unfinished (none: no problem)."""
    from absnb.sim.checks import reference_output

    expected = reference_output(job)
    if case.sink is not None:
        return [*_not_exactly_once(output, expected), *_unfinished(job)]
    if output != expected:
        return [
            _("the output {output} is not the failure-free {expected}").format(
                output=_short(output), expected=_short(expected)
            )
        ]
    return []


def _not_exactly_once(output: object, expected: object) -> list[str]:
    """What the sinks committed that the failure-free run did not (records twice), and
    what they lost, as problems (none: each record once)."""
    if not isinstance(output, list) or not isinstance(expected, list):
        return [] if output == expected else [_short(output)]
    got, want = Counter(map(repr, output)), Counter(map(repr, expected))
    twice, lost = got - want, want - got
    problems = []
    if twice:
        problems.append(
            _(
                "{count} committed records are not the failure-free run's once each but "
                "twice or more (duplicates after the restart), e.g. {records}"
            ).format(count=sum(twice.values()), records=", ".join(sorted(twice)[:3]))
        )
    if lost:
        problems.append(
            _(
                "{count} records of the failure-free run were never committed (lost), "
                "e.g. {records}"
            ).format(count=sum(lost.values()), records=", ".join(sorted(lost)[:3]))
        )
    return problems


def _unfinished(job: Job) -> list[str]:
    """The transactions the job's sinks left open or pre-committed after the run."""
    problems = []
    graph = job.graph
    for task in graph.tasks:
        leftovers = getattr(graph.function(task), "leftovers", None)
        if graph.kind(task) != "sink" or leftovers is None:
            continue
        left = list(leftovers(str(task)))
        if left:
            problems.append(
                _(
                    "{task} left {count} transaction(s) unfinished after the run ({names}): "
                    "every transaction must end committed or aborted; a restore aborts what "
                    "the failed attempt left (self.leftovers(state.task), "
                    "self.recover_and_abort(txn))"
                ).format(task=task, count=len(left), names=", ".join(map(str, left[:3])))
            )
    return problems


def _restarted(run: SparkRun) -> list[str]:
    """What the run did after that failure."""
    return [
        _("(the run then restarted from checkpoint {n} and went on)").format(n=run.restored[-1])
    ]


def _said(error: BaseException) -> list[str]:
    """What the run raised, with the line of the student's code that raised it."""
    lines = [f"{type(error).__name__}: {error}"]
    call = getattr(error, "student_call", None)
    where = getattr(error, "student_line", None)
    if call:
        lines.append(
            _("raised by your {call}").format(call=call)
            + (f", {say_where(where)}" if where else "")
        )
    return lines


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else f"{text[:117]}..."


def _auditing_storage(url: str, job: Job) -> CheckpointStorage:
    """Checkpoint storage that reads every checkpoint back as it completes and keeps, in
    ``audited``, why it is not a consistent cut (:func:`~absnb.sim.checks.snapshot_problems`)."""
    from absnb.runtime.storage.checkpoints import CheckpointStorage
    from absnb.sim.checks import snapshot_problems

    class Auditing(CheckpointStorage):
        audited: dict[int, list[str]]

        def complete(
            self, job_id: str, checkpoint_id: CheckpointId, *args: Any, **kwargs: Any
        ) -> None:
            super().complete(job_id, checkpoint_id, *args, **kwargs)
            snapshot: GlobalSnapshot | None = self.latest(job_id, job.graph.fingerprint)
            if snapshot is None or snapshot.checkpoint_id != checkpoint_id:
                got = None if snapshot is None else snapshot.checkpoint_id
                self.audited[checkpoint_id] = [
                    _("read back checkpoint {got} instead").format(got=got)
                ]
            else:
                self.audited[checkpoint_id] = snapshot_problems(job, snapshot)

    storage = Auditing(url)
    storage.audited = {}
    return storage
