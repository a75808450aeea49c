"""A job: an execution graph with its input logs, ready for a runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from absnb.core.graph import ExecutionGraph
from absnb.core.ids import TaskId


@dataclass
class Job:
    """A compiled job and the data it reads.

    Attributes:
        builder: the name of the builder that made it (``word_count``, ...).
        params: the builder's arguments, JSON-ready, so that a trace can rebuild the job.
        graph: the execution graph.
        inputs: each source's (or process's) input log, the replayable input.
        total: for the bank, the amount of money that every state must conserve.
    """

    builder: str
    params: dict[str, Any]
    graph: ExecutionGraph
    inputs: dict[TaskId, tuple[Any, ...]] = field(default_factory=dict)
    total: int | None = None

    @property
    def name(self) -> str:
        return self.graph.name

    def output(self, states: dict[TaskId, Any]) -> Any:
        """The job's result from task states: every sink's records (sorted, so that two
        schedules compare equal), or for a job without sinks the processes' states."""
        sinks = [t for t in self.graph.tasks if self.graph.kind(t) == "sink"]
        if not sinks:
            return {str(t): states[t] for t in self.graph.tasks}
        values = [v for t in sinks for v in states[t]]
        try:
            return sorted(values)
        except TypeError:
            return sorted(values, key=repr)
