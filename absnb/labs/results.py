"""A lab's report as an autograder reads it: a score per part, in the results format of
Gradescope that Otter-Grader writes (``{"score", "tests": [{"name", "score", "max_score",
"output", "visibility"}]}``), and as lines of text.

Parts a to c score one point each when they pass; part d (Spark) is not scored, since it
cannot run a student's class. A part that did not run scores nothing, and says why.
"""

from __future__ import annotations

from typing import Any

from absnb.labs.report import LabReport, PartResult

SCORED = ("a.", "b.", "c.")
"""The parts that score, by their letter."""


def _scored(report: LabReport) -> list[PartResult]:
    return [p for p in report.parts if p.part.startswith(SCORED)]


def results(report: LabReport) -> dict[str, Any]:
    """``report`` in Gradescope's results format (Otter-Grader's): a test per scored part,
    with the report's text as the whole submission's output."""
    tests = [
        {
            "name": p.part,
            "score": 1.0 if p.status == "passed" else 0.0,
            "max_score": 1.0,
            "output": "\n".join(p.lines()),
            "status": "passed" if p.status == "passed" else "failed",
            "visibility": "visible",
        }
        for p in _scored(report)
    ]
    return {
        "score": sum(t["score"] for t in tests),
        "max_score": float(len(tests)),
        "output": str(report),
        "tests": tests,
    }


def unrunnable(lab: str, message: str) -> dict[str, Any]:
    """The results of a submission that does not run (no part could): nothing scores."""
    parts = [
        PartResult(p, "failed", message)
        for p in (
            "a. scripted cases at one task",
            "b. random runs, with and without crashes",
            "c. every interleaving of small jobs",
        )
    ]
    return results(LabReport(lab, "(none)", parts))


def score_lines(report: LabReport) -> list[str]:
    """The score of each scored part, and the total, as text."""
    found = results(report)
    lines = [f"  {t['name']}: {t['score']:g} / {t['max_score']:g}" for t in found["tests"]]
    return ["Score:", *lines, f"  total: {found['score']:g} / {found['max_score']:g}"]
