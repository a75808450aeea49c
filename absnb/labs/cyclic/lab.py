"""The ABS lab's extension, Algorithm 2, for the registry (:mod:`absnb.labs.registry`)."""

from __future__ import annotations

from absnb.labs.cyclic.cases import scripted_cases
from absnb.labs.cyclic.handler import CyclicAbsHandler
from absnb.labs.cyclic.runs import random_runs
from absnb.labs.cyclic.search import SEARCHES
from absnb.labs.lab import Lab
from absnb.protocols.cyclic import CyclicBarrierHandler

CYCLIC = Lab(
    name="abs-cyclic",
    base=CyclicAbsHandler,
    reference=CyclicBarrierHandler,
    accepts=(CyclicAbsHandler, CyclicBarrierHandler),
    scripted=scripted_cases,
    random_runs=random_runs,
    searches=SEARCHES,
)
"""ABS Algorithm 2: the student's subclass of
:class:`~absnb.labs.cyclic.handler.CyclicAbsHandler`, or the package's own
:class:`~absnb.protocols.cyclic.CyclicBarrierHandler`."""
