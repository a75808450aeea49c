"""Bytewax's word count over the corpus; each worker writes ``OUT.<pid>.<worker>.json``
(the latest count of every word its sink saw) at the end.

    python bytewax_wc.py DIR OUT PROCESS_ID ADDRESSES [RECOVERY_DIR SNAPSHOT_SECONDS]

does what ``python -m bytewax.run "bytewax_wc:get_flow(DIR, OUT)" -i ID -a ADDRESSES -r
RECOVERY_DIR -s SECONDS -b 0`` does, except that its ``-s`` takes whole seconds only.

A Bytewax word count with the output of absnb's and of PyFlink SQL's streaming ``GROUP BY``:
``DirSource`` (the files dealt to the workers; the file offsets are its recovery state),
``flat_map`` splitting lines into words, ``key_on`` the word, then ``stateful_map`` keeping
a running count per word and emitting ``(word, count so far)`` for every word read (not
``count_final``, which emits one count per word when the input ends and so does less
work than the other engines). The sink keeps the latest count of every word, as absnb's
``FinalCountSink`` does.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import bytewax.operators as op
from bytewax.connectors.files import DirSource
from bytewax.dataflow import Dataflow
from bytewax.outputs import DynamicSink, StatelessSinkPartition
from bytewax.recovery import RecoveryConfig
from bytewax.run import cli_main


class _Summary(StatelessSinkPartition):
    def __init__(self, path: str) -> None:
        self.path, self.counts = path, {}

    def write_batch(self, items: list[Any]) -> None:
        counts = self.counts
        get = counts.get
        for word, n in items:
            if n > get(word, 0):
                counts[word] = n

    def close(self) -> None:
        with open(self.path, "w") as f:
            json.dump(self.counts, f)


def running_count(count: int | None, _word: str) -> tuple[int, int]:
    """The running count of a word: the state is its count so far, emitted with every word."""
    count = 1 if count is None else count + 1
    return count, count


class SummarySink(DynamicSink):
    def __init__(self, out: str) -> None:
        self.out = out

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Summary:
        return _Summary(f"{self.out}.{os.getpid()}.{worker_index}.json")


def get_flow(corpus: str, out: str) -> Dataflow:
    flow = Dataflow("word_count")
    lines = op.input("lines", flow, DirSource(Path(corpus), glob_pat="*.txt"))
    words = op.flat_map("split", lines, str.split)
    counts = op.stateful_map("count", op.key_on("key", words, lambda w: w), running_count)
    op.output("out", counts, SummarySink(out))
    return flow


if __name__ == "__main__":
    corpus, out, process_id, addresses, *recovery = sys.argv[1:]
    config, interval = None, timedelta(seconds=10)  # bytewax.run's default without recovery
    if recovery:
        config = RecoveryConfig(recovery[0], timedelta(0))
        interval = timedelta(seconds=float(recovery[1]))
    cli_main(
        get_flow(corpus, out),
        process_id=int(process_id),
        addresses=addresses.split(";"),
        epoch_interval=interval,
        recovery_config=config,
    )
