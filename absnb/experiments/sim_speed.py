"""How fast the simulator steps and explores (a benchmark that prints a table).

Run: ``python -m absnb.experiments.sim_speed [--deliveries N] [--repeat R]``.

Measures, on word count with seeded random scheduling:

- simulated deliveries per second without history and with history (a world copy kept
  per step for ``back()``), and the cost of one ``back()``;
- exhaustive exploration of the 2x2x2 word count with one checkpoint: states per second
  and total time;
- ``absnb run --transfers N`` (the bank under Chandy-Lamport, a checkpoint every 5 steps,
  with its report and verdicts) for growing N: CPU seconds, and per 1,000 transfers, which
  stays flat when the run is linear.

Figures are medians over ``--repeat`` runs; compare ratios within one run, since the
machine may be shared.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from absnb.experiments.report import print_table
from absnb.jobs import Job, word_count
from absnb.sim.actions import Deliver
from absnb.sim.checks import reference_output
from absnb.sim.explore import explore, feasible_snapshots, no_deadlock, output_is_exactly_once
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World

EXPLORE_LINES = [["to be", "or"], ["be"]]


def _long_job(words: int) -> Job:
    text = ["to", "be", "or", "not", "to", "be", "that", "is", "the", "question"]
    lines = [" ".join(text[(i + j) % len(text)] for j in range(5)) for i in range(words // 5)]
    return word_count([lines[0::2], lines[1::2]])


def _median(fn: Callable[[], float], repeat: int) -> float:
    return statistics.median(fn() for _ in range(repeat))


def deliveries_per_second(deliveries: int, *, history: bool, protocol: str = "abs") -> float:
    """Seeded random run of word count: deliveries per wall-clock second."""
    job = _long_job(deliveries // 2)
    stepper = Stepper(
        World(job, protocol, checkpoint_interval=100), RandomScheduler(seed=7), history=history
    )
    start = time.perf_counter()
    events = stepper.run(max_steps=deliveries * 2)
    elapsed = time.perf_counter() - start
    delivered = sum(1 for e in events if type(e.action) is Deliver)
    return delivered / elapsed


def back_seconds(steps: int) -> float:
    """Mean time of one ``back()`` after ``steps`` steps with history."""
    stepper = Stepper(
        World(_long_job(steps), "abs", checkpoint_interval=50), RandomScheduler(seed=3)
    )
    stepper.run(steps)
    n = len(stepper.trace)
    start = time.perf_counter()
    while stepper.back() is not None:
        pass
    return (time.perf_counter() - start) / max(n, 1)


def exploration() -> tuple[int, float]:
    """Exhaustive exploration of the 2x2x2 word count with one ABS checkpoint."""
    job = word_count(EXPLORE_LINES)
    world = World(job, "abs", max_checkpoints=1)
    start = time.perf_counter()
    result = explore(
        world, [feasible_snapshots], [no_deadlock, output_is_exactly_once(reference_output(job))]
    )
    elapsed = time.perf_counter() - start
    if not (result.ok and result.complete):
        raise RuntimeError(f"exploration did not pass: {result}")
    return result.states, elapsed


def bank_run_seconds(transfers: int) -> float:
    """CPU seconds of ``absnb run --transfers N`` run as a command (output discarded); CPU
    rather than wall-clock time, so that other work on a shared machine does not count."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "absnb", "run", "--transfers", str(transfers)],
        stdout=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"absnb run --transfers {transfers} exited {done.returncode}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--transfers",
        type=int,
        nargs="*",
        default=[10_000, 100_000],
        help="bank run sizes (absnb run --transfers N) to time",
    )
    args = parser.parse_args(argv)
    rows: list[tuple[str, str]] = []
    for n in args.transfers:
        secs = bank_run_seconds(n)
        rows.append(
            (
                f"absnb run --transfers {n:,} (CPU)",
                f"{secs:.1f} s, {secs / n * 1000 * 1000:.0f} ms per 1,000 transfers",
            )
        )
    plain = _median(lambda: deliveries_per_second(args.deliveries, history=False), args.repeat)
    rows.append(("deliveries/s, no history (abs)", f"{plain:,.0f}"))
    cl = _median(
        lambda: deliveries_per_second(args.deliveries, history=False, protocol="chandy-lamport"),
        args.repeat,
    )
    rows.append(("deliveries/s, no history (chandy-lamport)", f"{cl:,.0f}"))
    hist = _median(lambda: deliveries_per_second(args.deliveries // 4, history=True), args.repeat)
    rows.append(("deliveries/s, with history (abs)", f"{hist:,.0f}"))
    rows.append(("history / no history", f"{hist / plain:.2f}"))
    small = _median(lambda: deliveries_per_second(2_000, history=True), args.repeat)
    rows.append(("deliveries/s, with history, classroom size (1,000 words)", f"{small:,.0f}"))
    for steps in (1_000, 10_000):
        rows.append((f"back() mean after {steps:,} steps", f"{back_seconds(steps) * 1e6:.1f} us"))
    states, secs = exploration()
    rows.append(("explore 2x2x2 word count, 1 checkpoint", f"{states:,} states in {secs:.1f} s"))
    rows.append(("exploration states/s", f"{states / secs:,.0f}"))
    print_table(rows)


if __name__ == "__main__":
    main()
