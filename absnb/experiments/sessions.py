"""A Spark session and a runtime for notebooks and benchmarks, quiet and with scratch storage.

:func:`quiet_session` starts Spark with the JVM's start-up lines sent to a log file (a notebook
shows none of them); :func:`scratch_runtime` is a :class:`~absnb.runtime.SparkRuntime`
checkpointing to a fresh temporary directory, optionally with every write slowed down.
"""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from absnb.runtime.spark import SparkRuntime
    from absnb.runtime.spark.session import Session


def quiet_session(master: str = "local[4]") -> Session:
    """:func:`~absnb.runtime.spark.session.default_session` with the JVM's own output (its start-up
    lines: the log4j profile, a loopback hostname, no native Hadoop; later errors) sent to
    a log file instead of this process's stderr, so that a notebook shows none of it. The
    file's path is ``spark.conf.get("absnb.jvm_log")``; if the session cannot start, the
    file's text is written to stderr before the error is raised."""
    import os
    import sys

    from absnb.runtime.spark import default_session

    fd, path = tempfile.mkstemp(prefix="absnb-spark-", suffix=".log")
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(fd, 2)  # the JVM started now inherits the log file as its stderr
    try:
        spark = default_session(master)
    except BaseException:
        os.dup2(saved, 2)
        with open(path, errors="replace") as f:
            sys.stderr.write(f.read())
        raise
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
    spark.conf.set("absnb.jvm_log", path)
    return spark


def scratch_runtime(
    spark: Session | None = None, master: str = "local[4]", storage_latency: float = 0.0
) -> SparkRuntime:
    """A :class:`~absnb.runtime.SparkRuntime` on ``spark`` (or a new ``master`` session)
    checkpointing to a fresh temporary directory (removed at exit), every write of which
    waits ``storage_latency`` seconds (a model of a remote store:
    :class:`~absnb.runtime.storage.fs.LatencyFS`)."""
    from absnb.runtime.spark import SparkRuntime, default_session
    from absnb.runtime.storage.scratch import scratch_dir

    return SparkRuntime(
        spark or default_session(master),
        checkpoint_dir=scratch_dir("absnb-bench-"),
        storage_latency=storage_latency,
    )
