"""What :meth:`SparkRuntime.run <absnb.runtime.SparkRuntime.run>` returns: a
:class:`SparkRun`, with the output, restarts, checkpoints, measurements and event log, and
the final states it is made of (:func:`final_states`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from absnb.core.ids import CheckpointId, TaskId
from absnb.runtime.events.table import RunEvents
from absnb.runtime.failures import Failure
from absnb.runtime.plan import HostResult

if TYPE_CHECKING:
    import pandas as pd

    from absnb.core.graph import ExecutionGraph
    from absnb.runtime.events.metrics import RunMetrics


@dataclass
class SparkRun:
    """The result of a run: output, restarts, completed checkpoints and measurements."""

    output: Any  # the job's records (or a sinkless job's states), read as the job knows them
    states: dict[TaskId, object]
    restarts: int
    checkpoints: list[int]
    seconds: float
    hosts: list[HostResult] = field(default_factory=list)
    coordinator_events: list[tuple[float, str, Any]] = field(default_factory=list)
    """The coordinator's ``(time, kind, details)``
    (:class:`~absnb.runtime.control_plane.server.CoordinatorServer`'s events)."""
    errors: list[str] = field(default_factory=list)
    restored: list[int] = field(default_factory=list)
    """The checkpoint each attempt started from (0: the beginning)."""
    protocol: str = ""
    graph: ExecutionGraph | None = None
    started: float = 0.0
    """When the run started, on the clock of ``events`` (``time.monotonic``)."""
    failed_at: list[float] = field(default_factory=list)
    """When the driver saw each failed attempt's stage fail (same clock)."""
    log: RunEvents = field(default_factory=lambda: RunEvents(()))
    """The run's event log (:mod:`absnb.runtime.events.table`): what every task did."""
    failures_not_fired: dict[Failure, str] = field(default_factory=dict)
    """Each failure asked for that never fired, and what happened instead (empty when all
    fired); ``run()`` also warns of them."""

    @property
    def events(self) -> pd.DataFrame:
        """The event log as a pandas DataFrame, one row per event: ``time`` (seconds since
        the run started), ``attempt``, ``task``, ``kind``, ``channel``, ``checkpoint``, and
        for snapshots ``sent`` / ``consumed`` / ``recorded`` per channel and ``size``."""
        return self.log.events

    def check_cuts(self) -> list[str]:
        """Why a completed checkpoint is not a consistent cut, checked from the run's own
        log (empty when every one is)."""
        return self.log.check_cuts()

    def save_events(self, path: str) -> None:
        """Write the event log as JSON lines (``absnb.runtime.load_events(path)``)."""
        self.log.save_events(path)

    def to_chrome_trace(self, path: str) -> None:
        """Write the event log in the Chrome trace event format (Perfetto opens it)."""
        self.log.to_chrome_trace(path)

    @property
    def final_checkpoints(self) -> list[CheckpointId]:
        """The job's final checkpoints (FLIP-147), oldest first: triggered once every task's
        input had ended, because sinks still held what they pre-committed then; one per
        attempt that reached its end with such output (empty when none did)."""
        return [
            d["checkpoint_id"]
            for _, kind, d in self.coordinator_events
            if kind == "triggered" and d.get("final")
        ]

    @property
    def records(self) -> int:
        """Records read by the sources in the final attempt."""
        return sum(h.metrics.get("records_in", 0) for h in self.hosts)

    @property
    def metrics(self) -> RunMetrics:
        """Checkpoint and task statistics as DataFrames (:mod:`absnb.runtime.events.metrics`)."""
        from absnb.runtime.events.metrics import RunMetrics

        return RunMetrics(self)

    def checkpoint_stats(self) -> pd.DataFrame:
        """One row per checkpoint (a pandas DataFrame): ``self.metrics.checkpoints()``."""
        return self.metrics.checkpoints()

    def task_stats(self) -> pd.DataFrame:
        """One row per task (a pandas DataFrame): ``self.metrics.tasks()``."""
        return self.metrics.tasks()


def final_states(results: list[HostResult]) -> dict[TaskId, object]:
    """Every final state the hosts returned. A sink writing outside the job has committed
    what it wrote when its final checkpoint completed, before its host finished (FLIP-147,
    :mod:`absnb.runtime.control_plane.final_checkpoint`): the driver commits nothing."""
    return {t: s for r in results for t, s in r.states.items()}
