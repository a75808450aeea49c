"""The labs' check: scripted cases, random runs, exhaustive search, and Spark, in order.

:func:`check` picks the lab (:mod:`absnb.labs.registry`), stops at the first part that
fails and, for any failure, looks for the shortest run of the simulator that shows the bug
(part c's breadth-first searches), told in words and ready to step through
(:meth:`~absnb.labs.report.LabReport.stepper`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from absnb.i18n import N_
from absnb.i18n import gettext as _
from absnb.labs.lab import Lab
from absnb.labs.limit import PartTimeout, time_limit
from absnb.labs.registry import lab_for
from absnb.labs.report import Counterexample, LabReport, PartResult
from absnb.labs.search import counterexample
from absnb.labs.spark import spark_part

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
NO_SPARK = N_("skipped by spark=False (--no-spark)")
"""The summary of part d when the check was asked to skip it."""


def check(
    handler_class: type,
    lab: str | None = None,
    *,
    spark: bool = True,
    timeout: float | None = None,
) -> LabReport:
    """Check a student's handler class, part by part, stopping at the first failure.

    a. scripted cases at one task, compared after every step with the package's own
       handler (ABS: Flink's ``AlignedCheckpointsTest``; Chandy-Lamport: seed 001's bank;
       two-phase commit: Flink's ``TwoPhaseCommitSinkFunctionTest``, against
       :class:`~absnb.sinks.MemorySink`);
    b. seeded random runs, with and without a crash: every snapshot a consistent cut, the
       money adding up, nothing left blocked or pending, the output exactly once (and for
       a sink, nothing visible before its checkpoint completes);
    c. every interleaving of small jobs (breadth-first, bounds stated in the report);
    d. where Java is present, one run on Spark (:mod:`absnb.labs.spark`): the lab's job under
       the student's class at every task, several checkpoints and one failure; every
       checkpoint a consistent cut, the output exactly once (for the two-phase-commit lab:
       the student's sink writing to files every executor shares, its committed records the
       failure-free output once each, no transaction left unfinished). It takes seconds to
       tens of seconds (a Spark session's start included); without Java it is skipped, not
       failed.

    For any failure, the report carries the shortest schedule of the simulator that shows
    it (part c's searches), in words, and ``report.stepper()`` opens the stepper there.

    Args:
        handler_class: a subclass of a lab's base class
            (:class:`~absnb.labs.handler.AbsHandler`,
            :class:`~absnb.labs.cyclic.handler.CyclicAbsHandler`,
            :class:`~absnb.labs.chandy_lamport.handler.MarkerHandler`,
            :class:`~absnb.labs.two_phase_commit.handler.TransactionalSink`), or the
            package's own handler or sink (the known-good one).
        lab: the lab (``"abs"``, ``"abs-cyclic"``, ``"chandy-lamport"``,
            ``"two-phase-commit"``); None: the lab whose base class ``handler_class``
            subclasses (the nearest, when two do).
        spark: run part d once parts a-c pass (False: skip it, for a quicker check).
        timeout: each part's time limit in seconds (None: none); a part past it fails,
            saying so (:mod:`absnb.labs.limit`).

    Raises:
        InvalidValueError: an unknown lab.
        InvalidTypeError: ``handler_class`` is not a class of that lab (or of any lab).
    """
    chosen = lab_for(handler_class, lab)
    parts: list[PartResult] = []
    found: Counterexample | None = None
    steps: list[Callable[[type], tuple[PartResult, Counterexample | None]]] = [
        lambda c: (chosen.scripted(c), None),
        lambda c: (chosen.random_runs(c), None),
        lambda c: exhaustive(chosen, c),
    ]
    for name, step in zip(PARTS, steps, strict=False):
        start = time.perf_counter()
        try:
            with time_limit(timeout):
                result, found = step(handler_class)
        except PartTimeout:
            result, found = _timed_out(name, timeout), None
        result.seconds = time.perf_counter() - start
        parts.append(result)
        if result.status != "passed":
            break
    failed = parts[-1].status == "failed"
    stopped = parts[-1].status != "passed"
    parts.extend(PartResult(p, "not run", EARLIER) for p in PARTS[len(parts) : 3])
    parts.append(on_spark(chosen, handler_class, spark=spark, failed=stopped))
    if failed and found is None:
        try:
            with time_limit(timeout):
                found = shortest(chosen, handler_class)
        except PartTimeout:
            found = None
    return LabReport(chosen.name, handler_class.__name__, parts, found)


def _timed_out(part: str, timeout: float | None) -> PartResult:
    return PartResult(
        part,
        "failed",
        _(
            "stopped after {seconds} s, its time limit: does a decision loop forever, or wait "
            "for something that never comes?"
        ).format(seconds=f"{timeout:g}"),
    )


def exhaustive(lab: Lab, handler_class: type) -> tuple[PartResult, Counterexample | None]:
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


def shortest(lab: Lab, handler_class: type) -> Counterexample | None:
    """The shortest schedule of the first of the lab's searches that shows a failure (None
    when no run of the simulator within their bounds shows one)."""
    for search in lab.searches:
        found = search.run(handler_class)
        if not found.ok:
            how = f"breadth-first over {search.title}: {search.bounds()}"
            return counterexample(search, handler_class, found, how)
    return None


def on_spark(lab: Lab, handler_class: type, *, spark: bool, failed: bool) -> PartResult:
    """Part d: the lab's run on Spark, unless ``spark`` is False, an earlier part
    ``failed`` or the lab has none."""
    if not spark:
        return PartResult(PARTS[3], "not run", NO_SPARK)
    if failed:
        return PartResult(PARTS[3], "not run", EARLIER)
    if lab.spark is None:
        return PartResult(
            PARTS[3], "not run", _("the {lab} lab has no run on Spark").format(lab=lab.name)
        )
    return spark_part(lab.spark, handler_class)
