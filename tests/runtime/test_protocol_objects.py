"""``SparkRuntime.run`` under a protocol object, as the simulator runs one: it reaches every
host, and what the driver reads of it (its name, whether a task may decline, its graph
check) is the object's own."""

from __future__ import annotations

import absnb
from absnb.protocols.aligned import AlignedProtocol
from absnb.runtime import Failure
from absnb.runtime.spark import SparkRuntime, final_counts, word_count_answer

LINES = [["to be or not to be"] * 400, ["be quick or be still"] * 400]


class OwnAlignment(AlignedProtocol):
    """The package's Algorithm 1 under a name of its own: a user's protocol."""

    name = "own-alignment"


def test_a_protocol_object_runs_at_every_task_and_labels_the_run(spark, tmp_path) -> None:
    job = absnb.word_count(LINES)
    runtime = SparkRuntime(spark, checkpoint_dir=str(tmp_path))
    decline = Failure("count[1]", during_checkpoint=2, kind="decline")
    run = runtime.run(
        job, OwnAlignment(), checkpoint_interval=0.05, failures=[decline], source_rate=800
    )
    assert run.protocol == "own-alignment"
    assert run.restarts == 0
    assert run.checkpoints
    assert 2 not in run.checkpoints  # declined at count[1], as the object allows
    assert run.check_cuts() == []
    assert final_counts(run.output) == word_count_answer(spark, LINES)
    stats = run.checkpoint_stats()  # the statistics read the run as any other
    completed = stats[stats.status == "COMPLETED"]
    assert sorted(completed.checkpoint_id) == sorted(run.checkpoints)
    assert 2 in set(stats[stats.status != "COMPLETED"].checkpoint_id)
