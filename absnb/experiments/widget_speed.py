"""How fast the widget redraws (a benchmark that prints a table).

Run: ``python -m absnb.experiments.widget_speed [--steps N]``.

Times one click of Step on the stepper widget (the step plus a full redraw: graph SVG
through Graphviz, snapshot tables, trace log and space-time diagram) on word count, and
the space-time diagram alone for long traces.
"""

from __future__ import annotations

import argparse
import statistics
import time

from absnb.experiments.report import print_table
from absnb.jobs import word_count
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.views.timeline import space_time
from absnb.views.widgets import stepper_widget


def click_times(steps: int) -> list[float]:
    """Seconds per Step click, on the default word count with a checkpoint every 4 steps."""
    widget = stepper_widget(word_count(), "abs", seed=2, checkpoint_interval=4)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        widget.controls.step.click()
        times.append(time.perf_counter() - start)
        if widget.world.is_finished():
            widget.controls.reset.click()
    return times


def diagram_seconds(events: int) -> float:
    """Seconds to build the space-time diagram of a word count trace of ``events`` steps."""
    lines = [" ".join(["to be or not"] * 3)] * (events // 20 + 1)
    job = word_count([lines, lines])
    stepper = Stepper(
        World(job, "abs", checkpoint_interval=25),
        RandomScheduler(seed=1, crash_at=events // 2),
        history=False,
    )
    stepper.run(events)
    start = time.perf_counter()
    space_time(stepper.trace, stepper.world)
    return time.perf_counter() - start


def _percentile(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * q))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args(argv)
    times = click_times(args.steps)
    rows = [
        ("Step + full redraw, median", f"{statistics.median(times) * 1e3:.0f} ms"),
        ("Step + full redraw, 90th percentile", f"{_percentile(times, 0.9) * 1e3:.0f} ms"),
    ]
    for events in (1_000, 5_000, 20_000):
        secs = statistics.median(diagram_seconds(events) for _ in range(3))
        rows.append((f"space-time diagram of {events:,} events", f"{secs * 1e3:.0f} ms"))
    print_table(rows)


if __name__ == "__main__":
    main()
