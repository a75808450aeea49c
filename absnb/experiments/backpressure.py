"""Checkpointing under backpressure: aligned, unaligned, aligned with a timeout, at-least-once.

Flink's documentation ("Checkpointing under backpressure"): "Normally aligned checkpointing
time is dominated by the synchronous and asynchronous parts of the checkpointing process.
However, when a Flink job is running under heavy backpressure, the dominant factor in the
end-to-end time of a checkpoint can be the time to propagate checkpoint barriers to all
operators/subtasks." Unaligned checkpoints let barriers overtake the backlog and store it as
in-flight data instead; at-least-once skips alignment and pays with duplicates.

The job: word count with skewed keys (one hot word ``skew`` times as frequent as all others
together lands on one counter) and that counter slow. :func:`simulate` runs it in the
simulator with a scheduler that serves the slow counter one step in ``slowness``, and
reports per mode, from the trace: checkpoint duration and alignment (steps), records
recorded in flight, and the duplicates after a crash. :func:`on_spark` runs it on Spark
with a counter that sleeps per record and reports checkpoint duration and alignment
(seconds), in-flight bytes and duplicates after a real failure.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Hashable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from absnb.core.graph import Hash, JobGraph, stable_hash
from absnb.core.job import Job
from absnb.core.messages import RECORD_TYPES, count_records
from absnb.i18n import N_
from absnb.operators import KeyedCount, Source
from absnb.operators.library import CollectSink
from absnb.sim.actions import Deliver
from absnb.sim.overtaking import overtaking_at
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World

if TYPE_CHECKING:
    import pandas as pd

    from absnb.runtime.spark import SparkRuntime

MODES: tuple[tuple[str, str, float | None], ...] = (
    ("aligned", "abs", None),
    ("unaligned", "unaligned", None),
    ("aligned, timeout", "abs", 0.0),
    ("at-least-once", "at-least-once", None),
)
"""``(label, protocol, alignment timeout)``; the timeout is set per runtime (steps, seconds)."""

HOT = "hot"


def _words() -> list[str]:
    """Cold words that hash to the other counter than the hot word (of two counters)."""
    hot = stable_hash(HOT) % 2
    return [w for w in (f"w{i}" for i in range(40)) if stable_hash(w) % 2 != hot][:8]


def split_words(line: str) -> list[str]:
    return line.split()


def word(value: str) -> str:
    return value


def skewed_lines(lines: int, skew: int, sources: int = 2) -> list[list[str]]:
    """``sources`` partitions of ``lines`` lines each: ``skew`` hot words and one cold word
    per line, so the hot word's counter gets ``skew`` times the other's records."""
    cold = _words()
    return [
        [" ".join([HOT] * skew + [cold[(i + s) % len(cold)]]) for i in range(lines)]
        for s in range(sources)
    ]


class SlowKeyedCount(KeyedCount):
    """:class:`~absnb.operators.library.KeyedCount` that spends ``delay`` seconds on every record (a
    slow operator: the source of backpressure on Spark)."""

    def __init__(self, delay: float) -> None:
        super().__init__(key=word)
        self.delay = delay

    def process(
        self, state: MutableMapping[Hashable, int], value: object
    ) -> tuple[MutableMapping[Hashable, int], Sequence[object]]:
        time.sleep(self.delay)
        return super().process(state, value)

    def process_batch(
        self, state: MutableMapping[Hashable, int], values: Sequence[Any]
    ) -> tuple[MutableMapping[Hashable, int], list[object]]:
        time.sleep(self.delay * len(values))
        return super().process_batch(state, values)


def skewed_job(lines: int = 12, skew: int = 10, delay: float = 0.0) -> Job:
    """Word count on :func:`skewed_lines`; with ``delay`` its counters are slow."""
    parts = skewed_lines(lines, skew)
    g = JobGraph("skewed_word_count")
    g.add("source", "source", Source(split=split_words), 2)
    g.add("count", "operator", SlowKeyedCount(delay) if delay else KeyedCount(key=word), 2)
    g.add("sink", "sink", CollectSink(), 2)
    g.connect("source", "count", Hash(word))
    g.connect("count", "sink")
    graph = g.compile()
    inputs = {t: tuple(parts[t.subtask]) for t in graph.tasks_of("source")}
    return Job("skewed_word_count", {"lines": lines, "skew": skew}, graph, inputs)


class SlowTaskScheduler(RandomScheduler):
    """Random, but deliveries of records to ``slow`` happen only one step in ``slowness``
    (while anything else can move): the simulator's slow operator, and so its backpressure.
    The operator is slow per record: a delivery that hands ``slow`` a barrier (at the head
    of its channel, or overtaking the records before it) is not held back, as a Flink task
    takes a priority event between two records however slow its operator is."""

    def __init__(self, slow: str, slowness: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.slow = slow
        self.slowness = slowness

    def pick(self, world: World, progress: list[Any]) -> Any:
        slow = world.graph.task(self.slow)
        if world.clock % self.slowness:
            fast = [
                a
                for a in progress
                if not (type(a) is Deliver and a.channel.dst == slow and _record_next(world, a))
            ]
            if fast:
                progress = fast
        return super().pick(world, progress)


def _record_next(world: World, action: Deliver) -> bool:
    """Whether ``action`` hands its task a record (not a barrier that overtakes)."""
    queue = world.channels[action.channel]
    if type(queue[0]) not in RECORD_TYPES:
        return False
    return overtaking_at(world, action.channel) is None


def _hot_counter(job: Job) -> str:
    return f"count[{stable_hash(HOT) % 2}]"


def _sim_run(
    job: Job,
    protocol: str,
    timeout: float | None,
    seed: int,
    interval: int,
    slowness: int,
    crash_at: int | None = None,
) -> Stepper:
    world = World(job, protocol, checkpoint_interval=interval, alignment_timeout=timeout)
    scheduler = SlowTaskScheduler(
        _hot_counter(job), slowness, seed=seed, crash_at=crash_at, crash_task=_hot_counter(job)
    )
    stepper = Stepper(world, scheduler, history=False)
    stepper.run()
    return stepper


def _occurrences(job: Job) -> Counter[str]:
    words: Counter[str] = Counter()
    for log in job.inputs.values():
        for line in log:
            assert isinstance(line, str)  # a word count reads lines of text
            words.update(line.split())
    return words


def _duplicates(job: Job, output: Sequence[tuple[str, int]]) -> int:
    """Counted records beyond the input's (each word's last count minus its occurrences)."""
    last: dict[str, int] = {}
    for w, n in output:
        last[w] = max(n, last.get(w, 0))
    want = _occurrences(job)
    return sum(max(0, last.get(w, 0) - n) for w, n in want.items())


def simulate(
    *,
    lines: int = 20,
    skew: int = 10,
    slowness: int = 10,
    interval: int = 10,
    alignment_timeout: int = 5,
    seed: int = 1,
) -> pd.DataFrame:
    """The backpressure experiment in the simulator: one row per mode (see the module)."""
    import pandas as pd

    job = skewed_job(lines, skew)
    rows = []
    for label, protocol, timeout in MODES:
        t = alignment_timeout if timeout is not None else None
        stepper = _sim_run(job, protocol, t, seed, interval, slowness)
        world = stepper.world
        done = world.coordinator.completed
        durations = [c.completed_at - c.triggered_at for c in done]
        since: dict[Any, int] = {}
        aligned = 0
        for e in stepper.trace:
            for c in e.blocked:
                since[c] = e.step
            for c in e.unblocked:
                aligned = max(aligned, e.step - since.pop(c, e.step))
        in_flight = [
            sum(count_records(rs) for rs in c.snapshot.channel_states.values()) for c in done
        ]
        crashed = _sim_run(
            job, protocol, t, seed, interval, slowness, crash_at=len(stepper.trace) * 3 // 4
        )
        rows.append(
            {
                "mode": label,
                "checkpoints": len(done),
                "duration_steps": sum(durations) / len(durations) if durations else None,
                "max_alignment_steps": aligned,
                "in_flight_records": sum(in_flight) / len(in_flight) if in_flight else 0,
                "switched": sum(
                    len(getattr(t.handler, "switched", ())) for t in world.tasks.values()
                ),
                "duplicates_after_crash": _duplicates(job, crashed.world.output()),
                "steps": len(stepper.trace),
            }
        )
    return pd.DataFrame(rows)


def on_spark(
    runtime: SparkRuntime,
    *,
    lines: int = 600,
    skew: int = 10,
    delay: float = 0.0004,
    interval: float = 0.2,
    alignment_timeout: float = 0.01,
    source_rate: float | None = 600,
) -> pd.DataFrame:
    """The backpressure experiment on Spark: one row per mode (see the module), and the
    duplicates each mode leaves after a failure of the slow counter halfway through."""
    import pandas as pd

    from absnb.runtime.failures import Failure
    from absnb.runtime.spark import quiet_task_failures

    job = skewed_job(lines, skew, delay)
    total = sum(_occurrences(job).values())
    rows = []
    for label, protocol, timeout in MODES:
        t = alignment_timeout if timeout is not None else None
        run = runtime.run(
            job,
            protocol,
            checkpoint_interval=interval,
            alignment_timeout=t,
            source_rate=source_rate,
        )
        with quiet_task_failures(runtime.spark):
            failed = runtime.run(
                job,
                protocol,
                checkpoint_interval=interval,
                alignment_timeout=t,
                source_rate=source_rate,
                failures=[Failure(_hot_counter(job), after_records=total // 4, kind="raise")],
            )
        row = spark_row(label, run.coordinator_events, run.seconds)
        row["restarts"] = failed.restarts
        row["duplicates_after_failure"] = _duplicates(job, failed.output)
        rows.append(row)
    return pd.DataFrame(rows)


def spark_row(
    label: str, events: Sequence[tuple[float, str, Any]], seconds: float
) -> dict[str, Any]:
    """One mode's row of :func:`on_spark` from a run's coordinator events: completed
    checkpoints, and as medians over them the duration, the slowest task's alignment and
    the in-flight records and bytes the checkpoint holds (over all its tasks)."""
    completed = {info["checkpoint_id"]: info for _, kind, info in events if kind == "completed"}
    durations = [info["duration"] for info in completed.values()]
    by_checkpoint: dict[int, list[dict[str, Any]]] = {}
    for _, kind, info in events:
        if kind == "acknowledged" and info["checkpoint_id"] in completed:
            by_checkpoint.setdefault(info["checkpoint_id"], []).append(info)
    acks = list(by_checkpoint.values())

    def total(metric: str) -> list[float]:
        return [sum(a["metrics"].get(metric, 0) for a in v) for v in acks]

    return {
        "mode": label,
        "checkpoints": len(durations),
        "duration_s": _median(durations),
        "alignment_s": _median([max(a["alignment_s"] for a in v) for v in acks]),
        "in_flight_records": _median(total("channel_state_records")),
        "in_flight_bytes": _median(total("channel_state_size")),
        "seconds": seconds,
    }


SIM_PANELS = (
    ("duration_steps", N_("checkpoint duration (steps, mean)")),
    ("max_alignment_steps", N_("longest alignment (steps)")),
    ("in_flight_records", N_("in-flight records a checkpoint holds")),
    ("duplicates_after_crash", N_("records counted twice after a crash")),
)
"""The columns of :func:`simulate` that the charts show, with their captions (translated
where drawn)."""

SPARK_PANELS = (
    ("duration_s", N_("checkpoint duration (s, median)")),
    ("alignment_s", N_("slowest alignment (s, median)")),
    ("in_flight_records", N_("in-flight records a checkpoint holds")),
    ("duplicates_after_failure", N_("records counted twice after a failure")),
)
"""The columns of :func:`on_spark` that the charts show, with their captions."""


def speedup(table: pd.DataFrame, column: str) -> float | None:
    """How many times longer an aligned checkpoint took than an unaligned one (``column``:
    their durations), or None without both."""
    rows = table.set_index("mode")[column]
    aligned, unaligned = rows.get("aligned"), rows.get("unaligned")
    if aligned is None or unaligned is None or not unaligned > 0:
        return None
    return float(aligned) / float(unaligned)


def _median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[len(s) // 2]


def print_backpressure(sim: pd.DataFrame, spark: pd.DataFrame | None = None) -> None:
    """The tables ``absnb bench --backpressure`` prints."""
    print("checkpointing under backpressure, simulator (steps):")
    print(sim.to_string(index=False))
    ratio = speedup(sim, "duration_steps")
    if ratio is not None:
        print(f"unaligned checkpoints complete {ratio:.1f}x faster than aligned ones")
    if spark is not None:
        print("\ncheckpointing under backpressure, Spark (seconds, bytes):")
        print(spark.to_string(index=False))
        ratio = speedup(spark, "duration_s")
        if ratio is not None:
            print(f"unaligned checkpoints complete {ratio:.1f}x faster than aligned ones")
