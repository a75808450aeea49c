"""Real execution on PySpark, and the names its users need.

The face: :class:`SparkRuntime` (run a job on Spark) and :class:`SparkRun` (what a run
gives back), :class:`Failure` (a failure to inject) and :class:`InjectedFailure` (what it
raises), :func:`load_events` and :class:`RunEvents` (a run's event log), and the errors a
run can raise (:class:`ClusterTooSmallError`, :class:`SparkInputError`,
:class:`RestartLimitError`, :class:`StorageError`, :class:`CommittedCheckpointLostError`,
:class:`StreamSinkError`, :class:`ControlError`, :class:`HostFailure`). They are imported
when first used, so ``import absnb.runtime`` stays light and never starts Java.

Inside: ``spark`` (with ``daemon``, Spark's Python daemon preloading absnb, and
``structured_streaming``, the two-phase-commit file sink from a Structured Streaming query:
the only modules that import pyspark), the framed TCP data plane (``transport``), the
control plane (``control``), checkpoint storage (``storage``); where a host blocks a channel
during alignment (``alignment``), and where recovery after a failure, a SIGKILL included,
is decided (``recovery``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from absnb.core.lazy import lazy_names

if TYPE_CHECKING:
    from absnb.runtime.control_messages import ControlError, HostFailure
    from absnb.runtime.event_table import RunEvents, load_events
    from absnb.runtime.failures import Failure, InjectedFailure
    from absnb.runtime.inputs import SparkInputError
    from absnb.runtime.recovery import RestartLimitError
    from absnb.runtime.spark import ClusterTooSmallError, SparkRuntime
    from absnb.runtime.spark_run import SparkRun
    from absnb.runtime.storage_fs import CommittedCheckpointLostError, StorageError
    from absnb.runtime.stream_committer import StreamSinkError

_WHERE = {
    "ClusterTooSmallError": "spark",
    "CommittedCheckpointLostError": "storage_fs",
    "ControlError": "control_messages",
    "Failure": "failures",
    "HostFailure": "control_messages",
    "InjectedFailure": "failures",
    "RestartLimitError": "recovery",
    "RunEvents": "event_table",
    "SparkInputError": "inputs",
    "SparkRun": "spark_run",
    "SparkRuntime": "spark",
    "StorageError": "storage_fs",
    "StreamSinkError": "stream_committer",
    "load_events": "event_table",
}

__all__ = [
    "ClusterTooSmallError",
    "CommittedCheckpointLostError",
    "ControlError",
    "Failure",
    "HostFailure",
    "InjectedFailure",
    "RestartLimitError",
    "RunEvents",
    "SparkInputError",
    "SparkRun",
    "SparkRuntime",
    "StorageError",
    "StreamSinkError",
    "load_events",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
