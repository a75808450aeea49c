"""JVM options for the tests' own Spark JVMs (never a user's: notebooks and ``absnb``
start theirs as Spark does)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""A JVM starts about twice as fast with the C1 compiler only and the serial collector
(the shared session: 16 s against 31 s on a loaded two-core machine); the tests' jobs are
far too small to miss C2."""


@contextlib.contextmanager
def fast_jvm_start() -> Iterator[None]:
    """Inside the block, JVMs started from this process use :data:`FAST_JVM` (a JVM reads
    ``JAVA_TOOL_OPTIONS`` when it starts); the variable is restored afterwards, so that
    nothing started later (a notebook's kernel, a child process) inherits it."""
    before = os.environ.get("JAVA_TOOL_OPTIONS")
    os.environ["JAVA_TOOL_OPTIONS"] = FAST_JVM
    try:
        yield
    finally:
        if before is None:
            del os.environ["JAVA_TOOL_OPTIONS"]
        else:
            os.environ["JAVA_TOOL_OPTIONS"] = before
