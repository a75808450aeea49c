"""A run as a space-time diagram draws it: its event rows, its lanes, the time shown.

A simulated run's comes from :func:`absnb.views.simulated.simulated`, a real run's from
its event log by :func:`real_run`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from absnb.core.events import EventRow
from absnb.core.ids import TaskId
from absnb.views.run_state import tasks_of


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


def real_run(rows: Sequence[EventRow], title: str) -> DrawnRun:
    """A real run's event ``rows`` (time order) as a run to draw: one lane per task the
    log names (sources first), from its first event to its last."""
    names = tasks_of(rows)
    width: dict[str, int] = {}
    for name in names:
        op, _, i = name.partition("[")
        width[op] = max(width.get(op, 0), int(i.rstrip("]")) + 1 if i else 1)
    tasks = []
    for name in names:
        op, _, i = name.partition("[")
        tasks.append(TaskId(op, int(i.rstrip("]")), max(width[op], 2)) if i else TaskId(op))
    times = [r.time for r in rows]
    return DrawnRun(
        tuple(rows), tuple(tasks), min(times, default=0.0), max(times, default=0.0), title
    )
