"""The labs there are, by name: :func:`~absnb.labs.grade.check` dispatches to one of them.

- ``abs``: ABS Algorithm 1 at one task (:class:`~absnb.labs.handler.AbsHandler`),
  checked against the package's
  :class:`~absnb.protocols.aligned.AlignedBarrierHandler`;
- ``chandy-lamport``: Chandy-Lamport at one process
  (:class:`~absnb.labs.chandy_lamport.handler.MarkerHandler`), checked against the
  package's :class:`~absnb.protocols.chandy_lamport.ChandyLamportHandler`;
- ``abs-cyclic``: the ABS lab's extension, Algorithm 2 at one task
  (:class:`~absnb.labs.cyclic.handler.CyclicAbsHandler`), checked against the package's
  :class:`~absnb.protocols.cyclic.CyclicBarrierHandler`;
- ``two-phase-commit``: the checkpoint glue of an exactly-once sink
  (:class:`~absnb.labs.two_phase_commit.handler.TransactionalSink`), checked against the
  package's :class:`~absnb.sinks.MemorySink`.

A class two labs take (Algorithm 2's handlers are aligning handlers too) goes, unless a lab
is named, to the lab whose class is nearest in its method resolution order.
"""

from __future__ import annotations

from absnb.i18n import N_
from absnb.labs.cases import scripted_cases
from absnb.labs.chandy_lamport.lab import CHANDY_LAMPORT
from absnb.labs.cyclic.lab import CYCLIC
from absnb.labs.handler import AbsHandler, LabProtocol
from absnb.labs.lab import Lab
from absnb.labs.runs import random_runs
from absnb.labs.search import SEARCHES
from absnb.labs.spark import SparkCase, spark_word_count
from absnb.labs.two_phase_commit.lab import TWO_PHASE_COMMIT
from absnb.protocols.aligned import AlignedBarrierHandler
from absnb.protocols.aligning import AligningHandler
from absnb.runtime.failures import Failure

ABS = Lab(
    name="abs",
    base=AbsHandler,
    reference=AlignedBarrierHandler,
    accepts=(AligningHandler,),
    scripted=scripted_cases,
    random_runs=random_runs,
    searches=SEARCHES,
    spark=SparkCase(
        title=N_("word count 2 x 2 x 2 over 2,000 lines"),
        job=spark_word_count,
        protocol=LabProtocol,
        failure=Failure("count[1]", after_checkpoint=2),
        checkpoint_interval=0.05,
        # two seconds a source; the sources hold half of it back until the checkpoint the
        # failure waits for completes (absnb.runtime.host.pacing.HOLD_SECONDS)
        source_rate=500,
    ),
)
"""ABS Algorithm 1: any barrier-aligning handler (the student's subclass of
:class:`~absnb.labs.handler.AbsHandler`, or the package's own)."""

LABS: dict[str, Lab] = {lab.name: lab for lab in (ABS, CYCLIC, CHANDY_LAMPORT, TWO_PHASE_COMMIT)}
"""Every lab, by name."""


def lab_for(handler_class: object, name: str | None) -> Lab:
    """The lab called ``name``, or (None) the one whose classes ``handler_class`` subclasses.

    Raises:
        InvalidValueError: an unknown lab.
        InvalidTypeError: ``handler_class`` is no class that lab (or any lab) checks.
    """
    from absnb.core.errors import InvalidTypeError, InvalidValueError

    names = ", ".join(repr(n) for n in LABS)
    if name is not None:
        if name not in LABS:
            raise InvalidValueError(f"unknown lab {name!r}: choose one of {names}")
        lab = LABS[name]
        if lab.takes(handler_class):
            return lab
        other = next((k for k, lab2 in LABS.items() if lab2.takes(handler_class)), None)
        shown = getattr(handler_class, "__name__", "")
        hint = f" ({shown} is a handler of the {other!r} lab)" if other else ""
        raise InvalidTypeError(
            f"the {name!r} lab checks a class that subclasses {lab.base_name}, not "
            f"{handler_class!r:.80}{hint}"
        )
    taking = [lab for lab in LABS.values() if lab.takes(handler_class)]
    if taking:
        return min(taking, key=lambda lab: _distance(handler_class, lab))
    bases = " or ".join(f"{lab.base_name} (lab {lab.name!r})" for lab in LABS.values())
    raise InvalidTypeError(
        f"check needs a class that subclasses {bases}, not {handler_class!r:.80}"
    )


def _distance(handler_class: object, lab: Lab) -> int:
    """How far up ``handler_class``'s method resolution order the nearest class ``lab``
    accepts is."""
    mro = handler_class.__mro__ if isinstance(handler_class, type) else ()
    return min(mro.index(c) for c in lab.accepts if c in mro)
