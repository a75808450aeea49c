"""Identifiers of tasks and channels (paper section 3.2: G = (T, E)).

Ids are named tuples: values that hash and compare fast, since the simulator looks them up
on every step.
"""

from __future__ import annotations

from typing import NamedTuple

CheckpointId = int
"""A checkpoint id grows by one with every trigger (Flink: ``CheckpointIDCounter``)."""


class TaskId(NamedTuple):
    """One instance of an operator (Flink: subtask).

    ``str(task)`` is the operator's name when the operator has one task, else ``name[i]``.
    """

    operator: str
    subtask: int = 0
    parallelism: int = 1

    def __str__(self) -> str:
        if self.parallelism == 1:
            return self.operator
        return f"{self.operator}[{self.subtask}]"


class ChannelId(NamedTuple):
    """A directed FIFO channel from one task to another; ``str`` is ``src->dst``."""

    src: TaskId
    dst: TaskId

    def __str__(self) -> str:
        return f"{self.src}->{self.dst}"
