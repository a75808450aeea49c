"""``absnb lab grade FILE [--lab NAME] [--class NAME] [--json [OUT]] [--timeout S]
[--no-spark]``: a lab's check outside the notebook, scored per part, for an autograder.

FILE is a student's ``.py`` file or lab notebook (``.ipynb``, its code cells run in order;
a cell that raises is skipped, as the grader reads only the classes). The class graded is
``--class``, or the last class FILE defines that a lab checks (``--lab`` picks the lab;
by default, the lab of that class). The checks run as :func:`absnb.labs.check
<absnb.labs.grade.check>` runs them, each part within ``--timeout`` seconds (where the
system has an interval timer), so that an endless loop in the student's code fails its
part instead of hanging the grader. The report is printed, then a score per part (parts
a to c, one point each, and d when it ran; ``--no-spark`` skips it); ``--json`` writes
the scores in Otter-Grader's and Gradescope's ``results.json`` form (``tests``: a name, a
score, a maximum and an output each; the ``score``). Exit status 0 when every part
passes, 1 otherwise, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import absnb.labs
from absnb.core.errors import AbsnbError
from absnb.labs.grade import PARTS, exhaustive, on_spark, shortest
from absnb.labs.lab import Lab
from absnb.labs.registry import LABS, lab_for
from absnb.labs.report import Counterexample, LabReport, PartResult

MODULE = "__lab__"
"""The module name FILE's code runs as (its classes are told apart by it)."""


class GradeInputError(AbsnbError, ValueError):
    """FILE cannot be read, or defines no class the lab checks."""


class PartTimeout(BaseException):
    """A part ran past its time (a BaseException, so that no lab catches it as a fault of
    the student's code)."""


def _code(path: Path) -> list[str]:
    """FILE's code: the whole ``.py`` file, or each code cell of a notebook."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise GradeInputError(f"cannot read {path}: {e.strerror or e}") from None
    if path.suffix != ".ipynb":
        return [text]
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError):
        raise GradeInputError(f"{path} is not a notebook (no cells in its JSON)") from None
    out = []
    for cell in cells:
        if cell.get("cell_type") == "code":
            lines = "".join(cell.get("source", "")).splitlines()
            out.append("\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!"))))
    return out


def load(path: Path) -> dict[str, Any]:
    """The names FILE defines. Its own calls of ``check`` are skipped (the grader checks).

    Raises:
        GradeInputError: FILE cannot be read, or a ``.py`` file raises.
    """
    namespace: dict[str, Any] = {"__name__": MODULE, "__file__": str(path)}
    real = absnb.labs.check
    absnb.labs.check = lambda *a, **k: None  # type: ignore[assignment]
    try:
        notebook = path.suffix == ".ipynb"
        for k, code in enumerate(_code(path)):
            name = f"{path} (cell {k + 1})" if notebook else str(path)
            try:
                exec(compile(code, name, "exec"), namespace)
            except Exception as e:
                if not notebook:
                    said = f"{path} raised {type(e).__name__}: {e}{_line(e, path)}"
                    raise GradeInputError(said) from None
    finally:
        absnb.labs.check = real
    return namespace


def _line(error: BaseException, path: Path) -> str:
    """`` (line N)`` of FILE where ``error`` was raised, if it was raised there."""
    lines = [f.lineno for f in traceback.extract_tb(error.__traceback__) if f.filename == str(path)]
    return f" (line {lines[-1]})" if lines else ""


def pick(namespace: dict[str, Any], lab: str | None, name: str | None) -> type[Any]:
    """The class to grade: ``name``, or the last one FILE defines that ``lab`` (or any lab)
    checks, neither a lab's base nor its reference.

    Raises:
        GradeInputError: no such class.
    """
    if name is not None:
        found = namespace.get(name)
        if not isinstance(found, type):
            raise GradeInputError(f"the file defines no class {name!r}")
        return found
    labs = [LABS[lab]] if lab in LABS else list(LABS.values())
    ours = [
        v
        for v in namespace.values()
        if isinstance(v, type)
        and v.__module__ == MODULE
        and any(x.takes(v) and v not in (x.base, x.reference) for x in labs)
    ]
    if not ours:
        bases = " or ".join(x.base_name for x in labs)
        raise GradeInputError(f"the file defines no subclass of {bases} to grade")
    return ours[-1]


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`PartTimeout` in the block after ``seconds`` (None, or no interval
    timer on this system: no limit)."""
    if seconds is None or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum: int, _frame: object) -> None:
        raise PartTimeout

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def grade(cls: type[Any], lab: Lab, timeout: float | None, *, spark: bool = True) -> LabReport:
    """:func:`~absnb.labs.grade.check`, each of parts a to c within ``timeout`` (part d,
    on Spark, cancels a run that never ends itself)."""
    steps: list[Callable[[type[Any]], tuple[PartResult, Counterexample | None]]] = [
        lambda c: (lab.scripted(c), None),
        lambda c: (lab.random_runs(c), None),
        lambda c: exhaustive(lab, c),
    ]
    parts: list[PartResult] = []
    found: Counterexample | None = None
    for part, step in zip(PARTS, steps, strict=False):
        start = time.perf_counter()
        try:
            with deadline(timeout):
                result, found = step(cls)
        except PartTimeout:
            result = PartResult(
                part,
                "failed",
                f"did not finish within {timeout:g} s: is there an endless loop in your code?",
            )
        result.seconds = time.perf_counter() - start
        parts.append(result)
        if result.status != "passed":
            break
    last = parts[-1]
    parts.extend(PartResult(p, "not run", "an earlier part failed") for p in PARTS[len(parts) : 3])
    parts.append(on_spark(lab, cls, spark=spark, failed=last.status != "passed"))
    if last.status == "failed" and found is None and not last.summary.startswith("did not"):
        try:
            with deadline(timeout):
                found = shortest(lab, cls)
        except PartTimeout:
            found = None
    return LabReport(lab.name, cls.__name__, parts, found)


def results(report: LabReport) -> dict[str, Any]:
    """The scores, as Otter-Grader's and Gradescope's ``results.json``: parts a to c, and
    part d when it ran."""
    tests = []
    for k, p in enumerate(report.parts):
        if k == 3 and p.status not in ("passed", "failed"):
            continue
        output = "\n".join(p.lines())
        if p.status == "failed" and report.counterexample is not None:
            output += "\n" + str(report.counterexample)
        tests.append(
            {
                "name": p.part,
                "score": 1.0 if p.status == "passed" else 0.0,
                "max_score": 1.0,
                "output": output,
            }
        )
    return {
        "score": sum(t["score"] for t in tests),
        "tests": tests,
        "lab": report.lab,
        "class": report.handler,
    }


def cmd_lab(args: argparse.Namespace) -> int:
    """``absnb lab grade``."""
    path = Path(args.file)
    cls = pick(load(path), args.lab_name, args.class_name)
    lab = lab_for(cls, args.lab_name)
    report = grade(cls, lab, args.timeout, spark=not args.no_spark)
    scored = results(report)
    print(report)
    marks = ", ".join(f"{t['name'].split('.')[0]} {t['score']:g}/1" for t in scored["tests"])
    print(f"score: {marks}; total {scored['score']:g}/{len(scored['tests'])}")
    if args.json == "-":
        print(json.dumps(scored, indent=1))
    elif args.json:
        Path(args.json).write_text(json.dumps(scored, indent=1) + "\n", encoding="utf-8")
    sys.stdout.flush()
    return 0 if report.passed else 1
