"""Real execution on PySpark, and the names its users need.

The face: :class:`SparkRuntime` (run a job on Spark) and :class:`SparkRun` (what a run
gives back), :class:`Failure` (a failure to inject) and :class:`InjectedFailure` (what it
raises), :func:`load_events` and :class:`RunEvents` (a run's event log), and the errors a
run can raise (:class:`ClusterTooSmallError`, :class:`SparkInputError`,
:class:`RestartLimitError`, :class:`StorageError`, :class:`CommittedCheckpointLostError`,
:class:`StreamSinkError`, :class:`ControlError`, :class:`HostFailure`). They are imported
when first used, so ``import absnb.runtime`` stays light and never starts Java.

Inside, one subpackage a job: ``spark`` (the driver: the runtime, the session, recovery,
inputs; with ``daemon``, Spark's Python daemon preloading absnb, and
``structured_streaming``, the only modules that import pyspark), ``host`` (one Spark task
running some tasks of the job), ``data_plane`` (framed TCP channels between hosts),
``control_plane`` (the checkpoint coordinator's server and its clients), ``connections``
(what both planes share: frames, the handshake, admission), ``storage`` (checkpoint
storage) and ``events`` (what a run did, and its measurements); ``plan`` is what the
driver ships to each host and gets back, ``failures`` the failures injected on purpose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from absnb.core.lazy import lazy_names

if TYPE_CHECKING:
    from absnb.runtime.control_plane.messages import ControlError, HostFailure
    from absnb.runtime.events.table import RunEvents, load_events
    from absnb.runtime.failures import Failure, InjectedFailure
    from absnb.runtime.spark import ClusterTooSmallError, SparkRuntime
    from absnb.runtime.spark.inputs import SparkInputError
    from absnb.runtime.spark.recovery import RestartLimitError
    from absnb.runtime.spark.result import SparkRun
    from absnb.runtime.spark.stream_committer import StreamSinkError
    from absnb.runtime.storage.fs import CommittedCheckpointLostError, StorageError

_WHERE = {
    "ClusterTooSmallError": "spark.runtime",
    "CommittedCheckpointLostError": "storage.fs",
    "ControlError": "control_plane.messages",
    "Failure": "failures",
    "HostFailure": "control_plane.messages",
    "InjectedFailure": "failures",
    "RestartLimitError": "spark.recovery",
    "RunEvents": "events.table",
    "SparkInputError": "spark.inputs",
    "SparkRun": "spark.result",
    "SparkRuntime": "spark.runtime",
    "StorageError": "storage.fs",
    "StreamSinkError": "spark.stream_committer",
    "load_events": "events.table",
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
