"""A run as a space-time diagram draws it: its event rows, its lanes, the time shown."""

from __future__ import annotations

from dataclasses import dataclass, field

from absnb.core.events import EventRow
from absnb.core.ids import TaskId


@dataclass(frozen=True, slots=True)
class DrawnRun:
    """What a space-time diagram draws of a run.

    Attributes:
        rows: its events, in time order.
        tasks: one lane each, top to bottom.
        first, now: the first time shown and the present (a message in flight ends there).
        title: what the diagram is called unless told otherwise.
    """

    rows: tuple[EventRow, ...]
    tasks: tuple[TaskId, ...]
    first: float
    now: float
    title: str
    names: dict[str, TaskId] = field(init=False, repr=False, compare=False)
    """Each task by its printed name, as rows name it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", {str(t): t for t in self.tasks})

    def task(self, name: str | None) -> TaskId:
        """The task a row names."""
        return self.names[name or ""]
