"""Part b of the ABS lab's extension: seeded random runs of the Collatz loop, with and
without crashes.

Each run is the ABS lab's (:func:`~absnb.labs.runs.run_one`: after every step no decision
raised and every completed snapshot is a consistent cut, its backup logs included; at the
end nothing is blocked or pending, and the output equals the failure-free one, every
recovered run too), under the extension's protocol, on notebook 03's loop and on the loop at
parallelism 2 (two loop inputs at each head).
"""

from __future__ import annotations

from collections.abc import Iterator

from absnb.jobs.cyclic import cyclic
from absnb.labs.cyclic.handler import CyclicLabProtocol
from absnb.labs.report import PartResult
from absnb.labs.runs import Run, run_failed, run_one
from absnb.protocols.base import BarrierHandler
from absnb.sim.actions import RecoveryMode

SEEDS = 40
"""Seeds per job and crash setting."""


def runs() -> Iterator[Run]:
    """Part b's runs: the loop of notebook 03 (3, 5, 6, 7) and the loop at parallelism 2
    (3, 5, 6), each over :data:`SEEDS` seeds without a crash and as many with one."""
    jobs = {
        "the Collatz loop of 3, 5, 6, 7": cyclic(),
        "the Collatz loop of 3, 5, 6 at parallelism 2": cyclic([3, 5, 6], parallelism=2),
    }
    for name, job in jobs.items():
        for seed in range(SEEDS):
            yield Run(name, job, seed, 3 + seed % 4, None, "full")
        for seed in range(SEEDS):
            recovery: RecoveryMode = "partial" if seed % 2 else "full"
            yield Run(name, job, seed, 3 + seed % 4, 5 + (7 * seed) % 40, recovery)


def random_runs(handler_class: type[BarrierHandler]) -> PartResult:
    """Part b: every run of :func:`runs`, stopping at the first that fails."""
    part = "b. random runs, with and without crashes"
    count = 0
    for run in runs():
        count += 1
        failure = run_one(run, handler_class, CyclicLabProtocol)
        if failure is not None:
            return run_failed(part, failure)
    return PartResult(
        part,
        "passed",
        f"{count} runs (the Collatz loop at parallelism 1 and 2, half with a crash): every "
        "snapshot a consistent cut with its backup logs, nothing blocked or pending, the "
        "output that of the failure-free run",
    )
