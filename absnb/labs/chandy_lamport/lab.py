"""The Chandy-Lamport lab's definition, for the registry (:mod:`absnb.labs.registry`)."""

from __future__ import annotations

from absnb.labs.chandy_lamport.cases import scripted_cases
from absnb.labs.chandy_lamport.handler import MarkerHandler
from absnb.labs.chandy_lamport.runs import random_runs
from absnb.labs.chandy_lamport.search import SEARCHES
from absnb.labs.lab import Lab
from absnb.protocols.chandy_lamport import ChandyLamportHandler

CHANDY_LAMPORT = Lab(
    name="chandy-lamport",
    base=MarkerHandler,
    reference=ChandyLamportHandler,
    accepts=(MarkerHandler, ChandyLamportHandler),
    scripted=scripted_cases,
    random_runs=random_runs,
    searches=SEARCHES,
)
"""Chandy-Lamport: the student's subclass of
:class:`~absnb.labs.chandy_lamport.handler.MarkerHandler`, or the package's own
:class:`~absnb.protocols.chandy_lamport.ChandyLamportHandler`."""
