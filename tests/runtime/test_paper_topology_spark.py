"""The paper's Figure 5 job on Spark: the failure-free answer, with and without a failure."""

from __future__ import annotations

import pytest

from absnb.jobs.paper_topology import expected_output, paper_topology
from absnb.runtime.host import Failure
from absnb.runtime.spark import SparkRuntime, quiet_task_failures


@pytest.fixture(scope="module")
def runtime(spark, tmp_path_factory):
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


@pytest.mark.parametrize("protocol", ["abs", "synchronous", "chandy-lamport"])
def test_a_small_spark_run_equals_the_failure_free_answer(runtime, protocol) -> None:
    job = paper_topology(parallelism=2, records=60_000, keys=5_000, groups=97)
    run = runtime.run(job, protocol, checkpoint_interval=0.05)
    assert run.restarts == 0
    assert run.checkpoints  # checkpoints completed during the run
    assert run.output == expected_output(job)
    assert sum(n for _, n in run.output) == 60_000


def test_exactly_once_after_a_failure_on_spark(runtime) -> None:
    job = paper_topology(parallelism=2, records=80_000, keys=5_000, groups=97, seed=3)
    failure = Failure("sum_per_key[1]", after_records=25_000, kind="raise")
    with quiet_task_failures(runtime.spark):
        run = runtime.run(job, "abs", checkpoint_interval=0.05, failures=[failure])
    assert run.restarts == 1
    assert run.restored[-1] >= 1  # the restart restored a completed checkpoint
    assert run.output == expected_output(job)
