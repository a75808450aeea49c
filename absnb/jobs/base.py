"""A job: an execution graph with its input logs, ready for a runtime."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
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

    def collecting(self) -> Job:
        """This job with every sink that writes outside the job replaced by a
        :class:`~absnb.operators.CollectSink` (for a reference run that must not write to
        the external system)."""
        ops = self.graph.operators
        if not any(op.function.external for op in ops.values()):
            return self
        from absnb.operators.library import CollectSink

        graph = copy.copy(self.graph)
        graph.operators = {
            name: replace(op, function=CollectSink()) if op.function.external else op
            for name, op in ops.items()
        }
        return replace(self, graph=graph)

    def output(self, states: dict[TaskId, Any]) -> Any:
        """The job's result from task states: every sink's records (sorted, so that two
        schedules compare equal), or for a job without sinks the processes' states."""
        sinks = [t for t in self.graph.tasks if self.graph.kind(t) == "sink"]
        if not sinks:
            return {str(t): states[t] for t in self.graph.tasks}
        graph = self.graph
        values = [
            v
            for op in dict.fromkeys(t.operator for t in sinks)
            for v in graph.operators[op].function.output([states[t] for t in graph.tasks_of(op)])
        ]
        try:
            return sorted(values)
        except TypeError:
            return sorted(values, key=repr)
