"""The barrier stage: every host of a run as one Spark task of ONE barrier-mode stage
(``rdd.barrier().mapPartitionsWithIndex``), its plan shipped pickled and unpickled by the
host itself (:func:`run_stage`), advertising the executor's address for its data channels
(:func:`on_executor`); and the user code a run ships by value to executors that cannot
import it (:func:`shipped_by_value`). It imports pyspark only when it runs."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from absnb.runtime.host.host import run_host
from absnb.runtime.host.stopping import RunStopped
from absnb.runtime.plan import HostPlan, HostResult
from absnb.runtime.spark.recovery import unpickle_plan

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from absnb.runtime.spark.inputs import PreparedInput


def run_stage(
    spark: SparkSession, plans: list[HostPlan], data: PreparedInput | None = None
) -> list[HostResult]:
    """Run every host as one Spark task of one barrier stage: over ``data``'s
    partitions (one per host) when the job reads a DataFrame, else over nothing.

    The plans travel pickled, unpickled by the host itself: a job whose code the
    executors cannot import (a user module not on their path) is reported to the
    coordinator as that error, not only as a Spark stack trace."""
    from pyspark import cloudpickle

    sc = spark.sparkContext
    n = len(plans)
    binding = data.binding if data is not None else None
    # pyspark's vendored cloudpickle has no annotations: its dumps returns bytes
    dumps = cast("Callable[[HostPlan], bytes]", cloudpickle.dumps)
    pickled = [dumps(p) for p in plans]
    ids = [(p.host_id, p.attempt, p.coordinator, p.secret) for p in plans]

    def run_partition(index: int, rows: Any) -> Iterator[HostResult]:
        plan = on_executor(unpickle_plan(pickled[index], *ids[index]))
        if binding is not None:
            plan = binding.bind(plan, rows)
        try:
            yield run_host(plan)
        except RunStopped:  # the driver stopped the run and raises why itself
            return

    rdd = data.rdd if data is not None else sc.parallelize(range(n), n)
    # collect() of an RDD is untyped: each partition yielded one HostResult
    return cast("list[HostResult]", rdd.barrier().mapPartitionsWithIndex(run_partition).collect())


def on_executor(plan: HostPlan) -> HostPlan:
    """``plan`` advertising this executor's host for its data channels (the address
    Spark knows the executor by), so that hosts on other machines can connect."""
    from pyspark import BarrierTaskContext

    try:
        ctx = BarrierTaskContext.get()
        address = ctx.getTaskInfos()[ctx.partitionId()].address
    except Exception:  # not in a barrier task (tests calling run_host directly)
        return plan
    host = address.rsplit(":", 1)[0].strip("[]")
    if not host or plan.advertise_host == "127.0.0.1":  # a local master: loopback only
        return plan
    return replace(plan, advertise_host=host)


@contextlib.contextmanager
def shipped_by_value(module_name: str) -> Iterator[None]:
    """Inside the block, the runs pickle the code of module ``module_name`` by value, so that
    executors that cannot import it (a file loaded by its path, such as a student's handler
    graded by ``absnb lab grade FILE``) still run it. A notebook's ``__main__`` is pickled
    by value anyway, and absnb's own modules are imported on the executors: for those, and
    for a module not loaded, the block does nothing."""
    from pyspark import cloudpickle

    module = sys.modules.get(module_name)
    if module is None or module_name.split(".")[0] in ("__main__", "absnb"):
        yield
        return
    cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]  # unannotated
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(module)  # type: ignore[no-untyped-call]
