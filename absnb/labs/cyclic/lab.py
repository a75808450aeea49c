"""The ABS lab's extension, Algorithm 2, for the registry (:mod:`absnb.labs.registry`)."""

from __future__ import annotations

from absnb.core.job import Job
from absnb.i18n import N_
from absnb.jobs.cyclic import cyclic
from absnb.labs.cyclic.cases import scripted_cases
from absnb.labs.cyclic.handler import CyclicAbsHandler, CyclicLabProtocol
from absnb.labs.cyclic.runs import random_runs
from absnb.labs.cyclic.search import SEARCHES
from absnb.labs.lab import Lab
from absnb.labs.spark import SparkCase
from absnb.protocols.cyclic import CyclicBarrierHandler
from absnb.runtime.failures import Failure


def spark_loop() -> Job:
    """The Collatz loop over 1..1,000 from two sources, head, step and sink two tasks each."""
    return cyclic(range(1, 1_001), parallelism=2, sources=2)


CYCLIC = Lab(
    name="abs-cyclic",
    base=CyclicAbsHandler,
    reference=CyclicBarrierHandler,
    accepts=(CyclicAbsHandler, CyclicBarrierHandler),
    scripted=scripted_cases,
    random_runs=random_runs,
    searches=SEARCHES,
    spark=SparkCase(
        title=N_("the Collatz loop over 1..1,000, 2 sources, 2 tasks a stage"),
        job=spark_loop,
        protocol=CyclicLabProtocol,
        failure=Failure("head[1]", after_checkpoint=2),
        checkpoint_interval=0.05,
        source_rate=500,  # a second a source: checkpoints complete during the run
    ),
)
"""ABS Algorithm 2: the student's subclass of
:class:`~absnb.labs.cyclic.handler.CyclicAbsHandler`, or the package's own
:class:`~absnb.protocols.cyclic.CyclicBarrierHandler`."""
