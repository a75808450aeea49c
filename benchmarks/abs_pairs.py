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

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absnb.experiments import paper, sessions


def main(interval: float = 0.25, rounds: int = 6, scale: float = 8.0) -> None:
    if interval <= 0 or rounds < 1 or scale <= 0:
        raise SystemExit("usage: abs_pairs.py [interval > 0] [rounds >= 1] [scale > 0]")
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


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        *(float(a) for a in args[:1]), *(int(a) for a in args[1:2]), *(float(a) for a in args[2:3])
    )
