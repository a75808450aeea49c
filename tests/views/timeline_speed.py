"""How fast the space-time diagram builds (a timing script, not collected by pytest).

Run: ``python tests/views/timeline_speed.py [--repeat R]``.

For word count runs of 1,000, 5,000 and 20,000 events (seeded random scheduling, a
checkpoint every 50 steps, one crash and a full recovery half way), prints the median
time of :func:`message_arrows`, of :func:`space_time` (arrows and layout included), of the
figure's ``to_json`` (what a notebook sends to the browser), of :func:`timeline_svg`
(the static picture, layout included) and of :func:`trace_rows` (the trace as event rows:
the pictures convert a trace once and then only the steps added, so the other columns,
which draw the same trace again as a stepper's redraw does, leave it out).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import absnb
from absnb.sim.event_rows import trace_rows
from absnb.sim.events import Event
from absnb.views.timeline import message_arrows, space_time
from absnb.views.timeline_static import timeline_svg

WORDS = ["to", "be", "or", "not", "that", "is", "the", "question"]


def run(events: int) -> tuple[list[Event], absnb.World]:
    """A seeded word count run of exactly ``events`` steps."""
    lines = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(5)) for i in range(events // 8)]
    job = absnb.word_count([lines[0::2], lines[1::2]])
    stepper = absnb.Stepper(
        absnb.World(job, "abs", checkpoint_interval=50),
        absnb.RandomScheduler(seed=7, crash_at=events // 2),
        history=False,
    )
    stepper.run(events)
    if len(stepper.trace) != events:
        raise RuntimeError(f"the run ended after {len(stepper.trace)} of {events} events")
    return stepper.trace, stepper.world


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'events':>7} {'arrows':>7} {'arrows s':>9} {'figure s':>9} {'to_json s':>10} "
        f"{'svg s':>7} {'rows s':>7}"
    )
    for events in (1_000, 5_000, 20_000):
        trace, world = run(events)
        arrows = len(message_arrows(trace, world))
        a = median_seconds(lambda: message_arrows(trace, world), args.repeat)  # noqa: B023
        f = median_seconds(lambda: space_time(trace, world), args.repeat)  # noqa: B023
        fig = space_time(trace, world)
        j = median_seconds(fig.to_json, args.repeat)
        v = median_seconds(lambda: timeline_svg(trace, world), args.repeat)  # noqa: B023
        r = median_seconds(lambda: trace_rows(trace, world), args.repeat)  # noqa: B023
        print(f"{events:>7,} {arrows:>7,} {a:>9.3f} {f:>9.3f} {j:>10.3f} {v:>7.3f} {r:>7.3f}")


if __name__ == "__main__":
    main()
