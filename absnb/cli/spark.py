"""``absnb run --runtime spark``: the same job, protocol, interval and failure spec on PySpark
(:class:`~absnb.runtime.SparkRuntime`), with the report of a simulated run: the
checkpoints, their statistics (Flink's checkpoint history) and the verdicts.

Every argument is checked (:mod:`absnb.runtime.spark.run_args`) before a Spark session starts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings
from typing import TYPE_CHECKING, Any

from absnb.cli.jobs import default_protocol, make_job
from absnb.cli.report import json_safe, show_output
from absnb.core.errors import FailureNotFiredWarning
from absnb.core.format import show_value
from absnb.core.job import Job
from absnb.protocols import get_protocol

if TYPE_CHECKING:
    from absnb.runtime.spark.session import Session

DEFAULT_SECONDS = 1.0


def run_on_spark(args: argparse.Namespace) -> int:
    """Run the job on Spark and print the report; 0 when exactly-once (and, for the bank,
    conserved) holds, 1 when not."""
    if args.save_trace:
        args.subparser.error("--save-trace applies to the simulator only (--runtime sim)")
    if args.recovery != "full":
        args.subparser.error("--recovery partial: on Spark every task restarts (full recovery)")
    interval = DEFAULT_SECONDS if args.interval is None else args.interval or None
    job = make_job(args)
    protocol = args.protocol or default_protocol(job)
    if args.input is not None and job.builder != "word_count":
        args.subparser.error("--input applies to --job word_count only")
    from absnb.runtime.failures import Failure
    from absnb.runtime.spark.run_args import check_run

    failures = []
    if args.crash_after_checkpoint is not None and not args.crash:
        args.subparser.error("--crash-after-checkpoint K needs --crash TASK@N (N: records more)")
    if args.crash:
        task, records = args.crash
        after = args.crash_after_checkpoint
        failures.append(
            Failure(task, after_records=records, kind=args.crash_kind, after_checkpoint=after)
        )
    source_rate = args.source_rate
    if source_rate is None and args.input is None and interval:
        source_rate = paced_rate(job, interval)
    check_run(
        job,
        protocol,
        interval,
        failures,
        args.max_restarts,
        args.allow_deadlock,
        source_rate,
        tolerable_failed_checkpoints=args.tolerable_failed_checkpoints,
    )
    get_protocol(protocol, job.graph, allow_deadlock=args.allow_deadlock)  # names the choices
    from absnb.cli.spark_log import shown_on_failure, start_session
    from absnb.runtime import RestartLimitError, StorageError
    from absnb.runtime.spark import SparkRuntime, quiet_task_failures

    runtime = SparkRuntime(start_session(args.master, args))
    try:
        with (
            quiet_task_failures(runtime.spark),
            shown_on_failure(runtime.spark),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore", FailureNotFiredWarning)  # the report says so
            run = runtime.run(
                job,
                protocol,
                checkpoint_interval=interval,
                failures=failures,
                max_restarts=args.max_restarts,
                allow_deadlock=args.allow_deadlock,
                inputs=args.input,
                source_rate=source_rate,
                alignment_timeout=args.alignment_timeout,
                checkpoint_timeout=args.checkpoint_timeout,
                tolerable_failed_checkpoints=args.tolerable_failed_checkpoints,
            )
    except (RestartLimitError, StorageError) as e:  # not bad input: the job kept failing
        print(f"absnb: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    expected = reference(runtime.spark, job, args.input)
    once = (
        sorted(run.output, key=repr) == sorted(expected, key=repr)
        if isinstance(expected, list)
        else run.output == expected
    )
    total = job.total
    conserved = None if total is None else sum(run.output.values()) == total
    rows = run.metrics.checkpoints().to_dict("records")
    if args.save_events:
        run.save_events(args.save_events)
    unfired = list(run.failures_not_fired.values())
    cuts = run.check_cuts()
    report = {
        "runtime": "spark",
        "master": args.master,
        "job": job.builder,
        "params": json_safe(job.params),
        "protocol": run.protocol,
        "topology": {
            "tasks": [str(t) for t in job.graph.tasks],
            "channels": [str(c) for c in job.graph.channels],
        },
        "hosts": len(run.hosts),
        "checkpoint_interval": interval,
        "crash": None
        if not failures
        else {
            "task": failures[0].task,
            "after_records": failures[0].after_records,
            "kind": failures[0].kind,
            "after_checkpoint": failures[0].after_checkpoint,
            "not_fired": unfired[0] if unfired else None,
        },
        "source_rate": source_rate,
        "checkpoints": json_safe(rows),
        "statistics": json_safe(statistics_of(rows)),
        "restarts": run.restarts,
        "errors": run.errors,
        "restored": run.restored,
        "output": json_safe(run.output),
        "verdicts": {
            "terminated": True,
            "exactly_once": once,
            "conserved": conserved,
            "consistent_cuts": not cuts,
        },
        "cut_problems": cuts,
        "seconds": run.seconds,
    }
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print("\n".join(spark_lines(report, run.output, total)))
    return 0 if once and conserved is not False and not unfired and not cuts else 1


def paced_rate(job: Job, interval: float) -> float:
    """A source rate (entries a second) at which the job's input lasts about five
    checkpoint intervals, so that checkpoints complete while it runs."""
    longest = max((len(log) for log in job.inputs.values()), default=0)
    return longest / (5 * interval) if longest else 1.0


def reference(spark: Session, job: Job, path: str | None) -> object:
    """The failure-free output: the simulator's, or for text files Spark's own word count
    as running counts (every count from 1 to a word's total, once)."""
    if path is None:
        from absnb.sim.checks import reference_output

        return reference_output(job)
    from absnb.runtime.spark import word_count_answer_from

    answer = word_count_answer_from(spark, path)
    return sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


def statistics_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts by status and the median and largest end-to-end duration and alignment."""
    status = [r["status"] for r in rows]
    durations = [r["end_to_end_duration"] for r in rows if r["status"] == "COMPLETED"]
    aligned = [r["alignment_duration_max"] for r in rows if r["status"] == "COMPLETED"]
    aligned = [a for a in aligned if a is not None and a == a]
    return {
        "triggered": len(rows),
        "completed": status.count("COMPLETED"),
        "failed": status.count("FAILED"),
        "in_progress": status.count("IN_PROGRESS"),
        "duration_median": statistics.median(durations) if durations else None,
        "duration_max": max(durations) if durations else None,
        "alignment_max": max(aligned) if aligned else None,
    }


def cut_lines(report: dict[str, Any]) -> list[str]:
    """Whether every completed checkpoint is a consistent cut, from the run's own log."""
    if report["cut_problems"]:
        return [f"not a consistent cut: {p}" for p in report["cut_problems"]]
    if any(r["status"] == "COMPLETED" for r in report["checkpoints"]):
        return ["every snapshot is a consistent cut (checked from the run's own log)"]
    return []


def crash_line(crash: dict[str, Any]) -> str:
    """What the crash spec was, and whether it fired."""
    n = crash["after_records"] or 0
    records = f"{n:,} record{'s' * (n != 1)}"
    when = (
        f"once checkpoint {crash['after_checkpoint']} has completed and it has consumed "
        f"{records} more"
        if crash["after_checkpoint"] is not None
        else f"once it has consumed {records}"
    )
    line = f"crash: {crash['task']} {when} ({crash['kind']}), in the first attempt"
    return f"{line}; {crash['not_fired']}" if crash["not_fired"] else line


def ms(seconds: float | None) -> str:
    """``12 ms`` (or ``-`` when unknown)."""
    if seconds is None or seconds != seconds:
        return "-"
    return f"{seconds * 1000:,.0f} ms"


def spark_lines(report: dict[str, Any], output: Any, total: int | None) -> list[str]:
    """The text report of a Spark run."""
    topo = report["topology"]
    interval = report["checkpoint_interval"]
    lines = [
        f"{report['job']} with {report['protocol']} on Spark ({report['master']}): "
        f"{len(topo['tasks'])} tasks, {len(topo['channels'])} channels, {report['hosts']} hosts",
        f"a checkpoint every {interval:g} s" if interval else "no periodic checkpoints",
    ]
    if report["source_rate"] is not None:
        lines.append(f"sources read at most {report['source_rate']:g} lines a second")
    crash = report["crash"]
    if crash:
        lines.append(crash_line(crash))
    for i, error in enumerate(report["errors"]):
        restored = report["restored"][i + 1] if i + 1 < len(report["restored"]) else None
        lines.append(f"restart {i + 1}: {error}; restored checkpoint {restored or 'none'}")
    rows = report["checkpoints"]
    if not any(r["status"] == "COMPLETED" for r in rows):
        lines.append("no checkpoint completed")
    for r in rows:
        n = r["checkpoint_id"]
        if r["status"] == "COMPLETED":
            lines.append(
                f"checkpoint {n}: complete in {ms(r['end_to_end_duration'])} (attempt "
                f"{r['attempt']}), {r['num_acknowledged_subtasks']} of {r['num_subtasks']} "
                f"tasks, state {r['state_size']:,} bytes"
            )
        elif r["status"] == "FAILED":
            lines.append(
                f"checkpoint {n}: aborted (attempt {r['attempt']}): {r['failure_message']}"
            )
        else:
            lines.append(
                f"checkpoint {n}: still pending when the job finished, "
                f"{r['num_acknowledged_subtasks']} of {r['num_subtasks']} tasks"
            )
    s = report["statistics"]
    lines.append(
        f"checkpoint statistics: {s['triggered']} triggered, {s['completed']} completed, "
        f"{s['failed']} aborted, {s['in_progress']} pending at the end; end-to-end median "
        f"{ms(s['duration_median'])}, max {ms(s['duration_max'])}; alignment max "
        f"{ms(s['alignment_max'])}"
    )
    lines.append(f"output: {show_output(output)}")
    lines.extend(cut_lines(report))
    v = report["verdicts"]
    restarts = report["restarts"]
    lines.append(
        f"termination: yes, the job finished after {restarts} restart{'s' * (restarts != 1)}"
    )
    lines.append(
        "exactly-once: "
        + (
            "yes, the output equals the failure-free output"
            if v["exactly_once"]
            else "no, the output differs from the failure-free output"
        )
    )
    if v["conserved"] is not None:
        lines.append(
            f"conserved: yes, {show_value(total)} at the end"
            if v["conserved"]
            else f"conserved: no, the money does not add up to {show_value(total)}"
        )
    lines.append(f"{report['seconds']:.1f} seconds")
    return lines
