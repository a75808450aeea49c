"""The labs' check: scripted cases, random runs, exhaustive search, and Spark, in order.

:func:`check` picks the lab (:mod:`absnb.labs.registry`), stops at the first part that
fails and, for any failure, looks for the shortest run of the simulator that shows the bug
(part c's breadth-first searches), told in words and ready to step through
(:meth:`~absnb.labs.report.LabReport.stepper`).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Any

from absnb.labs.lab import Lab
from absnb.labs.registry import lab_for
from absnb.labs.report import Counterexample, LabReport, PartResult
from absnb.labs.search import counterexample

PARTS = (
    "a. scripted cases at one task",
    "b. random runs, with and without crashes",
    "c. every interleaving of small jobs",
    "d. on Spark",
)


def check(handler_class: type[Any], lab: str | None = None, *, spark: bool = False) -> LabReport:
    """Check a student's handler class, part by part, stopping at the first failure.

    a. scripted cases at one task, compared after every step with the package's own
       handler (ABS: Flink's ``AlignedCheckpointsTest``; Chandy-Lamport: seed 001's bank;
       two-phase commit: Flink's ``TwoPhaseCommitSinkFunctionTest``, against
       :class:`~absnb.sinks.MemorySink`);
    b. seeded random runs, with and without a crash: every snapshot a consistent cut, the
       money adding up, nothing left blocked or pending, the output exactly once (and for
       a sink, nothing visible before its checkpoint completes);
    c. every interleaving of small jobs (breadth-first, bounds stated in the report);
    d. Spark: not run (the Spark runtime takes a protocol by name, not a class).

    For any failure, the report carries the shortest schedule of the simulator that shows
    it (part c's searches), in words, and ``report.stepper()`` opens the stepper there.

    Args:
        handler_class: a subclass of a lab's base class
            (:class:`~absnb.labs.handler.AbsHandler`,
            :class:`~absnb.labs.chandy_lamport.handler.MarkerHandler`,
            :class:`~absnb.labs.two_phase_commit.handler.TransactionalSink`), or the
            package's own handler or sink (the known-good one).
        lab: the lab (``"abs"``, ``"chandy-lamport"``, ``"two-phase-commit"``); None: the
            lab whose base class ``handler_class`` subclasses.
        spark: also try part d.

    Raises:
        InvalidValueError: an unknown lab.
        InvalidTypeError: ``handler_class`` is not a class of that lab (or of any lab).
    """
    chosen = lab_for(handler_class, lab)
    parts: list[PartResult] = []
    found: Counterexample | None = None
    steps: list[Callable[[type[Any]], tuple[PartResult, Counterexample | None]]] = [
        lambda c: (chosen.scripted(c), None),
        lambda c: (chosen.random_runs(c), None),
        lambda c: exhaustive(chosen, c),
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
        found = shortest(chosen, handler_class)
    return LabReport(chosen.name, handler_class.__name__, parts, found)


def exhaustive(lab: Lab, handler_class: type[Any]) -> tuple[PartResult, Counterexample | None]:
    """Part c: each of the lab's searches in turn; the first violation is the
    counterexample."""
    part = PARTS[2]
    states = 0
    for search in lab.searches:
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
    done = "; ".join(f"{s.title} ({s.bounds()})" for s in lab.searches)
    return PartResult(part, "passed", f"{states:,} states: {done}"), None


def shortest(lab: Lab, handler_class: type[Any]) -> Counterexample | None:
    """The shortest schedule of the first of the lab's searches that shows a failure (None
    when no run of the simulator within their bounds shows one)."""
    for search in lab.searches:
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
