"""Checkpoint and task statistics of a Spark run, as pandas DataFrames named like Flink's.

Flink's checkpoint monitoring (web UI "Checkpoints" tab, REST ``/jobs/:id/checkpoints``)
shows per checkpoint its id, status, trigger timestamp, latest acknowledgement, end to end
duration, state size, checkpointed size, processed and persisted in-flight data, and per
subtask the alignment, sync and async durations. :class:`RunMetrics` gives the same for a
:class:`~absnb.runtime.SparkRun`, from what the run recorded:

* the coordinator server's events (triggered, acknowledged with the task's measurements,
  completed, aborted, running, disconnected), on the driver's clock;
* every host's measurements (records in and out per task, network bytes per channel);
* the driver's record of failed attempts.

Units: durations in **seconds**, timestamps in seconds since the run started, sizes in
bytes of pickled data (pickle protocol 5, as written to checkpoint storage before its
header). ``persisted_data`` is the in-flight data a snapshot keeps: Chandy-Lamport's
channel states and ABS Algorithm 2's backup logs; it is zero for ABS on an acyclic graph
and for synchronous snapshots. Snapshots are written synchronously in the task's loop, so
the sync duration is the whole write and there is no async part.

pandas is imported when a table is built, never when this module is imported.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd

    from absnb.core.graph import ExecutionGraph
    from absnb.runtime.plan import HostResult


class RecordedRun(Protocol):
    """What :class:`RunMetrics` reads of a run: the fields of
    :class:`~absnb.runtime.SparkRun` (declared here, so that this module does not
    import the runtime that uses it)."""

    hosts: list[HostResult]
    coordinator_events: list[tuple[float, str, Any]]
    errors: list[str]
    restored: list[int]
    failed_at: list[float]
    protocol: str
    graph: ExecutionGraph | None
    started: float
    seconds: float
    restarts: int


CHECKPOINT_COLUMNS = (
    "checkpoint_id",
    "attempt",
    "status",
    "trigger_timestamp",
    "latest_ack_timestamp",
    "end_to_end_duration",
    "num_subtasks",
    "num_acknowledged_subtasks",
    "state_size",
    "persisted_data",
    "persisted_records",
    "checkpointed_size",
    "full_state_size",
    "alignment_duration_max",
    "async_duration_max",
    "failure_message",
)
"""The columns of :meth:`RunMetrics.checkpoints`."""

SUBTASK_COLUMNS = (
    "checkpoint_id",
    "attempt",
    "task",
    "operator",
    "subtask",
    "ack_timestamp",
    "end_to_end_duration",
    "alignment_duration",
    "async_duration",
    "state_size",
    "persisted_data",
    "persisted_records",
    "checkpointed_size",
    "incremental",
    "full_state_size",
)
"""The columns of :meth:`RunMetrics.subtasks`. For keyed state snapshotted incrementally,
``state_size`` is what this checkpoint wrote and ``full_state_size`` the whole chain it
builds on (Flink: checkpointed against full checkpoint data size); otherwise the two are
equal and ``incremental`` is False."""

TASK_COLUMNS = (
    "task",
    "operator",
    "subtask",
    "host",
    "records_in",
    "records_out",
    "bytes_in",
    "bytes_out",
    "blocked_duration",
    "checkpoints_acknowledged",
    "alignment_duration_max",
)
"""The columns of :meth:`RunMetrics.tasks`."""

RESTART_COLUMNS = (
    "attempt",
    "error",
    "failure_timestamp",
    "stage_failed_timestamp",
    "running_timestamp",
    "restored_checkpoint",
    "recovery_time",
    "restore_seconds",
)
"""The columns of :meth:`RunMetrics.restarts`."""


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=list(columns))


class RunMetrics:
    """The statistics of one :class:`~absnb.runtime.SparkRun` (``run.metrics``)."""

    def __init__(self, run: RecordedRun) -> None:
        self.run = run
        self.t0 = run.started

    def _at(self, t: float) -> float:
        return t - self.t0

    def _events(self, kind: str) -> list[tuple[float, dict[str, Any]]]:
        return [(t, d) for t, k, d in self.run.coordinator_events if k == kind]

    def _num_subtasks(self) -> int:
        graph = self.run.graph
        return len(graph.tasks) if graph else sum(len(h.states) for h in self.run.hosts)

    def aligning(self) -> set[str]:
        """The tasks that can align: those with more than one input channel (all tasks
        when the run does not know its graph)."""
        graph = self.run.graph
        if graph is None:
            return {str(t) for h in self.run.hosts for t in h.states}
        return {str(t) for t in graph.tasks if len(graph.inputs[t]) > 1}

    # -- per subtask and checkpoint -------------------------------------------------------
    def subtasks(self) -> pd.DataFrame:
        """One row per acknowledgement: a task's part of a checkpoint (Flink's subtask
        checkpoint statistics), in the order the coordinator received them."""
        triggered = self._triggers()
        rows = []
        for t, d in self._events("acknowledged"):
            n, task = d["checkpoint_id"], d["task"]
            m = d.get("metrics", {})
            attempt, trig = triggered.get(n, (None, None))
            state = m.get("state_size", d["state_bytes"])
            persisted = m.get("channel_state_size", 0)
            rows.append(
                {
                    "checkpoint_id": n,
                    "attempt": attempt,
                    "task": str(task),
                    "operator": task.operator,
                    "subtask": task.subtask,
                    "ack_timestamp": self._at(t),
                    "end_to_end_duration": t - trig if trig is not None else None,
                    "alignment_duration": d["alignment_s"],
                    "async_duration": m.get("async_duration"),
                    "state_size": state,
                    "persisted_data": persisted,
                    "persisted_records": m.get("channel_state_records", 0),
                    "checkpointed_size": d["state_bytes"],
                    "incremental": bool(m.get("incremental", False)),
                    "full_state_size": m.get("full_state_size", state),
                }
            )
        return _frame(rows, SUBTASK_COLUMNS)

    def _triggers(self) -> dict[int, tuple[int, float]]:
        return {d["checkpoint_id"]: (d.get("attempt", 0), t) for t, d in self._events("triggered")}

    # -- per checkpoint -----------------------------------------------------------------------
    def checkpoints(self) -> pd.DataFrame:
        """One row per triggered checkpoint (Flink's checkpoint history): status
        ``COMPLETED``, ``FAILED`` (aborted: subsumed, a failure, a new attempt) or
        ``IN_PROGRESS`` (still pending when the run ended)."""
        subtasks = self.subtasks()
        by_id = dict(iter(subtasks.groupby("checkpoint_id"))) if len(subtasks) else {}
        completed = {d["checkpoint_id"]: t for t, d in self._events("completed")}
        aborted = {d["checkpoint_id"]: d.get("reason", "") for _, d in self._events("aborted")}
        total = self._num_subtasks()
        rows = []
        for n, (attempt, trig) in sorted(self._triggers().items()):
            acks = by_id.get(n)
            if n in completed:
                status, failure = "COMPLETED", None
            elif n in aborted:
                status, failure = "FAILED", aborted[n]
            else:
                status, failure = "IN_PROGRESS", None
            acked = 0 if acks is None else len(acks)
            last = None if acks is None else float(acks["ack_timestamp"].max())
            end = completed.get(n)
            row = {
                "checkpoint_id": n,
                "attempt": attempt,
                "status": status,
                "trigger_timestamp": self._at(trig),
                "latest_ack_timestamp": last,
                "end_to_end_duration": (end - trig) if end is not None else None,
                "num_subtasks": total,
                "num_acknowledged_subtasks": acked,
                "failure_message": failure,
            }
            for col in ("state_size", "persisted_data", "persisted_records", "checkpointed_size"):
                row[col] = 0 if acks is None else int(acks[col].sum())
            full = None if acks is None else acks["full_state_size"]
            row["full_state_size"] = (
                0 if full is None else None if full.isna().any() else int(full.sum())
            )
            row["alignment_duration_max"] = (
                None if acks is None else float(acks["alignment_duration"].max())
            )
            row["async_duration_max"] = (
                None if acks is None else float(acks["async_duration"].astype(float).max())
            )
            rows.append(row)
        return _frame(rows, CHECKPOINT_COLUMNS)

    # -- per task -----------------------------------------------------------------------------
    def tasks(self) -> pd.DataFrame:
        """One row per task of the final attempt: records in and out (counted with the
        channel sequence numbers, so since the job started, restores included), network
        bytes in and out and seconds its inputs were blocked (this attempt), and its
        checkpoint acknowledgements."""
        subtasks = self.subtasks()
        rows = []
        for h in self.run.hosts:
            per_task = h.metrics.get("tasks", {})
            net = h.metrics.get("net", {})
            received = net.get("received", {})
            sent = net.get("sent", {})
            for task in per_task or h.states:  # every task, states kept or not
                counts = per_task.get(task, {})
                mine = subtasks[subtasks["task"] == str(task)] if len(subtasks) else subtasks
                rows.append(
                    {
                        "task": str(task),
                        "operator": task.operator,
                        "subtask": task.subtask,
                        "host": h.host_id,
                        "records_in": counts.get("records_in"),
                        "records_out": counts.get("records_out"),
                        "bytes_in": sum(s["bytes"] for c, s in received.items() if c.dst == task),
                        "bytes_out": sum(s["bytes"] for c, s in sent.items() if c.src == task),
                        "blocked_duration": sum(
                            s.get("blocked_seconds", 0.0)
                            for c, s in received.items()
                            if c.dst == task
                        ),
                        "checkpoints_acknowledged": len(mine),
                        "alignment_duration_max": (
                            float(mine["alignment_duration"].max()) if len(mine) else None
                        ),
                    }
                )
        return _frame(rows, TASK_COLUMNS)

    # -- restarts -----------------------------------------------------------------------------
    def restarts(self) -> pd.DataFrame:
        """One row per failed attempt: when the failure was first seen (the first host of
        the attempt lost by the coordinator, else the driver seeing the stage fail), when
        every host of the next attempt had registered (``running``), and the difference,
        ``recovery_time``: failure to running again. ``restore_seconds``, for the last
        restart only (the hosts of the attempt that ran to the end report it): the slowest
        host's time to read the checkpoint and restore its tasks, part of the recovery."""
        run = self.run
        restore = [
            h.metrics["restore_seconds"] for h in run.hosts if "restore_seconds" in h.metrics
        ]
        running = {d["attempt"]: t for t, d in self._events("running")}
        lost: dict[int, float] = {}
        for t, d in self._events("disconnected"):
            lost.setdefault(d["attempt"], t)
        rows = []
        for attempt, error in enumerate(run.errors):
            stage_failed = run.failed_at[attempt] if attempt < len(run.failed_at) else None
            seen = lost.get(attempt, stage_failed)
            again = running.get(attempt + 1)
            rows.append(
                {
                    "attempt": attempt,
                    "error": error,
                    "failure_timestamp": None if seen is None else self._at(seen),
                    "stage_failed_timestamp": (
                        None if stage_failed is None else self._at(stage_failed)
                    ),
                    "running_timestamp": None if again is None else self._at(again),
                    "restored_checkpoint": (
                        run.restored[attempt + 1] if attempt + 1 < len(run.restored) else None
                    ),
                    "recovery_time": (
                        again - seen if again is not None and seen is not None else None
                    ),
                    "restore_seconds": (
                        max(restore) if restore and attempt == len(run.errors) - 1 else None
                    ),
                }
            )
        return _frame(rows, RESTART_COLUMNS)

    # -- one line -----------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """The run in one dict: seconds, records, throughput, checkpoint counts (Flink's
        "Checkpoint Counts"), median and largest alignment over the task snapshots of the
        tasks that align (:meth:`aligning`), restarts."""
        run = self.run
        checkpoints = self.checkpoints()
        subtasks = self.subtasks()
        tasks = self.tasks()
        sources = tasks[tasks["operator"] == "source"]
        words = int(sources["records_out"].sum()) if len(sources) else 0
        if len(subtasks):
            subtasks = subtasks[subtasks["task"].isin(self.aligning())]
        alignments = [float(a) for a in subtasks["alignment_duration"]] if len(subtasks) else []
        status = list(checkpoints["status"])
        return {
            "protocol": run.protocol,
            "seconds": run.seconds,
            "records_read": int(sources["records_in"].sum()) if len(sources) else 0,
            "records_emitted": words,
            "records_per_second": words / run.seconds if run.seconds > 0 else 0.0,
            "triggered": len(status),
            "completed": status.count("COMPLETED"),
            "failed": status.count("FAILED"),
            "restarts": run.restarts,
            "alignment_median": statistics.median(alignments) if alignments else None,
            "alignment_max": max(alignments) if alignments else None,
            "persisted_data": int(checkpoints["persisted_data"].sum()) if len(status) else 0,
        }
