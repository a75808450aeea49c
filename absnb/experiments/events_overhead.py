"""What the event log costs a host: its hot path with the log on and off.

    python -m absnb.experiments.events_overhead [--rounds 60] [--batches 50]
    python -m absnb.experiments.events_overhead --spark [--rounds 3] [--master local[2]]

By default, in one process: word count's ``count[0]`` consumes batches of words from its two
sources as a host delivers them (:meth:`~absnb.task.StreamTask.deliver_batch`, 512 words
a batch, an ABS checkpoint every 50 batches, its barriers and alignment included), with
the host's logging calls (:class:`~absnb.runtime.events.log.EventLog`: every delivery, every
control, shipping the rows) or without. Time is the process's CPU time, so that other work
on a shared machine weighs less; the two alternate every 50 batches, and the figure is the
ratio of their total times. ``--spark`` runs word count on Spark instead, with
``SparkRuntime(events=True)`` and ``events=False``, over the slowest host's loop (wall
time: noisy on a busy machine).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from absnb import datasets
from absnb.core.ids import ChannelId
from absnb.core.messages import CheckpointBarrier, RecordBatch
from absnb.jobs.word_count import word_count

BUDGET = 0.03
"""The most throughput the event log may cost at its default level (3 %)."""
BATCH = 512
CHECKPOINT_EVERY = 50


class _Client:
    """Stands in for the control connection: keeps the batches it is sent."""

    def __init__(self) -> None:
        self.sent = 0

    def events(self, batch: Any) -> None:
        self.sent += len(batch.rows) + len(batch.flow)


class _HotPath:
    """``count[0]`` of word count with a host's event log (on or off), consuming batches."""

    def __init__(self, events: bool) -> None:
        from absnb.protocols import get_protocol
        from absnb.runtime.events.log import EventLog
        from absnb.runtime.plan import HostPlan
        from absnb.task import StreamTask

        job = word_count()
        graph = job.graph
        self.t = t = next(x for x in graph.tasks if str(x) == "count[0]")
        self.task = StreamTask(graph, t, get_protocol("abs", graph), history=False)
        plan = HostPlan(job, "abs", 0, (t,), b"", ("127.0.0.1", 0), "", "x", events=events)
        self.log = EventLog(plan, {t: self.task})
        self.log.client = _Client()
        self.inputs: list[ChannelId] = list(graph.inputs[t])
        self.seq = dict.fromkeys(self.inputs, 1)
        self.i = 0
        self.words = [
            w for part in datasets.text_partitions("large") for line in part for w in line.split()
        ]

    def run(self, batches: int) -> float:
        """CPU seconds to consume ``batches`` more batches (and a checkpoint every
        :data:`CHECKPOINT_EVERY`), with the log's calls as the host makes them."""
        from absnb.task import Out

        log, task, t, words = self.log, self.task, self.t, self.words
        started = time.process_time()
        for _ in range(batches):
            i = self.i = self.i + 1
            c = self.inputs[i % len(self.inputs)]
            batch = RecordBatch(words[(i * BATCH) % (len(words) - BATCH) :][:BATCH], self.seq[c])
            self.seq[c] += BATCH
            out = Out()
            log.delivered(c, batch)
            task.deliver_batch(c, batch, out)
            if out.controls:  # as the host: only when the step returned some
                log.controls(t, out.controls)
            if i % CHECKPOINT_EVERY == 0:
                barrier = CheckpointBarrier(i // CHECKPOINT_EVERY)
                for channel in self.inputs:
                    out = Out()
                    log.delivered(channel, barrier)
                    task.deliver(channel, barrier, out)
                    log.controls(t, out.controls)
            log.ship()
        return time.process_time() - started


def measure(rounds: int = 60, batches: int = 50) -> dict[str, Any]:
    """CPU seconds of the hot path with the log on and off, alternating every ``batches``
    batches for ``rounds`` rounds (so that a busier or quieter machine weighs on both),
    and the overhead: total(on) / total(off) - 1."""
    paths = {True: _HotPath(True), False: _HotPath(False)}
    for path in paths.values():
        path.run(batches)  # warm up
    results: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for events, path in paths.items():
            results[events].append(path.run(batches))
    on, off = sum(results[True]), sum(results[False])
    return {"on": [on], "off": [off], "overhead": on / off - 1, "calls": calls(paths, batches)}


def calls(paths: dict[bool, _HotPath], batches: int) -> dict[str, float]:
    """Microseconds a batch: the log's calls on and off (a delivery and a round's
    :meth:`~absnb.runtime.events.log.EventLog.ship`), and the whole work of a batch; the
    fastest of repeated timings, the least disturbed by other work on the machine."""
    import timeit

    out = {}
    for events, path in paths.items():
        log, c = path.log, path.inputs[0]
        batch = RecordBatch(path.words[:BATCH], 1)

        def step(log: Any = log, c: ChannelId = c, batch: RecordBatch = batch) -> None:
            log.delivered(c, batch)
            log.ship()

        best = min(timeit.repeat(step, number=20_000, repeat=5))
        out["on" if events else "off"] = best / 20_000 * 1e6
    work = min(timeit.repeat(lambda: paths[False].run(batches), number=1, repeat=10))
    out["batch"] = work / batches * 1e6
    return out


def measure_spark(rounds: int = 3, scale: int = 20, master: str = "local[2]") -> dict[str, Any]:
    """Word count on Spark with the event log on and off: seconds of the slowest host's
    loop per run, and the overhead of the medians."""
    from absnb.runtime.spark import SparkRuntime

    parts = datasets.text_partitions("large")
    job = word_count([(parts[0] + parts[2]) * scale, (parts[1] + parts[3]) * scale])
    on = SparkRuntime(master=master)
    off = SparkRuntime(on.spark, events=False)
    off.run(job, "abs", checkpoint_interval=1.0)  # warm up the workers
    results: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for events, runtime in ((True, on), (False, off)):
            run = runtime.run(job, "abs", checkpoint_interval=1.0)
            results[events].append(max(h.metrics["seconds"] for h in run.hosts))
    median_on, median_off = statistics.median(results[True]), statistics.median(results[False])
    return {"on": results[True], "off": results[False], "overhead": median_on / median_off - 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m absnb.experiments.events_overhead")
    parser.add_argument("--rounds", type=int, default=60, help="rounds each way (default 60)")
    parser.add_argument("--batches", type=int, default=50, help="batches a round (default 50)")
    parser.add_argument("--spark", action="store_true", help="whole runs on Spark instead")
    parser.add_argument("--master", default="local[2]", help="with --spark (local[2])")
    args = parser.parse_args(argv)
    if args.spark:
        r = measure_spark(args.rounds, master=args.master)
        what, unit = "word count on Spark, ABS every 1 s: slowest host's loop", "s"
    else:
        r = measure(args.rounds, args.batches)
        what = (
            f"count[0] consuming {args.rounds} x {args.batches} batches of {BATCH} words "
            "with ABS, CPU time"
        )
        unit = "s"
        r["median"] = False
    print(what)
    best, pick = ("median", statistics.median) if r.get("median", True) else ("total", sum)
    for label, key in (("event log on ", "on"), ("event log off", "off")):
        figures = ", ".join(f"{x:.3f}" for x in r[key])
        print(f"{label}: {best} {pick(r[key]):.3f} {unit} (runs: {figures})")
    if "calls" in r:
        k = r["calls"]
        share = (k["on"] - k["off"]) / k["batch"]
        print(
            f"the log's calls: {k['on']:.2f} us a batch on, {k['off']:.2f} us off; a batch's "
            f"work {k['batch']:.0f} us: {share:+.1%}"
        )
    verdict = "within" if r["overhead"] <= BUDGET else "above"
    print(f"overhead: {r['overhead']:+.1%} of the time ({verdict} the {BUDGET:.0%} budget)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
