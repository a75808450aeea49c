"""The Spark runtime: the same protocols and tasks as the simulator, run for real on PySpark.

The whole execution graph runs as ONE barrier-mode stage (``rdd.barrier().mapPartitions``):
every Spark task is a :class:`~absnb.runtime.host.host.Host` running the execution-graph tasks
with its subtask index (so forward edges stay inside one process: the stage is
:mod:`absnb.runtime.spark.stage`). Channels between hosts
are framed TCP connections; the checkpoint coordinator runs on the driver as a server;
task snapshots go to checkpoint storage. Spark never retries a failed barrier stage, so
the driver catches the failure and submits the stage again, every host restoring from the
latest completed checkpoint, with a new attempt number so that nothing of the old attempt
is read. This module and :mod:`absnb.runtime.spark.stage` import pyspark only when they
run; :mod:`absnb.runtime.spark.daemon` is the Python daemon of the sessions it starts.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from absnb.core import validate
from absnb.core.errors import AbsnbError, FailureNotFiredWarning
from absnb.core.ids import CheckpointId, TaskId
from absnb.core.job import Job
from absnb.protocols import CheckpointCoordinator, get_protocol
from absnb.protocols.base import SnapshotProtocol
from absnb.runtime.failures import Failure, not_fired
from absnb.runtime.plan import HostPlan, HostResult, terminates_by_quiescence
from absnb.runtime.spark.recovery import run_attempts
from absnb.runtime.spark.result import SparkRun, final_states
from absnb.runtime.spark.session import default_session
from absnb.runtime.spark.stage import run_stage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from absnb.core.graph import ExecutionGraph
    from absnb.runtime.control_plane.messages import Ack
    from absnb.runtime.control_plane.server import CoordinatorServer
    from absnb.runtime.spark.inputs import PreparedInput
    from absnb.runtime.storage.checkpoints import CheckpointStorage


class ClusterTooSmallError(AbsnbError, RuntimeError):
    """The barrier stage needs more task slots than the Spark cluster offers."""


class SparkRuntime:
    """Runs jobs on a SparkSession (``local[*]`` by default, any master URL for a cluster).

    Args:
        spark: a SparkSession; None creates one for ``master``.
        checkpoint_dir: where checkpoints go (any local directory or fsspec URL); by default
            a temporary directory removed when the process exits.
        storage: a :class:`~absnb.runtime.storage.checkpoints.CheckpointStorage` to use instead (the
            driver reads it; executors open the same URL).
        hosts: how many Spark tasks the barrier stage has; by default the largest
            parallelism of the job, which must not exceed the cluster's task slots.
        storage_latency: seconds every durable write of a checkpoint (each task's snapshot,
            each manifest) waits before it starts: a model of a remote store such as S3 or
            HDFS (:class:`~absnb.runtime.storage.fs.LatencyFS`). ABS writes on a thread of
            its own, off the tasks' path; a synchronous snapshot halts its sources until the
            checkpoint is complete, so it waits too. 0: the storage's own speed.
        ports: the ports the coordinator (on the driver) and every host's data plane (on
            the executors) listen on, each the first free one, e.g. ``range(40000, 40100)``
            for a firewall that opens those; by default any free port.
        events: keep the run's event log (``run.events``); False records nothing.
    """

    def __init__(
        self,
        spark: SparkSession | None = None,
        *,
        master: str = "local[*]",
        checkpoint_dir: str | None = None,
        storage: CheckpointStorage | None = None,
        hosts: int | None = None,
        ports: range | tuple[int, int] | None = None,
        storage_latency: float = 0.0,
        events: bool = True,
    ) -> None:
        from absnb.runtime.spark.run_args import check_checkpoint_dir
        from absnb.runtime.storage.checkpoints import CheckpointStorage
        from absnb.runtime.storage.scratch import scratch_dir

        check_checkpoint_dir(checkpoint_dir)
        if storage is not None and storage_latency:
            raise ValueError(
                "give storage_latency to the CheckpointStorage passed as storage "
                "(CheckpointStorage(url, write_latency=...)), not to SparkRuntime as well"
            )
        self.spark = spark or default_session(master)
        self.checkpoint_dir = (
            str(storage.url) if storage is not None else checkpoint_dir or scratch_dir()
        )
        self.storage = storage or CheckpointStorage(
            self.checkpoint_dir, write_latency=storage_latency
        )
        self.storage_latency = self.storage.write_latency
        self.hosts = hosts
        if isinstance(ports, tuple):
            ports = range(*ports)
        if ports is not None and (len(ports) < 1 or ports.start < 1 or ports.stop > 65536):
            raise ValueError(
                f"ports must be a non-empty range of TCP ports (1-65535), not {ports!r}: "
                "e.g. range(40000, 40100)"
            )
        self.ports = ports
        self.events = events

    def slots(self) -> int:
        """Task slots of the cluster (local[N] gives N)."""
        return int(self.spark.sparkContext.defaultParallelism)

    def run(
        self,
        job: Job,
        protocol: str | SnapshotProtocol = "abs",
        *,
        checkpoint_interval: float | None = 1.0,
        failures: Sequence[Failure] = (),
        max_restarts: int = 3,
        allow_deadlock: bool = False,
        inputs: object = None,
        source_rate: float | None = None,
        restore_older: bool = False,
        alignment_timeout: float | None = None,
        checkpoint_timeout: float | None = None,
        min_pause: float = 0.0,
        keep_states: bool = True,
        tolerable_failed_checkpoints: int = 0,
        columnar: bool = True,
    ) -> SparkRun:
        """Run ``job`` to the end under ``protocol``, restarting after failures.

        ``protocol`` is a name of :data:`~absnb.protocols.PROTOCOLS` or a
        :class:`~absnb.protocols.base.SnapshotProtocol` object, as the simulator takes:
        a user's own, such as a lab's ``LabProtocol(MyHandler)``, reaches every host pickled
        (by value when its classes are defined in a notebook), and every task runs it.

        ``inputs``, if given, replaces the job's own input logs: a Spark DataFrame of one
        string column, or a URL of text files (read with ``spark.read.text``), whose rows
        are dealt to the job's sources and reach each host as its barrier partition (see
        :mod:`absnb.runtime.spark.inputs`); e.g. ``run(absnb.word_count(sources=2), inputs=df)``.
        A plain local path (a file, folder or glob) is read by the sources themselves,
        each its share of the bytes, as Flink's file source reads splits.

        ``source_rate``, if given, is the most input-log entries (lines, transfers) each source
        task reads per second (Flink: ``RateLimiterStrategy.perSecond``): a small input then
        runs long enough for a class to watch checkpoints and failures happen during it.

        Recovery never goes back behind the newest completed checkpoint of a job with
        two-phase-commit sinks: its transactions may be committed, so restoring an older one
        would commit its output again. If that checkpoint's files are unreadable, the run
        stops with :class:`~absnb.runtime.storage.fs.CommittedCheckpointLostError` naming the
        file; ``restore_older=True`` restores the newest older checkpoint that verifies
        instead, accepting duplicates in the sinks.

        ``alignment_timeout`` (seconds) makes ``abs`` switch to unaligned at a task whose
        alignment lasts that long; ``checkpoint_timeout`` (seconds) aborts a checkpoint not
        complete by then (Flink's checkpoint timeout).
        ``min_pause`` (seconds) must pass after a checkpoint completes before the next
        periodic one is triggered (Flink's ``minPauseBetweenCheckpoints``): when checkpoints
        take longer than the interval (synchronous snapshots written to a slow remote
        store), the job still runs between two of them instead of standing halted from one
        to the next. ``keep_states=False`` brings back to the driver only the final states
        the job's output is made of (its sinks'; ``run.states`` holds just those), not a
        large keyed state that would be pickled, shipped and unpickled only to be dropped.

        A checkpoint whose snapshot (or manifest) checkpoint storage refuses to write, say
        for a full disk, is aborted and the job goes on, its sinks committing at the next
        checkpoint that completes, and its output exactly once as ever: the aborted
        checkpoint's reason is in ``run.metrics.checkpoints()`` and ``run.events``, and what
        was written of it is removed (storage never restores a checkpoint without its
        manifest). ``tolerable_failed_checkpoints`` (Flink's
        ``execution.checkpointing.tolerable-failed-checkpoints``, 0 by default as there) is how
        many may fail so in a row: one more stops the run with the
        :class:`~absnb.runtime.storage.fs.StorageError` of the last (Flink fails the job over
        instead; a restart would find the storage as full).

        ``columnar`` (on by default) lets sources whose operators have a columnar path (word
        count's) emit a batch as Arrow columns, which the operators downstream with one
        (word count's counter and sinks) process a batch at a time and the hosts exchange as
        Arrow IPC streams; an operator without one gets the batch's values as a list. The
        outputs, snapshots and recoveries are those of the per-record path
        (``columnar=False``: every batch a list of Python values), at about 1.7 times its
        throughput for word count.

        Raises:
            InvalidTypeError: ``protocol`` is neither a name nor a ``SnapshotProtocol``.
            InvalidValueError: a protocol object that does not pickle.
            ClusterTooSmallError: the stage does not fit the cluster's slots (Spark would
                wait forever or fail with SPARK-24819).
            RestartLimitError: more than ``max_restarts`` failures.
            StorageError: more than ``tolerable_failed_checkpoints`` checkpoints in a row
                could not be written.
            CommittedCheckpointLostError: a failure needs the newest completed checkpoint of
                a job with two-phase-commit sinks, and it cannot be read.
            SparkInputError: ``inputs`` is not a DataFrame of one string column or a
                readable path, or the job has no sources to read it.
        """
        import time

        from absnb.runtime.spark.run_args import check_run, check_shipped

        check_run(
            job,
            protocol,
            checkpoint_interval,
            failures,
            max_restarts,
            allow_deadlock,
            source_rate,
            self.hosts,
            restore_older,
            min_pause,
            keep_states,
            tolerable_failed_checkpoints,
        )
        validate.flag("columnar", columnar)
        from absnb.runtime.connections.wire import new_secret

        graph = job.graph
        proto = get_protocol(
            protocol, graph, allow_deadlock=allow_deadlock, alignment_timeout=alignment_timeout
        )
        if isinstance(protocol, SnapshotProtocol):
            check_shipped(protocol)
        hosts = self._hosts_for(graph, source_rate)
        data = None
        logs = None
        if inputs is not None:
            from absnb.runtime.spark.inputs import file_logs, prepare

            logs = file_logs(inputs, job)  # local text files: each source reads its share
        if logs is not None:
            job = replace(job, inputs=logs)
        elif inputs is not None:
            data = prepare(self.spark, inputs, job, hosts)
            job = replace(job, inputs={})  # the hosts read their barrier partitions instead
        job_id = f"{graph.name}-{uuid.uuid4().hex[:8]}"
        coordinator = CheckpointCoordinator.for_graph(
            graph,
            proto,
            checkpoint_interval,
            timeout=checkpoint_timeout,
            min_pause=min_pause,
            tolerable_failed_checkpoints=tolerable_failed_checkpoints,
        )
        driver_host = self._driver_host()
        secret = new_secret()
        server = self._coordinator_server(
            job_id, graph, proto.name, coordinator, hosts, secret, driver_host
        )
        plan = HostPlan(  # host 0 of attempt 0; run_attempts makes the others from it
            job=job,
            protocol=protocol if isinstance(protocol, SnapshotProtocol) else proto.name,
            host_id=0,
            tasks=(),
            secret=secret,
            coordinator=server.address,
            storage_url=str(self.checkpoint_dir),
            job_id=job_id,
            storage_latency=self.storage_latency,
            failures=tuple(failures),
            allow_deadlock=allow_deadlock,
            alignment_timeout=getattr(proto, "alignment_timeout", None),
            advertise_host=driver_host,
            source_rate=source_rate,
            ports=self.ports,
            events=self.events,
            keep_states=keep_states,
            columnar=columnar,
        )
        started = time.monotonic()
        try:
            attempts = run_attempts(
                lambda plans: self._stage(plans, data),
                server,
                plan,
                self.storage,
                coordinator,
                hosts,
                max_restarts,
                restore_older,
            )
        finally:
            server.stop()
            if data is not None:
                data.release()
            for n in coordinator.failed_checkpoints:  # what a slow writer left after the abort
                self.storage.discard_incomplete(job_id, n)
        results = attempts.results
        states = final_states(results)
        from absnb.runtime.events.table import run_events

        log = run_events(
            started, server.events, server.host_events, attempts.failed_at, attempts.errors
        )
        consumed = {
            str(t): n["records_in"] for h in results for t, n in h.metrics.get("tasks", {}).items()
        }
        unfired = not_fired(failures, log.rows, attempts.errors, consumed)
        for why in unfired.values():
            warnings.warn(why, FailureNotFiredWarning, stacklevel=2)
        return SparkRun(
            output=job.output(states),
            states=states,
            restarts=len(attempts.errors),
            checkpoints=[c.checkpoint_id for c in coordinator.completed],
            seconds=time.monotonic() - started,
            hosts=sorted(results, key=lambda r: r.host_id),
            coordinator_events=list(server.events),
            errors=attempts.errors,
            restored=attempts.restored,
            protocol=proto.name,
            graph=graph,
            started=started,
            failed_at=attempts.failed_at,
            log=log,
            failures_not_fired=unfired,
        )

    def _hosts_for(self, graph: ExecutionGraph, source_rate: float | None) -> int:
        """The barrier stage's number of hosts, once the job is known to be able to start:
        its sinks can write and the cluster has a slot for every host."""
        if source_rate is not None and not source_rate > 0:
            raise ValueError(
                f"source_rate must be a number of entries per second above 0, not "
                f"{source_rate!r}: pass None to read as fast as the job can"
            )
        for op in graph.operators.values():
            check = getattr(op.function, "check", None)
            if check is not None:
                check()  # a sink that cannot write fails here, before the stage starts
        hosts = self.hosts or max(o.parallelism for o in graph.operators.values())
        if hosts > self.slots():
            raise ClusterTooSmallError(
                f"job {graph.name!r} needs a barrier stage of {hosts} tasks but the cluster has "
                f"{self.slots()} task slots: use master local[{hosts}] (or more executor "
                f"cores), or pass hosts={self.slots()} to run several subtasks per Spark task"
            )
        return hosts

    def _coordinator_server(
        self,
        job_id: str,
        graph: ExecutionGraph,
        protocol: str,
        coordinator: CheckpointCoordinator,
        hosts: int,
        secret: bytes,
        driver_host: str,
    ) -> CoordinatorServer:
        """The checkpoint coordinator's server on the driver, started: it records each
        completed checkpoint in the storage."""
        from absnb.runtime.connections.wire import bind_address
        from absnb.runtime.control_plane.server import CoordinatorServer

        storage = self.storage

        def on_complete(checkpoint_id: CheckpointId, acks: dict[TaskId, Ack]) -> None:
            storage.complete(
                job_id, checkpoint_id, graph.tasks, fingerprint=graph.fingerprint, protocol=protocol
            )

        def on_failed(checkpoint_id: CheckpointId) -> None:  # frees space for the next
            storage.discard_incomplete(job_id, checkpoint_id)

        server = CoordinatorServer(
            coordinator,
            secret,
            hosts=hosts,
            initiators=graph.initiators(),
            on_complete=on_complete,
            on_failed=on_failed,
            advertise_host=driver_host,
            bind_host=bind_address(driver_host),
            ports=self.ports,
            quiescence=terminates_by_quiescence(graph),
        )
        server.start()
        return server

    def _driver_host(self) -> str:
        """The address hosts reach the driver at: loopback for a local master."""
        sc = self.spark.sparkContext
        if str(sc.master).startswith("local"):
            return "127.0.0.1"
        return str(sc.getConf().get("spark.driver.host", "127.0.0.1"))

    def _stage(self, plans: list[HostPlan], data: PreparedInput | None = None) -> list[HostResult]:
        """Run the hosts of ``plans`` as one barrier stage (:func:`~.stage.run_stage`)."""
        return run_stage(self.spark, plans, data)
