"""``absnb lab grade FILE --lab NAME``: grade a student's handler outside the notebook.

FILE is a ``.py`` file or a lab notebook (:mod:`absnb.labs.load`). The command prints the
report of :func:`absnb.labs.check <absnb.labs.grade.check>` and a score per part; with
``--json PATH`` it writes the scores in the results format of Gradescope that Otter-Grader
writes (:mod:`absnb.labs.results`); with ``--json -`` the JSON alone goes to stdout and the
report to stderr. Each part has a time limit (``--timeout``); part d, one run on Spark where
Java is, is reported but not scored, and ``--no-spark`` skips it. The exit code is 0 when every
part passed, 1 when one did not (or the file does not run: then every part scores
nothing), 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from absnb.core.errors import InvalidValueError


def cmd_lab(args: argparse.Namespace) -> int:
    """Grade ``args.file`` for lab ``args.lab``."""
    from absnb.labs.grade import check
    from absnb.labs.load import StudentCodeError, handler_class
    from absnb.labs.registry import LABS
    from absnb.labs.results import results, score_lines, unrunnable

    if args.lab not in LABS:
        names = ", ".join(LABS)
        args.subparser.error(f"--lab {args.lab!r} is no lab: choose one of {names}")
    try:
        handler = handler_class(args.file, args.lab, args.handler)
    except (StudentCodeError, InvalidValueError) as e:
        print(f"absnb lab grade: {args.file} does not run: {e}", file=sys.stderr)
        _write(args.json, unrunnable(args.lab, str(e)))
        return 1
    report = check(handler, args.lab, spark=not args.no_spark, timeout=args.timeout)
    out = sys.stderr if args.json == "-" else sys.stdout  # stdout: the JSON alone
    print(report, file=out)
    print("\n".join(score_lines(report)), file=out)
    _write(args.json, results(report))
    return 0 if report.passed else 1


def _write(path: str | None, found: dict[str, Any]) -> None:
    if path is None:
        return
    text = json.dumps(found, indent=2, ensure_ascii=False)
    if path == "-":
        print(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text + "\n")
