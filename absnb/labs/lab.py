"""What a lab is: the class a student subclasses, the package's own handler it is compared
with, and the parts that check it (:func:`~absnb.labs.grade.check` runs them in order)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from absnb.labs.report import PartResult
from absnb.labs.search import Search
from absnb.labs.spark import SparkCase
from absnb.operators.base import Operator
from absnb.protocols.base import BarrierHandler


@dataclass(frozen=True)
class Lab:
    """One lab.

    Attributes:
        name: what ``check(..., lab=name)`` calls it (``abs``, ``chandy-lamport``,
            ``two-phase-commit``).
        base: the class a student subclasses (its decisions left to write): a protocol's
            handler, or a sink operator (two-phase commit).
        reference: the package's own handler or sink, the known-good one (it passes every
            part).
        accepts: the classes whose subclasses the lab checks (the base and the reference's
            family).
        scripted: part a, scripted cases at one task, compared with the reference.
        random_runs: part b, seeded random runs, with and without crashes.
        searches: part c, breadth-first explorations, smallest first; the first violation
            is the shortest counterexample.
        spark: part d, one run on Spark with a failure (None: the lab has none).
    """

    name: str
    base: type[BarrierHandler] | type[Operator]
    reference: type[BarrierHandler] | type[Operator]
    accepts: tuple[type[BarrierHandler] | type[Operator], ...]
    scripted: Callable[[type[Any]], PartResult]
    random_runs: Callable[[type[Any]], PartResult]
    searches: Sequence[Search]
    spark: SparkCase | None = None

    def takes(self, handler_class: object) -> bool:
        """Whether ``handler_class`` is a class this lab checks."""
        return isinstance(handler_class, type) and issubclass(handler_class, self.accepts)

    @property
    def base_name(self) -> str:
        """The base class as a student imports it."""
        return f"absnb.labs.{self.base.__name__}"
