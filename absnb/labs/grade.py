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

from absnb.i18n import N_
from absnb.labs.lab import Lab
from absnb.labs.registry import lab_for
from absnb.labs.report import Counterexample, LabReport, PartResult
from absnb.labs.search import counterexample

PARTS = (
    N_("a. scripted cases at one task"),
    N_("b. random runs, with and without crashes"),
    N_("c. every interleaving of small jobs"),
    N_("d. on Spark"),
)
"""The parts, in English in a report's data (``report.failed_part.part``) and translated
where the report is shown."""
EARLIER = N_("an earlier part failed")
"""The summary of a part not run because an earlier one failed."""


def check(handler_class: type[Any], lab: str | None = None, *, spark: bool = False) -> LabReport:
    """Check a student's handler class, part by part, stopping at the first failure.

    a. scripted cases at one task, compared after every step with the package's own
       handler (ABS: Flink's ``AlignedCheckpointsTest``; Chandy-Lamport: seed 001's bank);
    b. seeded random runs, with and without a crash: every snapshot a consistent cut, the
       money adding up, nothing left blocked or pending, the output exactly once;
    c. every interleaving of small jobs (breadth-first, bounds stated in the report);
    d. Spark: not run (the Spark runtime takes a protocol by name, not a class).

    For any failure, the report carries the shortest schedule of the simulator that shows
    it (part c's searches), in words, and ``report.stepper()`` opens the stepper there.

    Args:
        handler_class: a subclass of a lab's base class
            (:class:`~absnb.labs.handler.AbsHandler`,
            :class:`~absnb.labs.chandy_lamport.handler.MarkerHandler`), or the package's
            own handler (the known-good one).
        lab: the lab (``"abs"``, ``"chandy-lamport"``); None: the lab whose base class
            ``handler_class`` subclasses.
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
    parts.extend(PartResult(p, "not run", EARLIER) for p in PARTS[len(parts) : 3])
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
        return PartResult(PARTS[3], "not run", EARLIER)
    java = "Java found" if shutil.which("java") else "no Java"
    return PartResult(
        PARTS[3],
        "not run",
        f"{java}, but the Spark runtime takes a protocol by name and cannot run a class "
        "defined here yet",
    )
