"""The paper's Figure 5 job on Spark: the failure-free answer, with and without a failure."""

from __future__ import annotations

import pytest

from absnb.jobs.paper_topology import expected_output, paper_topology
from absnb.runtime import Failure
from absnb.runtime.spark import SparkRuntime, quiet_task_failures


@pytest.fixture(scope="module")
def runtime(spark, tmp_path_factory):
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


@pytest.mark.parametrize("protocol", ["abs", "synchronous", "chandy-lamport"])
def test_a_small_spark_run_equals_the_failure_free_answer(runtime, protocol) -> None:
    job = paper_topology(parallelism=2, records=60_000, keys=5_000, groups=97)
    # 0.75 s a source, however fast the machine: checkpoints complete during the run
    run = runtime.run(job, protocol, checkpoint_interval=0.05, source_rate=40_000)
    assert run.restarts == 0
    assert run.checkpoints  # checkpoints completed during the run
    assert run.output == expected_output(job)
    assert sum(n for _, n in run.output) == 60_000


def test_exactly_once_after_a_failure_on_spark(runtime) -> None:
    job = paper_topology(parallelism=2, records=80_000, keys=5_000, groups=97, seed=3)
    failure = Failure("sum_per_key[1]", after_records=25_000, kind="raise")
    with quiet_task_failures(runtime.spark):
        run = runtime.run(
            job,
            "abs",
            checkpoint_interval=0.05,
            failures=[failure],
            source_rate=40_000,  # a second a source: checkpoints complete before the failure
            keep_states=False,  # only the sinks' states come back to the driver
        )
    assert run.restarts == 1
    assert run.restored[-1] >= 1  # the restart restored a completed checkpoint
    assert run.output == expected_output(job)
    assert {t.operator for t in run.states} == {"sink"}
    assert len(run.metrics.tasks()) == len(job.graph.tasks)  # measured all the same


def test_synchronous_checkpoints_after_a_source_finished_complete(runtime) -> None:
    """Source 0 ends long before source 1: checkpoints triggered after it ended must still
    complete (its finished chain acknowledges), or the halted source 1 waits forever."""
    import dataclasses
    import threading

    from absnb.jobs.paper_topology import GeneratedLog

    job = paper_topology(parallelism=2, records=2, keys=5_000, groups=97, seed=5)
    inputs = {t: GeneratedLog(5, t.subtask, 300 if t.subtask == 0 else 40_000) for t in job.inputs}
    job = dataclasses.replace(job, inputs=inputs)
    done: list = []
    # source 1 paced to 2 s at least, whatever the load, source 0 ends after 15 ms: the run
    # is long in time, not in work (unpaced, 200,000 records took over 120 s under load)
    worker = threading.Thread(
        target=lambda: done.append(
            runtime.run(job, "synchronous", checkpoint_interval=0.05, source_rate=20_000)
        )
    )
    worker.start()
    worker.join(120)
    if worker.is_alive():
        runtime.spark.sparkContext.cancelAllJobs()
        worker.join(30)
        pytest.fail("a synchronous checkpoint triggered after source 0 ended never completed")
    run = done[0]
    assert run.restarts == 0
    assert run.checkpoints  # every one triggered after source 0's 300 records had ended
    assert run.output == expected_output(job)
    assert sum(n for _, n in run.output) == 40_300


RUNS = 3
"""Runs of the incremental-restore case until its restart restores a chain."""


@pytest.mark.parametrize("array", [False, True], ids=["dict", "array"])
def test_incremental_snapshots_restore_exactly_once_after_a_failure(runtime, array) -> None:
    """``sum_per_key`` snapshots only the keys changed (an array state: its values and the
    keys added) since the last completed checkpoint; a restart restores its chain (full
    snapshot plus increments) and the answer is exact. The checkpoint statistics show what
    each checkpoint wrote against a full one."""
    job = paper_topology(
        parallelism=2, records=80_000, keys=50_000, groups=97, seed=3, incremental=True, array=array
    )
    # Once checkpoint 4 completed: a checkpoint, not a record count, so that timing cannot
    # choose a full one. The first snapshot is full; later ones are increments for a dict
    # (fewer than half its keys change between two checkpoints once it holds a few
    # thousand) and for an array state up to its full one after 8 increments (checkpoint
    # 10). The restart restores checkpoint 4, or one just after it, a chain either way.
    # A dict also snapshots in full once its chain would hold more entries than twice the
    # state (a young state still growing fast, checkpoints late on a loaded machine): such
    # a restore tests no chain, so the run is made again, at most RUNS times; every run's
    # output must be exact.
    failure = Failure("sum_per_key[1]", after_checkpoint=4, kind="raise")
    for _ in range(RUNS):
        with quiet_task_failures(runtime.spark):
            run = runtime.run(
                job, "abs", checkpoint_interval=0.05, failures=[failure], source_rate=20_000
            )
        assert run.restarts == 1
        assert run.output == expected_output(job)
        acks = run.metrics.subtasks()
        keyed = acks[acks["operator"] == "sum_per_key"]
        restored = keyed[keyed["checkpoint_id"] == run.restored[-1]]
        if restored["incremental"].any():
            break
    assert restored["incremental"].any(), "the restart restored no chain of increments"
    increments = keyed[keyed["incremental"]]
    assert len(increments), "no snapshot of sum_per_key was incremental"
    known = increments.dropna(subset=["full_state_size"])
    assert (known["state_size"] < known["full_state_size"]).all()
    # an array job holds its counts per group (count_per_group, the sink) in arrays too
    keyed = {"sum_per_key", "count_per_group", "sink"} if array else {"sum_per_key"}
    assert not acks[~acks["operator"].isin(keyed)]["incremental"].any()
