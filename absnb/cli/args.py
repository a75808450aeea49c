"""The ``absnb`` argument parser and the types of its arguments.

A bad value exits with code 2 and one line on stderr naming the value and what is allowed
(argparse's usage error), before anything runs.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, NoReturn

from absnb.experiments.bench import DEFAULT_MIN_PAUSE, DEFAULT_SCALE
from absnb.experiments.paper import BASE_KEYS, BASE_RECORDS
from absnb.jobs import BUILDERS
from absnb.jobs.custom import is_custom
from absnb.protocols import PROTOCOLS

COMMANDS = ("run", "replay", "explore", "bench", "notebooks", "lab")
RUNTIMES = ("sim", "spark")


class StoreOnce(argparse._StoreAction):
    """``store``, refusing an option given twice: argparse keeps the last value silently,
    so ``--crash B@3 --crash B@5`` would run one crash and drop the other."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        given = namespace.__dict__.setdefault("_given_once", {})
        if option_string is not None and self.dest in given:
            first, second = (_shown(v) for v in (given[self.dest], values))
            parser.error(f"{option_string} given twice ({first}, then {second}): give it once")
        given[self.dest] = values
        setattr(namespace, self.dest, values)


def _shown(value: object) -> str:
    """An option's value as written: ``B@3`` for a crash spec."""
    return "@".join(map(str, value)) if isinstance(value, tuple) else str(value)


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit code 2), and whose
    options may each be given once (:class:`StoreOnce`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "store", StoreOnce)
        self.register("action", None, StoreOnce)

    def error(self, message: str) -> NoReturn:
        """Exit with status 2 and ``message``, pointing to ``--help``."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def path_spec(text: str) -> str:
    """A file path, not empty (an empty one would be skipped, or read as the folder ``.``)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not a file path: name the file")
    return text


def crash_spec(text: str) -> tuple[str, int]:
    """``count[1]@40`` -> ("count[1]", 40)."""
    task, sep, step = text.rpartition("@")
    if not sep or not task or not step.isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not TASK@STEP: write the task as printed and the step it crashes "
            "at (on Spark: the records it has consumed), e.g. count[1]@40 or B@12"
        )
    return task, int(step)


def accounts_spec(text: str) -> dict[str, int]:
    """``A=10000,B=5000`` -> {"A": 10000, "B": 5000}."""
    accounts: dict[str, int] = {}
    for part in text.split(","):
        name, sep, balance = part.strip().partition("=")
        if not sep or not name or not balance.strip().lstrip("-").isdigit():
            raise argparse.ArgumentTypeError(
                f"{part.strip()!r} is not NAME=BALANCE: write the accounts as A=10000,B=5000"
            )
        if name.strip() in accounts:
            raise argparse.ArgumentTypeError(
                f"account {name.strip()!r} is named twice in {text!r}: give each account once"
            )
        accounts[name.strip()] = int(balance)
    return accounts


def natural(text: str) -> int:
    """A whole number >= 0."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def counting(text: str) -> int:
    """A whole number >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(text)


def positive(text: str) -> float:
    """A finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number > 0")
    return value


MAX_SCALE = 256.0
"""The largest ``absnb bench --scale``: 32 times the default's 3.2 M records per run, about
100 M records and minutes per run; beyond it a run would not finish on one machine."""


def scale_spec(text: str) -> float:
    """A bench scale: a number > 0, at most :data:`MAX_SCALE`."""
    value = positive(text)
    if value > MAX_SCALE:
        raise argparse.ArgumentTypeError(
            f"{text!r} is more than the largest scale, {MAX_SCALE:g}: a run would not finish"
        )
    return value


def non_negative(text: str) -> float:
    """A finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number >= 0")
    return value


def interval_spec(text: str) -> float:
    """A checkpoint interval: a number >= 0 (0: no periodic checkpoints); the simulator
    further needs a whole number of steps (checked once the runtime is known)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an interval: give a number >= 0 (steps in the simulator, "
            "seconds on Spark; 0 for no periodic checkpoints)"
        )
    return value


def job_spec(text: str) -> str:
    """A built-in job's name, or a user's builder as ``package.module:function``."""
    if text in BUILDERS or is_custom(text):
        return text
    raise argparse.ArgumentTypeError(
        f"unknown job {text!r}: choose one of {', '.join(BUILDERS)}, or name your own builder "
        "as package.module:function"
    )


def protocol_spec(text: str) -> str:
    """A protocol's name."""
    if text not in PROTOCOLS:
        raise argparse.ArgumentTypeError(
            f"unknown protocol {text!r}: choose one of {', '.join(PROTOCOLS)}"
        )
    return text


def add_job_options(p: argparse.ArgumentParser) -> None:
    """The options that say which job to run (``run`` and ``explore``)."""
    p.add_argument(
        "--job",
        type=job_spec,
        default="bank_transfer",
        metavar="JOB",
        help=f"one of {', '.join(BUILDERS)}, or your own builder as package.module:function "
        "(a function returning an absnb Job; default bank_transfer)",
    )
    p.add_argument(
        "--protocol",
        type=protocol_spec,
        help=f"one of {', '.join(PROTOCOLS)} (default: chandy-lamport for the bank, abs for "
        "word_count, abs-cyclic for cyclic)",
    )
    p.add_argument(
        "--seed",
        type=natural,
        default=1,
        metavar="N",
        help="seed of the schedule and of the bank's transfers (default 1)",
    )
    p.add_argument(
        "--transfers",
        type=natural,
        metavar="N",
        help="bank: random transfers in the accounts' input logs (default 20)",
    )
    p.add_argument(
        "--accounts",
        type=accounts_spec,
        metavar="A=10000,B=5000",
        help="bank: accounts and their balances",
    )
    p.add_argument(
        "--parallelism",
        type=counting,
        metavar="N",
        help="word_count: N sources, counters and sinks; cyclic: N sources and N tasks of "
        "each other operator",
    )
    p.add_argument(
        "--sink",
        choices=["collect", "two-phase-commit", "at-least-once"],
        help="word_count: what the sinks write to (default collect; two-phase-commit and "
        "at-least-once write to an in-memory external store)",
    )
    p.add_argument(
        "--allow-deadlock",
        action="store_true",
        help="run ABS Algorithm 1 on a cyclic graph anyway (it deadlocks)",
    )
    p.add_argument(
        "--alignment-timeout",
        type=positive,
        metavar="T",
        help="with abs: switch to unaligned at a task T after it first heard of a checkpoint "
        "(steps in the simulator, seconds on Spark), if it is still aligning it",
    )
    p.add_argument(
        "--checkpoint-timeout",
        type=non_negative,
        metavar="T",
        help="abort a checkpoint still pending T after its trigger (steps in the simulator, "
        "seconds on Spark)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``absnb`` argument parser."""
    parser = Parser(prog="absnb", description="Distributed snapshots you can step through.")
    commands = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}")
    commands.required = True
    run = commands.add_parser(
        "run", help="run a job with a seeded random schedule, or on Spark (--runtime spark)"
    )
    add_job_options(run)
    run.add_argument("--runtime", choices=RUNTIMES, default="sim", help="default sim")
    run.add_argument(
        "--interval",
        type=interval_spec,
        metavar="N",
        help="between periodic checkpoints: steps in the simulator (default 5), seconds on "
        "Spark (default 1); 0 for none",
    )
    run.add_argument(
        "--crash",
        type=crash_spec,
        metavar="TASK@N",
        help="crash a task: in the simulator at step N, on Spark once it has consumed N "
        "records, e.g. count[1]@40",
    )
    run.add_argument("--recovery", choices=["full", "partial"], default="full")
    run.add_argument(
        "--save-trace", type=path_spec, metavar="FILE", help="write the run as a trace file"
    )
    run.add_argument("--json", action="store_true", help="print one JSON object")
    spark = run.add_argument_group("Spark (--runtime spark)")
    spark.add_argument("--master", default="local[*]", help="Spark master URL (local[*])")
    spark.add_argument(
        "--verbose",
        action="store_true",
        help="show Spark's own log (the JVM's lines) as it runs; also ABSNB_SPARK_LOG=1",
    )
    spark.add_argument(
        "--input", type=path_spec, metavar="PATH", help="word_count: text files to count"
    )
    spark.add_argument(
        "--crash-kind",
        choices=["raise", "kill"],
        default="raise",
        help="raise an error in the task, or kill its Python worker (default raise)",
    )
    spark.add_argument(
        "--source-rate",
        type=positive,
        metavar="N",
        help="the most input lines (or transfers) each source reads per second",
    )
    spark.add_argument("--max-restarts", type=natural, default=3, metavar="N", help="default 3")
    spark.add_argument(
        "--tolerable-failed-checkpoints",
        type=natural,
        default=0,
        metavar="N",
        help="checkpoints in a row that may fail to be written (a full disk) while the job "
        "goes on; one more stops it (default 0: the first stops it, as in Flink)",
    )
    spark.add_argument(
        "--crash-after-checkpoint",
        type=counting,
        metavar="K",
        help="with --crash TASK@N: crash once checkpoint K has completed and the task has "
        "consumed N records more, so that the restart restores checkpoint K",
    )
    spark.add_argument(
        "--save-events", metavar="PATH", help="write the run's event log as JSON lines"
    )
    rep = commands.add_parser("replay", help="replay a trace file (JSON lines)")
    rep.add_argument("file", type=path_spec, help="the trace file")
    rep.add_argument("--json", action="store_true", help="print one JSON object")
    exp = commands.add_parser(
        "explore", help="explore every interleaving of a small job (exhaustive search)"
    )
    add_job_options(exp)
    exp.add_argument(
        "--checkpoints",
        type=natural,
        default=1,
        metavar="N",
        help="checkpoints each interleaving may trigger (default 1)",
    )
    exp.add_argument("--crashes", action="store_true", help="also crash every task at every step")
    exp.add_argument(
        "--ends",
        action="store_true",
        help="also let every finished sender end each of its channels at every step where it "
        "may (end of input, FLIP-147), as a Spark run does at its end",
    )
    exp.add_argument(
        "--max-states",
        type=counting,
        default=100_000,
        metavar="N",
        help="stop after N distinct states (default 100,000)",
    )
    exp.add_argument(
        "--max-depth",
        type=counting,
        metavar="N",
        help="steps from the start (default: none; 10 with --crashes)",
    )
    exp.add_argument(
        "--save-trace",
        type=path_spec,
        metavar="FILE",
        help="write a counterexample as a trace to replay",
    )
    exp.add_argument("--json", action="store_true", help="print one JSON object")
    bench = commands.add_parser(
        "bench", help="run the paper's experiments on Spark (local[4]) and print tables"
    )
    bench.add_argument(
        "--scale",
        type=scale_spec,
        default=DEFAULT_SCALE,
        metavar="X",
        help=f"input size of the paper's Figure 5 job: {BASE_RECORDS:,}*X generated records "
        f"over {BASE_KEYS:,}*X keys per run (default {DEFAULT_SCALE:g})",
    )
    bench.add_argument(
        "--only",
        choices=["fig6", "fig7", "alignment", "recovery"],
        action="append",
        help="run only this experiment (repeatable; default: all)",
    )
    bench.add_argument(
        "--repeats",
        type=counting,
        default=1,
        metavar="N",
        help="run Figures 6 and 7 N times over and print medians (default 1)",
    )
    bench.add_argument(
        "--storage-latency",
        type=non_negative,
        default=0.0,
        metavar="S",
        help="model a remote checkpoint store: every durable checkpoint write waits S "
        "seconds first (e.g. 0.1; default 0: local disk at its own speed)",
    )
    bench.add_argument(
        "--min-pause",
        type=non_negative,
        default=DEFAULT_MIN_PAUSE,
        metavar="S",
        help="seconds after a completed checkpoint before the next periodic one (Flink's min "
        f"pause between checkpoints; default {DEFAULT_MIN_PAUSE:g})",
    )
    bench.add_argument(
        "--master",
        default="local[4]",
        help="the Spark master to run on (default local[4]; e.g. spark://host:7077)",
    )
    bench.add_argument(
        "--verbose",
        action="store_true",
        help="show Spark's own log (the JVM's lines) as it runs; also ABSNB_SPARK_LOG=1",
    )
    bench.add_argument(
        "--json",
        metavar="PATH",
        help="also write the tables, targets, peak memory and machine as JSON to PATH "
        "(- for stdout)",
    )
    bench.add_argument(
        "--backpressure",
        action="store_true",
        help="run the checkpointing-under-backpressure experiment instead (aligned, "
        "unaligned, aligned with a timeout, at-least-once; simulator and Spark)",
    )
    books = commands.add_parser(
        "notebooks", help="write the course's notebooks and the data they read into a folder"
    )
    books.add_argument(
        "dir",
        nargs="?",
        default="absnb-notebooks",
        metavar="DIR",
        help="the folder to write (default ./absnb-notebooks): DIR/notebooks and DIR/datasets",
    )
    books.add_argument(
        "--force", action="store_true", help="overwrite files that differ from the course's"
    )
    books.add_argument(
        "--lang",
        choices=("en", "ko", "zh"),
        default="en",
        help="the course's language: en (default), ko (한국어: DIR/notebooks/ko) or "
        "zh (中文: DIR/notebooks/zh)",
    )
    lab = commands.add_parser("lab", help="grade a lab: a student's handler, outside the notebook")
    lab_commands = lab.add_subparsers(dest="lab_command", metavar="{grade}")
    lab_commands.required = True
    grade = lab_commands.add_parser(
        "grade",
        help="check a handler class in a .py file or a lab notebook: the report, a score per "
        "part, and with --json the scores for an autograder",
    )
    grade.add_argument("file", metavar="FILE", help="a .py file or a lab notebook (.ipynb)")
    grade.add_argument(
        "--lab", required=True, help="the lab: abs, abs-cyclic, chandy-lamport, two-phase-commit"
    )
    grade.add_argument(
        "--handler",
        metavar="CLASS",
        help="the class to grade (default: the last one FILE defines that the lab checks)",
    )
    grade.add_argument(
        "--json",
        metavar="PATH",
        help="also write the scores in Gradescope's results format (Otter-Grader's) to PATH "
        "(- for stdout)",
    )
    grade.add_argument(
        "--timeout",
        type=positive,
        default=60.0,
        metavar="S",
        help="each part's time limit in seconds (default 60): a part past it fails",
    )
    grade.add_argument(
        "--no-spark",
        action="store_true",
        help="skip part d, the run on Spark (tens of seconds; it runs only where Java is)",
    )
    for sub in (run, rep, exp, bench, books, grade):
        sub.set_defaults(subparser=sub)
    return parser
