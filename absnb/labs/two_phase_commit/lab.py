"""The two-phase-commit lab's definition, for the registry (:mod:`absnb.labs.registry`)."""

from __future__ import annotations

from absnb.labs.lab import Lab
from absnb.labs.two_phase_commit.cases import scripted_cases
from absnb.labs.two_phase_commit.handler import TransactionalSink
from absnb.labs.two_phase_commit.on_spark import SPARK
from absnb.labs.two_phase_commit.runs import random_runs
from absnb.labs.two_phase_commit.search import SEARCHES
from absnb.sinks.memory import MemorySink

TWO_PHASE_COMMIT = Lab(
    name="two-phase-commit",
    base=TransactionalSink,
    reference=MemorySink,
    accepts=(MemorySink,),
    scripted=scripted_cases,
    random_runs=random_runs,
    searches=SEARCHES,
    spark=SPARK,
)
"""Two-phase commit: the student's subclass of
:class:`~absnb.labs.two_phase_commit.handler.TransactionalSink`, or the package's own
:class:`~absnb.sinks.MemorySink` (of which it is one)."""
