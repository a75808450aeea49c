"""The ``absnb`` command line: run a job in the simulator or on Spark, replay a trace,
explore every interleaving, or run the paper's benchmark.

    absnb run --job bank_transfer --seed 3 --crash B@30 --save-trace run.jsonl
    absnb run --job word_count --runtime spark --crash count[1]@100 --interval 0.2
    absnb run --job mypackage.jobs:my_job --save-trace mine.jsonl
    absnb replay run.jsonl --json
    absnb explore --job word_count --checkpoints 1
    absnb bench --scale 2 --only fig6
    absnb lab grade my_sink.py --lab two-phase-commit --json results.json

``run`` and ``replay`` print every completed snapshot, every aborted checkpoint (and why),
every checkpoint still pending at the end, and the verdicts (feasible, termination,
exactly-once, and for the bank the conserved total). Exit code 0 when every verdict holds,
1 when one fails or the run stops while a checkpoint is pending, 2 for bad input (one line
on stderr, no traceback). One module per command: :mod:`~absnb.cli.run`,
:mod:`~absnb.cli.spark`, :mod:`~absnb.cli.replay`, :mod:`~absnb.cli.explore`,
:mod:`~absnb.cli.lab`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable, Sequence

from absnb.cli.args import build_parser
from absnb.cli.report import Report, Verdicts, assess, json_safe
from absnb.core.errors import AbsnbError


def cmd_bench(args: argparse.Namespace) -> int:
    """``absnb bench``."""
    from absnb.cli.spark_log import shown_on_failure, start_session
    from absnb.experiments.bench import bench_json, print_bench, run_bench
    from absnb.experiments.paper import EXPERIMENTS
    from absnb.experiments.sessions import scratch_runtime

    if args.backpressure:
        from absnb.experiments.backpressure import on_spark, print_backpressure, simulate
        from absnb.runtime.spark import SparkRuntime

        sim = simulate()
        runtime = SparkRuntime(start_session(args.master, args))
        try:
            with shown_on_failure(runtime.spark):
                spark = on_spark(runtime, lines=max(20, int(40 * args.scale)))
        finally:
            runtime.spark.stop()
        print_backpressure(sim, spark)
        return 0
    runtime = scratch_runtime(
        start_session(args.master, args), storage_latency=args.storage_latency
    )
    try:
        with shown_on_failure(runtime.spark):
            result = run_bench(
                scale=args.scale,
                only=args.only or EXPERIMENTS,
                repeats=args.repeats,
                master=args.master,
                storage_latency=args.storage_latency,
                min_pause=args.min_pause,
                runtime=runtime,
            )
    finally:
        shutil.rmtree(runtime.checkpoint_dir, ignore_errors=True)
    print_bench(result)
    if args.json == "-":
        print(bench_json(result))
    elif args.json:
        with open(args.json, "w") as f:
            f.write(bench_json(result))
    return 0


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    if name == "run":
        from absnb.cli.run import cmd_run

        return cmd_run
    if name == "replay":
        from absnb.cli.replay import cmd_replay

        return cmd_replay
    if name == "explore":
        from absnb.cli.explore import cmd_explore

        return cmd_explore
    if name == "notebooks":
        from absnb.cli.notebooks import cmd_notebooks

        return cmd_notebooks
    if name == "lab":
        from absnb.cli.lab import cmd_lab

        return cmd_lab
    return cmd_bench


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        args.argv = None if argv is None else list(argv)
        code = _command(args.command)(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except SystemExit as e:  # argparse: --help, or a usage error
        return e.code if isinstance(e.code, int) else 2
    except BrokenPipeError:  # ``absnb replay run.jsonl | head``: the reader has gone
        _silence_stdout()
        return 141  # 128 + SIGPIPE, what a Unix tool killed by the signal reports
    except (AbsnbError, OSError) as e:
        print(f"absnb: error: {one_line(e)}", file=sys.stderr)
        return 2


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again
    (Python docs, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test's capture)
        pass


def one_line(error: BaseException) -> str:
    """An error's message on one line."""
    return " ".join(str(error).split()) or type(error).__name__


__all__ = ["Report", "Verdicts", "assess", "build_parser", "json_safe", "main"]
