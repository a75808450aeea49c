"""How long the tasks of a host align (seconds, wall clock): from the first input they
block for a checkpoint to the snapshot that ends the alignment (Flink's "alignment
duration" of a subtask), and which of them have aligned longer than an alignment timeout
(Flink: ``execution.checkpointing.aligned-checkpoint-timeout``)."""

from __future__ import annotations

import time

from absnb.core.ids import TaskId


class AlignmentClock:
    """When each task began to align, and how long its last alignment lasted."""

    def __init__(self) -> None:
        self.started: dict[TaskId, float] = {}
        self.lasted: dict[TaskId, float] = {}

    def block(self, t: TaskId) -> None:
        """``t`` blocked an input: its alignment began now, unless it had already."""
        self.started.setdefault(t, time.monotonic())

    def snapshot(self, t: TaskId) -> float:
        """``t`` took its snapshot: its alignment (0 if it did not align) in seconds."""
        began = self.started.pop(t, None)
        lasted = self.lasted[t] = time.monotonic() - began if began is not None else 0.0
        return lasted

    def last(self, t: TaskId) -> float:
        """The last alignment of ``t`` in seconds (0 if it never aligned)."""
        return self.lasted.get(t, 0.0)

    def overdue(self, timeout: float | None) -> list[TaskId]:
        """The tasks aligning for ``timeout`` seconds or longer (none without a timeout)."""
        if timeout is None or not self.started:
            return []
        now = time.monotonic()
        return [t for t, began in self.started.items() if now - began >= timeout]
