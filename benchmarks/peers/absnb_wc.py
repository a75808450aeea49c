"""absnb's word count over the corpus, as a user runs it (one line of JSON per mode).

    python3 absnb_wc.py CORPUS_DIR MODE...   (MODE: none, or a checkpoint interval in s,
                                              either followed by /records for the
                                              per-record path)

One Spark session (local[2]), a warm-up run of each path, then one run per MODE; each run
is the whole ``SparkRuntime.run`` call with ``inputs=CORPUS_DIR`` (reading the files
included), on the columnar path (batches as Arrow columns, the default) or, with
``/records``, with ``columnar=False`` (batches of Python values). Each line gives the wall
time and the CPU seconds the hosts cost (``host_cpu_seconds``).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time

from absnb import word_count
from absnb.experiments.paper import FinalCountSink
from absnb.experiments.sessions import quiet_session
from absnb.runtime.spark import SparkRuntime


def job():  # type: ignore[no-untyped-def]
    return word_count(sources=2, counters=2, sinks=2, sink=FinalCountSink())


def main(corpus: str, modes: list[str]) -> None:
    runtime = SparkRuntime(quiet_session("local[2]"), checkpoint_dir=tempfile.mkdtemp())
    for columnar in (False, True):  # warm-up: each path's imports and first calls
        runtime.run(job(), "abs", checkpoint_interval=1.0, inputs=corpus, columnar=columnar)
    for mode in modes:
        when, _, path = mode.partition("/")
        interval = None if when == "none" else float(when)
        began = time.monotonic()
        run = runtime.run(
            job(),
            "none" if interval is None else "abs",
            checkpoint_interval=interval,
            inputs=corpus,
            columnar=path != "records",
        )
        seconds = time.monotonic() - began
        states = [s for t, s in run.states.items() if t.operator == "sink"]
        counts: dict[str, int] = {}
        for s in states:
            counts.update(s)
        print(
            json.dumps(
                {
                    "mode": mode,
                    "columnar_batches": sum(
                        h.metrics.get("columnar_batches", 0) for h in run.hosts
                    ),
                    "seconds": seconds,
                    "host_cpu_seconds": sum(h.metrics.get("cpu_seconds", 0.0) for h in run.hosts),
                    "words": sum(counts.values()),
                    "distinct": len(counts),
                    "checkpoints": len(run.checkpoints),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
