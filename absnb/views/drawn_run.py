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
        unit: ``step`` (a simulated run, every message a row) or ``s`` (a real run's
            seconds, its records counted).
        close_up: a stretch of a real run (its quiet stretches are not squeezed).
    """

    rows: tuple[EventRow, ...]
    tasks: tuple[TaskId, ...]
    first: float
    now: float
    title: str
    unit: str = "step"
    close_up: bool = False
    names: dict[str, TaskId] = field(init=False, repr=False, compare=False)
    """Each task by its printed name, as rows name it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", {str(t): t for t in self.tasks})

    def task(self, name: str | None) -> TaskId:
        """The task a row names."""
        return self.names[name or ""]

    def at(self, time: float) -> float:
        """A row's time as the diagram places it: a step (whole) or seconds."""
        return int(time) if self.unit == "step" else time


def real_run(
    rows: Sequence[EventRow], title: str, window: tuple[float, float] | None = None
) -> DrawnRun:
    """A real run's event ``rows`` (time order) as a run to draw: one lane per task the
    log names (sources first), from its first event to its last, or only ``window``
    (seconds from, to: a checkpoint close up)."""
    names = tasks_of(rows)
    width: dict[str, int] = {}
    for name in names:
        op, _, i = name.partition("[")
        width[op] = max(width.get(op, 0), int(i.rstrip("]")) + 1 if i else 1)
    tasks = []
    for name in names:
        op, _, i = name.partition("[")
        tasks.append(TaskId(op, int(i.rstrip("]")), max(width[op], 2)) if i else TaskId(op))
    if window is not None:
        rows = [r for r in rows if window[0] <= r.time <= window[1]]
        return DrawnRun(tuple(rows), tuple(tasks), window[0], window[1], title, "s", True)
    times = [r.time for r in rows] or [0.0, 1.0]
    pad = max(max(times) - min(times), 1e-3) * 0.01
    return DrawnRun(tuple(rows), tuple(tasks), min(times) - pad, max(times) + pad, title, "s")
