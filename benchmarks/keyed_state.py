"""What a checkpoint and a record cost in per-key state: the dict ``KeyedState`` against the
array-backed ``ArrayKeyedState``, beside the floor (a NumPy copy of the values).

    PYTHONPATH=. python benchmarks/keyed_state.py [max_keys] [repeats]

For 10^4, 10^5 and 10^6 int keys (``sum_per_key`` of the Figure 5 job; up to
``max_keys``, default 10^6) it prints, per state:

* a checkpoint: ``take`` (the task's thread: Alg. 1's copy of the state) and ``encode``
  (the snapshot writer's thread: the pickle storage writes, as ``SnapshotWriter`` makes
  it), in ms, and the bytes written; for a full snapshot, and for an incremental one after
  a tenth of the keys were updated and 0.1 % added;
* a record: ns per ``(key, amount)`` record through ``KeyedSum.process_batch`` in batches
  of 4,096, keys drawn uniformly (every record emits its running total);
* the same for word count's ``KeyedCount`` on str keys (``w123``), counts per record.

Every figure is the best of ``repeats`` (default 3), measured in one run; the ratios
compare the dict's time to the array's.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow  # noqa: F401  (imported before timing: the first str keys encoded need it)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absnb.core.ids import TaskId
from absnb.core.snapshot import TaskSnapshot
from absnb.jobs.paper_topology import KeyedSum
from absnb.operators.library import KeyedCount
from absnb.runtime.connections.wire import dumps

TASK = TaskId("sum_per_key", 0, 2)
BATCH = 4096


def best(fn: Callable[[], object], repeats: int) -> float:
    """The least seconds ``fn`` took in ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def filled(op: KeyedSum | KeyedCount, keys: list, amounts: list | None) -> object:
    state = op.initial_state()
    for i in range(0, len(keys), BATCH):
        part = keys[i : i + BATCH]
        batch = part if amounts is None else list(zip(part, amounts[i : i + BATCH], strict=True))
        state, _ = op.process_batch(state, batch)
    return state


def checkpoint(
    op: KeyedSum | KeyedCount, n: int, make_key: Callable[[int], object], repeats: int
) -> dict[str, tuple[float, float, int]]:
    """``{"full" | "incremental": (take s, encode s, bytes)}`` at ``n`` keys: the first
    checkpoint (no base: full), then the next on it once complete, after a tenth of the
    keys were updated and 0.1 % added."""
    counts = isinstance(op, KeyedCount)
    keys = [make_key(k) for k in range(n)]
    amounts = None if counts else [1] * n
    rng = np.random.default_rng(1)
    touched = rng.integers(0, n, n // 10).tolist() + list(range(n, n + n // 1000))
    update = [make_key(k) for k in touched]
    runs: dict[str, list[tuple[float, float, int]]] = {"full": [], "incremental": []}
    for _ in range(repeats):
        state = filled(op, keys, amounts)
        for cid, kind in ((1, "full"), (2, "incremental")):
            if kind == "incremental":
                state, _ = op.process_batch(state, update if counts else [(k, 1) for k in update])
            state = op.snapshot_state(state, cid)
            began = time.perf_counter()
            part = op.copy_state(state)  # the task's thread
            took = time.perf_counter() - began
            began = time.perf_counter()
            payload = dumps(TaskSnapshot(TASK, cid, part))  # the writer's thread
            runs[kind].append((took, time.perf_counter() - began, len(payload)))
            if not isinstance(part, dict):  # word count's dict: copied whole, no base
                assert part.incremental == (kind == "incremental")
            state = op.notify_checkpoint_complete(state, cid)
    return {
        kind: (min(r[0] for r in rs), min(r[1] for r in rs), rs[-1][2]) for kind, rs in runs.items()
    }


def per_record(
    op: KeyedSum | KeyedCount, n: int, make_key: Callable[[int], object], repeats: int
) -> float:
    """ns per record of ``process_batch``, 2 x ``n`` records (at least 200,000) on ``n``
    keys, after the keys exist."""
    counts = isinstance(op, KeyedCount)
    records = max(2 * n, 200_000)
    drawn = np.random.default_rng(2).integers(0, n, records).tolist()
    keys = [make_key(k) for k in drawn]
    batches = [
        keys[i : i + BATCH] if counts else [(k, 1) for k in keys[i : i + BATCH]]
        for i in range(0, records, BATCH)
    ]
    state = filled(op, [make_key(k) for k in range(n)], None if counts else [1] * n)

    def run() -> None:
        s = state
        for batch in batches:
            s, _ = op.process_batch(s, batch)

    return best(run, repeats) / records * 1e9


def main(max_keys: int = 10**6, repeats: int = 3) -> None:
    sizes = [n for n in (10**4, 10**5, 10**6) if n <= max_keys]
    print(f"per-key state, best of {repeats}: a checkpoint (ms, bytes) and a record (ns)\n")
    head = (
        f"{'keys':>9}  {'job':<11} {'state':<6} {'snapshot':<12} {'take ms':>8} "
        f"{'encode ms':>9} {'total ms':>9} {'bytes':>11} {'floor ms':>8}"
    )
    print(head)
    print("-" * len(head))
    ratios: list[str] = []
    records: list[str] = []
    jobs = [
        ("sum_per_key", lambda a: KeyedSum(incremental=True, array=a), int),
        ("word count", lambda a: KeyedCount(array=a, incremental=a), lambda k: f"w{k}"),
    ]
    for n in sizes:
        values = np.arange(n, dtype=np.int64)
        floor = best(values.copy, repeats * 3) * 1e3  # a memcpy of the values
        for job, make, make_key in jobs:
            row: dict[str, dict[str, tuple[float, float, int]]] = {}
            rec: dict[str, float] = {}
            for name in ("dict", "array"):
                op = make(name == "array")
                row[name] = checkpoint(op, n, make_key, repeats)
                rec[name] = per_record(op, n, make_key, repeats)
                for kind, (take, encode, size) in row[name].items():
                    print(
                        f"{n:>9,}  {job:<11} {name:<6} {kind:<12} {take * 1e3:>8.2f} "
                        f"{encode * 1e3:>9.2f} {(take + encode) * 1e3:>9.2f} {size:>11,} "
                        f"{floor:>8.3f}"
                    )
            for kind in ("full", "incremental"):
                d, a = row["dict"][kind], row["array"][kind]
                ratios.append(
                    f"{n:>9,}  {job:<11} {kind:<12} take {d[0] / a[0]:6.1f}x   take+encode "
                    f"{(d[0] + d[1]) / (a[0] + a[1]):6.1f}x   bytes {d[2] / a[2]:6.2f}x"
                )
            records.append(
                f"{n:>9,}  {job:<11} dict {rec['dict']:6.0f}   array {rec['array']:6.0f}   "
                f"dict / array {rec['dict'] / rec['array']:5.2f}x"
            )
    print("\ndict / array, a checkpoint (above 1: the array state is cheaper)\n")
    print("\n".join(ratios))
    print(f"\nns per record through process_batch (batches of {BATCH:,})\n")
    print("\n".join(records))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
