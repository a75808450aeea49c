"""A Spark session and a runtime for notebooks and benchmarks, quiet and with scratch storage.

:func:`~absnb.runtime.spark.session.quiet_session` (that module's, here for the notebooks that
import it from here) starts Spark with the JVM's start-up lines sent to a log file (a
notebook shows none of them); :func:`scratch_runtime` is a :class:`~absnb.runtime.SparkRuntime`
checkpointing to a fresh temporary directory, optionally with every write slowed down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from absnb.runtime.spark.session import quiet_session as quiet_session

if TYPE_CHECKING:
    from absnb.runtime.spark import SparkRuntime
    from absnb.runtime.spark.session import Session


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
