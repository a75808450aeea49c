"""absnb's per-record path alone, in one process: CPU seconds of the word count of run.py.

    python3 absnb_cpu.py CORPUS_DIR [--rounds 3]

The tasks of ``word_count(sources=2, counters=2, sinks=2, sink=FinalCountSink())`` (ABS, no
checkpoint taken) run as two hosts would run them, without Spark and without sockets: each
source emits its lines (every other line of the corpus) in batches of ``source_batch``
lines, a batch whose ends live on different hosts (``host_of``) is pickled and unpickled
as the data plane does, and the counters and sinks consume every batch. The figure is the
process's CPU time, which a loaded machine disturbs less than wall time: run it on the
code before and after a change, alternating, to compare the per-record path.
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from collections.abc import Sequence
from pathlib import Path

import absnb
from absnb import word_count
from absnb.experiments.paper import FinalCountSink
from absnb.protocols import get_protocol
from absnb.runtime.connections.wire import PICKLE_PROTOCOL
from absnb.runtime.plan import HostPlan, host_of
from absnb.task import Out, StreamTask

SOURCE_BATCH = HostPlan.__dataclass_fields__["source_batch"].default


def run(lines: Sequence[str]) -> tuple[float, int]:
    """CPU seconds of one word count over ``lines``, and the words the sinks counted."""
    job = word_count(sources=2, counters=2, sinks=2, sink=FinalCountSink())
    graph = job.graph
    protocol = get_protocol("abs", graph)
    tasks = {t: StreamTask(graph, t, protocol, history=False) for t in graph.tasks}
    sources = graph.tasks_of("source")
    logs = {t: lines[t.subtask :: len(sources)] for t in sources}
    began = time.process_time()
    out = Out()  # no checkpoint is taken: its controls stay empty
    pending = out.sends
    for offset in range(0, max(map(len, logs.values())), SOURCE_BATCH):
        for t in sources:
            tasks[t].emit_batch(logs[t][offset : offset + SOURCE_BATCH], out)
        while pending:
            c, m = pending.pop()
            if host_of(c.src, 2) != host_of(c.dst, 2):  # a frame of the data plane
                m = pickle.loads(pickle.dumps([m], protocol=PICKLE_PROTOCOL))[0]
            tasks[c.dst].deliver_batch(c, m, out)
    seconds = time.process_time() - began
    counts: dict[str, int] = {}
    for t in graph.tasks_of("sink"):
        counts.update(tasks[t].state)
    return seconds, sum(counts.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a folder of .txt files (run.py's corpus)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    files = sorted(args.corpus.glob("*.txt"))
    if not files:
        parser.error(f"{args.corpus} holds no .txt file: pass the folder of run.py's corpus")
    lines = [line for f in files for line in f.read_text().splitlines()]
    for _ in range(args.rounds):
        seconds, words = run(lines)
        figure = {"absnb": str(Path(absnb.__file__).parent), "cpu_seconds": round(seconds, 3)}
        figure |= {"words": words, "words_per_cpu_second": round(words / seconds)}
        print(json.dumps(figure), flush=True)


if __name__ == "__main__":
    main()
