"""How long absnb.labs.check takes, lab by lab: the package's own handler (a pass, every
part run) and each typical student bug (a failure and its counterexample), for ABS
Algorithm 1 (tests/labs/handlers.py), its extension to Algorithm 2
(tests/labs/cyclic_handlers.py), Chandy-Lamport (tests/labs/marker_handlers.py) and
two-phase commit (tests/labs/sink_handlers.py).

    PYTHONPATH=. python benchmarks/labs_check.py [repeats]

Prints a table: seconds per check without part d (the first, with the jobs' failure-free
outputs still to compute, and the best of ``repeats``, default 3), the part that failed,
and the steps of the shortest counterexample. The lab asks for a whole check (Spark
excepted) within 30 s on two cores, and a failure reported within 10 s. Then, where Java
is present, a second table: part d alone for each lab's own handler (the first run starts
the Spark session).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.labs.handlers

from absnb.labs import check
from absnb.labs.registry import LABS
from absnb.labs.spark import java_found, spark_part
from absnb.protocols.aligned import AlignedBarrierHandler
from absnb.protocols.chandy_lamport import ChandyLamportHandler
from absnb.protocols.cyclic import CyclicBarrierHandler
from absnb.sinks import MemorySink
from tests.labs import cyclic_handlers, handlers, marker_handlers, sink_handlers

HANDLERS = [
    AlignedBarrierHandler,
    handlers.SnapshotsBeforeBroadcasting,
    handlers.ForgetsToBlock,
    handlers.NeverUnblocks,
    handlers.AcknowledgesAtFirstBarrier,
    handlers.ForwardsBarrierEarly,
    handlers.SourcesSkipTheSnapshot,
    ChandyLamportHandler,
    marker_handlers.MarkersBeforeTheState,
    marker_handlers.StateAtTheSecondMarker,
    marker_handlers.NoChannelState,
    marker_handlers.RecordsAfterTheMarker,
    marker_handlers.ForgetsToForward,
    marker_handlers.OneListForAllSnapshots,
    CyclicBarrierHandler,
    cyclic_handlers.Algorithm2,
    cyclic_handlers.WaitsForTheBackEdge,
    cyclic_handlers.BlocksTheBackEdge,
    cyclic_handlers.NoBackupLog,
    cyclic_handlers.LogsBeforeTheSnapshot,
    cyclic_handlers.LogsUntilTheLastBarrier,
    cyclic_handlers.AcknowledgesAtTheCopy,
    MemorySink,
    sink_handlers.Correct,
    sink_handlers.CommitsAtTheSnapshot,
    sink_handlers.CommitsOnlyTheLatest,
    sink_handlers.ForgetsTheRestoredTransactions,
    sink_handlers.CommitsTwice,
    sink_handlers.LeavesTheLeftovers,
]


def main(repeats: int = 3) -> None:
    print(f"| lab | handler | result | first s | best of {repeats} s | counterexample steps |")
    print("|---|---|---|---:|---:|---:|")
    for cls in HANDLERS:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            report = check(cls, spark=False)
            times.append(time.perf_counter() - start)
        failed = report.failed_part
        result = "passes" if failed is None else f"fails {failed.part.split('.')[0]}"
        steps = len(report.counterexample.actions) if report.counterexample else "-"
        row = f"{result} | {times[0]:.2f} | {min(times):.2f} | {steps}"
        print(f"| {report.lab} | {cls.__name__} | {row} |")

    spark_rows(repeats)


def spark_rows(repeats: int = 3) -> None:
    """Part d alone, each lab's own handler: seconds of the first run and the best."""
    if not java_found():
        print("\npart d: skipped (no Java)")
        return
    print(f"\n| lab | part d | first s | best of {repeats} s |")
    print("|---|---|---:|---:|")
    for lab in LABS.values():
        if lab.spark is None:
            continue
        times = []
        for _ in range(repeats):
            part = spark_part(lab.spark, lab.reference)
            times.append(part.seconds)
        print(f"| {lab.name} | {part.status} | {times[0]:.2f} | {min(times):.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
