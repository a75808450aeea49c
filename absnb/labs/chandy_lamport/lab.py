"""The Chandy-Lamport lab's definition, for the registry (:mod:`absnb.labs.registry`)."""

from __future__ import annotations

from absnb.core.job import Job
from absnb.i18n import N_
from absnb.jobs.bank_transfer import bank_transfer
from absnb.labs.chandy_lamport.cases import scripted_cases
from absnb.labs.chandy_lamport.handler import MarkerHandler, MarkerLabProtocol
from absnb.labs.chandy_lamport.runs import random_runs
from absnb.labs.chandy_lamport.search import SEARCHES
from absnb.labs.lab import Lab
from absnb.labs.spark import SparkCase
from absnb.protocols.chandy_lamport import ChandyLamportHandler
from absnb.runtime.failures import Failure


def spark_bank() -> Job:
    """Accounts A, B and D, every pair linked both ways, 1,500 transfers: A and B share a
    Spark task, D has the other, so transfers and markers cross between them."""
    return bank_transfer({"A": 10_000, "B": 5_000, "D": 7_000}, transfers=1_500, seed=4)


CHANDY_LAMPORT = Lab(
    name="chandy-lamport",
    base=MarkerHandler,
    reference=ChandyLamportHandler,
    accepts=(MarkerHandler, ChandyLamportHandler),
    scripted=scripted_cases,
    random_runs=random_runs,
    searches=SEARCHES,
    spark=SparkCase(
        title=N_("bank A, B, D (every pair linked), 1,500 transfers"),
        job=spark_bank,
        protocol=MarkerLabProtocol,
        failure=Failure("D", after_checkpoint=2),
        checkpoint_interval=0.05,
        source_rate=500,  # a second an account: snapshots complete during the run
    ),
)
"""Chandy-Lamport: the student's subclass of
:class:`~absnb.labs.chandy_lamport.handler.MarkerHandler`, or the package's own
:class:`~absnb.protocols.chandy_lamport.ChandyLamportHandler`."""
