"""Checkpoints on Spark through the model of a remote store's write latency: a synchronous
checkpoint keeps the job halted until its snapshots are durable, and ``min_pause`` (Flink's
min pause between checkpoints) lets the job run between two of them."""

from __future__ import annotations

import absnb
from absnb import datasets
from absnb.runtime.spark import SparkRuntime, final_counts, word_count_answer

LATENCY = 0.1
PAUSE = 0.4


def test_min_pause_spaces_synchronous_checkpoints_that_wait_for_the_remote_writes(
    spark, tmp_path
) -> None:
    parts = datasets.text_partitions("large")
    lines = [parts[0] + parts[2], parts[1] + parts[3]]
    runtime = SparkRuntime(spark, checkpoint_dir=str(tmp_path), storage_latency=LATENCY)
    run = runtime.run(
        absnb.word_count(lines),
        "synchronous",
        checkpoint_interval=0.05,  # shorter than a checkpoint: only the pause spaces them
        min_pause=PAUSE,
        source_rate=400,  # 1,000 lines a source: about 2.5 s
    )
    assert final_counts(run.output) == word_count_answer(spark, lines)
    events = run.coordinator_events
    completed = [(t, info["duration"]) for t, kind, info in events if kind == "completed"]
    triggered = [t for t, kind, _ in events if kind == "triggered"]
    assert len(completed) >= 2, completed
    # every task's snapshot waited the store's latency before it was acknowledged, and the
    # checkpoint completed only once its manifest had waited it too
    assert min(d for _, d in completed) >= 2 * LATENCY
    gaps = [
        min(t for t in triggered if t > done) - done
        for done, _ in completed
        if done < max(triggered)
    ]
    assert gaps, (completed, triggered)
    assert min(gaps) >= PAUSE, gaps  # without the pause the next one started at once
