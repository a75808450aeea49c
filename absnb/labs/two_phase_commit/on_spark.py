"""Part d of the two-phase-commit lab: the student's sink on Spark.

The word count of the other labs' part d, its two sink tasks the student's class writing
to a :class:`~absnb.sinks.file_store.FileTransactionStore` (the simulator's store lives in
one process; a Spark run's hosts are several, and share the store through its directory),
under ABS Algorithm 1. The injected failure is the one two-phase commit is there for:
``sink[1]`` fails right after its snapshot of checkpoint 3, its pre-commit, so that
checkpoint never completes and the restart restores checkpoint 2. A sink that made
checkpoint 3's records visible already then commits them twice (Flink's
``TwoPhaseCommitSinkFunction`` commits only on ``notifyCheckpointComplete``); one that
leaves the failed attempt's transactions behind (``recoverAndAbort``) leaves them
unfinished; one that commits the restored checkpoint's transactions with ``commit``
rather than ``recover_and_commit`` commits twice, which the store refuses.
"""

from __future__ import annotations

from typing import Any

from absnb.i18n import N_
from absnb.labs.spark import SparkCase, spark_word_count
from absnb.operators.base import Operator
from absnb.protocols import get_protocol
from absnb.protocols.base import SnapshotProtocol
from absnb.runtime.failures import Failure
from absnb.sinks.file_store import FileTransactionStore


def spark_sink(sink_class: type[Any], folder: str) -> Operator:
    """The student's sink, writing to a file store in ``folder``."""
    sink: Operator = sink_class(FileTransactionStore(folder))
    return sink


def aligned(sink_class: type[Any]) -> SnapshotProtocol:
    """ABS Algorithm 1 (the student wrote the sink, not the handler)."""
    return get_protocol("abs")


SPARK = SparkCase(
    title=N_("word count 2 x 2 x 2 over 2,000 lines into your sink's transaction files"),
    job=spark_word_count,
    protocol=aligned,
    failure=Failure("sink[1]", during_checkpoint=3),
    checkpoint_interval=0.05,
    # four seconds a source: checkpoints complete during the run, though a loaded machine
    # may take two seconds before the first completes
    source_rate=250,
    sink=spark_sink,
)
"""The two-phase-commit lab's part d."""
