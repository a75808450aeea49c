"""ABS against no snapshots on the Figure 5 job, in interleaved pairs on one Spark session.

    python3 benchmarks/abs_pairs.py [interval] [rounds] [scale]

``absnb bench --only fig6`` runs each protocol and interval once a round among 13 runs, so
its three baseline runs stand for the whole round, and a run's time moves by up to a
quarter with the runs around it. Here every round runs the baseline and ABS every
``interval`` seconds (default 0.25) back to back, in alternating order (none then ABS,
then ABS then none), ``rounds`` times (default 6), on the job ``absnb bench`` runs
(``scale`` 8, parallelism 2, ``local[2]``, checkpoints to a fresh local directory). It
prints each run and the medians of both: the run's seconds and its hosts' CPU seconds
(the tasks' processes), and ABS's overhead on each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absnb.experiments import paper, sessions


def main(interval: float = 0.25, rounds: int = 6, scale: float = 8.0) -> None:
    began = time.monotonic()
    spark = sessions.quiet_session("local[2]")
    runtime = sessions.scratch_runtime(spark)
    paper.warm_up(runtime, parallelism=2)
    job = paper.paper_job(scale, parallelism=2)
    runs: dict[str, list[tuple[float, float]]] = {"none": [], "abs": []}
    for r in range(rounds):
        for protocol in ("none", "abs") if r % 2 == 0 else ("abs", "none"):
            if protocol == "none":
                run = runtime.run(job, "none")
            else:
                run = runtime.run(job, "abs", checkpoint_interval=interval)
            cpu = sum(h.metrics.get("cpu_seconds", 0.0) for h in run.hosts)
            runs[protocol].append((run.seconds, cpu))
            print(
                f"round {r + 1} {protocol:>4}: {run.seconds:.2f} s, hosts' CPU {cpu:.2f} s, "
                f"{len(run.checkpoints)} checkpoints",
                flush=True,
            )
    spark.stop()
    print(f"\nABS every {interval:g} s against no snapshots, medians of {rounds} pairs:")
    for i, what in enumerate(("seconds", "hosts' CPU seconds")):
        none = statistics.median(x[i] for x in runs["none"])
        abs_ = statistics.median(x[i] for x in runs["abs"])
        print(f"{what:>18}: none {none:.2f}, abs {abs_:.2f}, overhead {abs_ / none - 1:+.1%}")
    print(f"{time.monotonic() - began:.0f} s in all")


def positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    """An argparse type: ``kind`` of the text, refused unless above 0."""

    def parse(text: str) -> float:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
        return value

    parse.__name__ = getattr(kind, "__name__", "number")  # argparse: "invalid int value"
    return parse


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="ABS against no snapshots, in pairs.")
    parser.add_argument(
        "interval",
        nargs="?",
        type=positive(float),
        default=0.25,
        help="seconds between ABS's checkpoints (default 0.25)",
    )
    parser.add_argument(
        "rounds", nargs="?", type=positive(int), default=6, help="pairs of runs (default 6)"
    )
    parser.add_argument(
        "scale",
        nargs="?",
        type=positive(float),
        default=8.0,
        help="the job's scale, as absnb bench --scale (default 8)",
    )
    args = parser.parse_args()
    main(args.interval, int(args.rounds), args.scale)
