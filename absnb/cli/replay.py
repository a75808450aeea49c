"""``absnb replay FILE``: run a trace's actions and report what happened, aborted and
pending checkpoints included. FILE is a path, or the name of a trace absnb ships under
``datasets/`` (``traces/seed_001.jsonl``), found wherever absnb's samples are."""

from __future__ import annotations

import argparse
from pathlib import Path

from absnb import datasets
from absnb.cli.drive import drive
from absnb.cli.progress import Progress
from absnb.cli.report import Report, assess
from absnb.core.errors import ActionNotEnabledError, TraceFormatError
from absnb.sim.schedulers import ScriptedScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.trace import load_trace


def trace_path(name: str) -> Path:
    """``name`` as a path if a file is there; else the sample of that name in absnb's
    ``datasets/`` folder, if it has one (so that a notebook names a shipped trace the same
    way wherever it is opened); else ``name``, for the loader's own "not found" message."""
    path = Path(name)
    if path.exists() or path.is_absolute():
        return path
    try:
        sample = datasets.datasets_dir() / path
    except datasets.DatasetNotFoundError:
        return path
    return sample if sample.is_file() else path


def cmd_replay(args: argparse.Namespace) -> int:
    """``absnb replay FILE``."""
    trace = load_trace(trace_path(args.file))
    stepper = Stepper(trace.world, ScriptedScheduler(trace.actions), history=False)
    try:
        with Progress("replay", "steps", len(trace.actions)) as progress:
            aborted = drive(stepper, progress)
    except ActionNotEnabledError as e:
        line = trace.lines[len(stepper.trace)]
        raise TraceFormatError(
            f"{trace.path}, line {line}: {e}. Change or remove this line so that the script "
            "only takes enabled actions"
        ) from None
    report = Report(
        stepper.world, trace.header, assess(stepper.world), aborted=aborted, times=trace.times
    )
    report.schedule = f"replay of {args.file}: {len(trace.actions)} actions"
    if trace.times is not None:
        report.schedule += f", from t=0 to t={trace.times[-1]:g}" if trace.times else ""
    report.extra = {"trace": args.file}
    return report.print(as_json=args.json)
