"""A job: an execution graph with its input logs, ready for a runtime."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from absnb.core.errors import GraphError, InvalidTypeError
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
    inputs: Mapping[TaskId, Sequence[Any]] = field(default_factory=dict)
    total: int | None = None

    def __post_init__(self) -> None:
        """Refuse input logs keyed by anything but a source or process of the graph (they
        would be ignored: the job would read nothing and finish at once). A task's printed
        name (``"source[0]"``) is looked up."""
        graph, inputs = self.graph, {}
        readers = [t for t in graph.tasks if graph.kind(t) in ("source", "process")]
        for key, log in self.inputs.items():
            task = graph.task(key) if isinstance(key, str) else key
            shown = repr(key) if isinstance(key, str) else str(key)
            if task not in readers:
                raise GraphError(
                    f"job {self.name!r} has an input log for {shown}, which is not a source or "
                    f"process of the job: key the inputs by {', '.join(map(str, readers))}"
                )
            if log is None or isinstance(log, str | bytes | dict):
                raise InvalidTypeError(
                    f"the input log of {shown} must be a list or tuple of entries, not {log!r:.60}"
                )
            inputs[task] = log
        self.inputs = inputs

    @property
    def name(self) -> str:
        return self.graph.name

    def collecting(self) -> Job:
        """This job with every sink that writes outside the job replaced by a
        :class:`~absnb.operators.library.CollectSink` (for a reference run that must not write to
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


def runnable_job(job: Any, where: str) -> Job:
    """``job`` checked for a runtime: a :class:`Job` whose every operator has a function.
    The simulator's ``World(...)`` and ``SparkRuntime.run`` make this one check, so a user
    gets the same error from either.

    Raises:
        InvalidTypeError: ``job`` is not a Job (a name, a builder not called).
        GraphError: an operator has no function to run.
    """
    if not isinstance(job, Job):
        raise InvalidTypeError(
            f"{where} needs a Job, such as absnb.word_count() or absnb.build_job('bank'), "
            f"not {job!r:.80} ({type(job).__name__})"
        )
    missing = [n for n, op in job.graph.operators.items() if op.function is None]
    if missing:
        raise GraphError(
            f"operator {missing[0]!r} of job {job.name!r} has no function (None), so it cannot "
            "run: pass an absnb.operators.Operator to JobGraph.add"
        )
    return job
