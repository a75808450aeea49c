"""The lab's check: scripted cases, random runs, exhaustive search, and Spark, in order.

:func:`check` stops at the first part that fails and, for any failure, looks for the
shortest run of the simulator that shows the bug (part c's breadth-first searches), told
in words and ready to step through (:meth:`~absnb.labs.report.LabReport.stepper`).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable

from absnb.core.errors import InvalidTypeError, InvalidValueError
from absnb.labs.cases import scripted_cases
from absnb.labs.report import Counterexample, LabReport, PartResult
from absnb.labs.runs import RunFailure, run_one, runs
from absnb.labs.search import SEARCHES, counterexample
from absnb.protocols.aligning import AligningHandler

LABS = ("abs",)
"""The labs there are: ABS Algorithm 1."""

PARTS = (
    "a. scripted cases at one task",
    "b. random runs, with and without crashes",
    "c. every interleaving of small jobs",
    "d. on Spark",
)


def check(
    handler_class: type[AligningHandler], lab: str = "abs", *, spark: bool = False
) -> LabReport:
    """Check a student's handler class, part by part, stopping at the first failure.

    a. scripted cases at one task (Flink's ``AlignedCheckpointsTest``), compared after every
       step with the package's own Algorithm 1;
    b. seeded random runs of word count and of an acyclic bank, with and without a crash:
       every snapshot a consistent cut, the money adding up, nothing left blocked, the
       output exactly once;
    c. every interleaving of small jobs (breadth-first, bounds stated in the report);
    d. Spark: not run (the Spark runtime takes a protocol by name, not a class).

    For any failure, the report carries the shortest schedule of the simulator that shows
    it (part c's searches), in words, and ``report.stepper()`` opens the stepper there.

    Args:
        handler_class: a subclass of :class:`~absnb.labs.handler.AbsHandler` (or the package's own
            :class:`~absnb.protocols.aligned.AlignedBarrierHandler`, the known-good one).
        lab: the lab (only ``"abs"`` so far).
        spark: also try part d.

    Raises:
        InvalidValueError: an unknown lab.
        InvalidTypeError: ``handler_class`` is not a barrier-aligning handler class.
    """
    if lab not in LABS:
        raise InvalidValueError(f"unknown lab {lab!r}: choose one of {', '.join(LABS)}")
    if not (isinstance(handler_class, type) and issubclass(handler_class, AligningHandler)):
        raise InvalidTypeError(
            f"check needs a class that subclasses absnb.labs.AbsHandler, not {handler_class!r:.80}"
        )
    parts: list[PartResult] = []
    found: Counterexample | None = None
    steps: list[Callable[[type[AligningHandler]], tuple[PartResult, Counterexample | None]]] = [
        lambda c: (scripted_cases(c), None),
        lambda c: (random_runs(c), None),
        exhaustive,
    ]
    for step in steps:
        start = time.perf_counter()
        result, found = step(handler_class)
        result.seconds = time.perf_counter() - start
        parts.append(result)
        if result.status != "passed":
            break
    failed = parts[-1].status == "failed"
    stopped = parts[-1].status != "passed"
    parts.extend(PartResult(p, "not run", "an earlier part failed") for p in PARTS[len(parts) : 3])
    parts.append(on_spark(spark, stopped))
    if failed and found is None:
        found = shortest(handler_class)
    return LabReport(lab, handler_class.__name__, parts, found)


def random_runs(handler_class: type[AligningHandler]) -> PartResult:
    """Part b."""
    part = PARTS[1]
    count = 0
    for run in runs():
        count += 1
        failure = run_one(run, handler_class)
        if failure is not None:
            return _run_failed(part, failure)
    return PartResult(
        part,
        "passed",
        f"{count} runs (word count 3 x 2 x 2 and the acyclic bank, half with a crash): every "
        "snapshot a consistent cut, money conserved, nothing blocked, output exactly once",
    )


def _run_failed(part: str, failure: RunFailure) -> PartResult:
    return PartResult(
        part,
        "failed",
        f"{failure.run.describe()}: at step {failure.step}",
        [failure.problem],
    )


def exhaustive(handler_class: type[AligningHandler]) -> tuple[PartResult, Counterexample | None]:
    """Part c: each search in turn; the first violation is the counterexample."""
    part = PARTS[2]
    states = 0
    for search in SEARCHES:
        found = search.run(handler_class)
        states += found.states
        if not found.ok:
            how = f"breadth-first over {search.title}: {search.bounds()}"
            result = PartResult(
                part,
                "failed",
                f"{search.title} ({search.bounds()}), after {found.states:,} states",
                [found.violation or ""],
            )
            return result, counterexample(search, handler_class, found, how)
    done = "; ".join(f"{s.title} ({s.bounds()})" for s in SEARCHES)
    return PartResult(part, "passed", f"{states:,} states: {done}"), None


def shortest(handler_class: type[AligningHandler]) -> Counterexample | None:
    """The shortest schedule of the first of part c's searches that shows a failure (None
    when no run of the simulator within their bounds shows one)."""
    for search in SEARCHES:
        found = search.run(handler_class)
        if not found.ok:
            how = f"breadth-first over {search.title}: {search.bounds()}"
            return counterexample(search, handler_class, found, how)
    return None


def on_spark(spark: bool, failed: bool) -> PartResult:
    """Part d: not run. The Spark runtime ships a protocol to its executors by name, and a
    student's class (defined in a notebook) is no protocol it knows."""
    if not spark:
        return PartResult(PARTS[3], "not run", "spark=False")
    if failed:
        return PartResult(PARTS[3], "not run", "an earlier part failed")
    java = "Java found" if shutil.which("java") else "no Java"
    return PartResult(
        PARTS[3],
        "not run",
        f"{java}, but the Spark runtime takes a protocol by name and cannot run a class "
        "defined here yet",
    )
