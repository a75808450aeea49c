"""Checks of what a user passes to :meth:`SparkRuntime.run`, made before any Spark job
starts (a :class:`~absnb.runtime.failures.Failure` checks its own fields).

A failure spec that names no task of the job, has no condition, or an unknown kind would
never fire (or fire as the wrong kind); ``max_restarts=-1`` ran no attempt at all; an
interval of 0, below 0 or given as a string broke deep in the coordinator. Each is refused
here with an error naming the value and what is allowed (see :mod:`absnb.core.validate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from absnb.core import validate
from absnb.core.errors import InvalidTypeError, InvalidValueError
from absnb.runtime.failures import Failure

if TYPE_CHECKING:
    from absnb.jobs.base import Job


def check_run(
    job: Any,
    protocol: Any,
    checkpoint_interval: Any,
    failures: Any,
    max_restarts: Any,
    allow_deadlock: Any,
    source_rate: Any,
    hosts: Any = None,
) -> None:
    """The arguments of :meth:`SparkRuntime.run` (and the runtime's ``hosts``), checked
    before any Spark job starts."""
    from absnb.jobs.base import Job

    if not isinstance(job, Job):
        raise InvalidTypeError(
            f"run needs a Job, such as absnb.word_count(), not {job!r:.80} ({type(job).__name__})"
        )
    missing = [n for n, op in job.graph.operators.items() if op.function is None]
    if missing:
        raise InvalidValueError(
            f"operator {missing[0]!r} of job {job.name!r} has no function (None), so it cannot "
            "run: pass an absnb.operators.Operator to JobGraph.add"
        )
    if not isinstance(protocol, str):
        raise InvalidTypeError(
            f"protocol must be a protocol name such as 'abs' or 'chandy-lamport', not {protocol!r}"
        )
    validate.interval("checkpoint_interval (seconds)", checkpoint_interval)
    validate.whole("max_restarts", max_restarts, minimum=0)
    validate.flag("allow_deadlock", allow_deadlock)
    validate.optional_whole("hosts", hosts, minimum=1)
    validate.positive("source_rate", source_rate, optional=True)
    if isinstance(failures, Failure | str | bytes) or not isinstance(failures, Sequence):
        raise InvalidTypeError(
            f"failures must be a list of Failure, e.g. [Failure('count[1]', after_records=100)]"
            f", not {failures!r:.80}"
        )
    check_failures(job, failures)


def check_failures(job: Job, failures: Sequence[Any]) -> None:
    """Every failure is a :class:`Failure` naming a task of ``job``."""

    names = [str(t) for t in job.graph.tasks]
    for i, f in enumerate(failures):
        if not isinstance(f, Failure):
            raise InvalidTypeError(
                f"failures[{i}] is {f!r:.80}, not a Failure: write "
                "Failure('count[1]', after_records=100)"
            )
        if f.task not in names:
            raise InvalidValueError(
                f"Failure({f.task!r}) names no task of job {job.name!r}, so it would never "
                f"fire: use one of {', '.join(names)}"
            )
