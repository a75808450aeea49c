"""Spark's own log on the command line: kept out of absnb's report, shown when a run fails.

By default ``absnb run --runtime spark`` and ``absnb bench`` start Spark with the JVM's
output (its start-up warnings, log4j's lines, the Python workers' stderr) sent to a log
file (:func:`absnb.runtime.spark.session.quiet_session`), so that the terminal shows absnb's
progress and report only. ``--verbose``, or the environment variable ``ABSNB_SPARK_LOG``
set to anything but ``0``, leaves Spark's log on stderr. When a run fails, the log's last
lines are written to stderr before the error, so Spark's own errors are never hidden.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from absnb.runtime.spark.session import Session


ENV_VAR = "ABSNB_SPARK_LOG"
"""Set to anything but ``0`` to see Spark's log as ``--verbose`` does."""

TAIL = 40
"""How many of the log's last lines a failed run shows."""


def wants_log(args: argparse.Namespace) -> bool:
    """True when Spark's log should stay on stderr (``--verbose`` or ``ABSNB_SPARK_LOG``)."""
    return bool(getattr(args, "verbose", False)) or os.environ.get(ENV_VAR, "") not in ("", "0")


def start_session(master: str, args: argparse.Namespace) -> Session:
    """A Spark session on ``master``: quiet unless :func:`wants_log`."""
    if wants_log(args):
        from absnb.runtime.spark import default_session

        return default_session(master)
    from absnb.experiments.sessions import quiet_session

    return quiet_session(master)


def log_tail(spark: Session, lines: int = TAIL, keep: bool = False) -> str:
    """The last ``lines`` lines of ``spark``'s log file, headed by its path ('' without one).
    With ``keep``, the log is first copied to a file of its own in the temporary folder,
    which outlives this process (a quiet session's log is removed when it exits), and the
    heading names the copy."""
    path = spark.conf.get("absnb.jvm_log", None)
    if not path or not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        text = f.read()
    if keep:
        fd, path = tempfile.mkstemp(prefix="absnb-spark-", suffix=".log")
        with os.fdopen(fd, "w") as copy:
            copy.write(text)
    tail = text.splitlines()[-lines:]
    return "\n".join([f"Spark's log ({path}), its last {len(tail)} lines:", *tail]) + "\n"


@contextmanager
def shown_on_failure(spark: Session) -> Iterator[None]:
    """Write the tail of ``spark``'s log to stderr when the block raises, then re-raise; the
    whole log is kept where the heading says."""
    try:
        yield
    except BaseException:
        sys.stderr.write(log_tail(spark, keep=True))
        raise
