"""Checks of what a user passes to :meth:`SparkRuntime.run <absnb.runtime.SparkRuntime.run>`, made
before any Spark job starts (a :class:`~absnb.runtime.failures.Failure` checks its own fields).

A failure spec that names no task of the job, has no condition, or an unknown kind would
never fire (or fire as the wrong kind); ``max_restarts=-1`` ran no attempt at all; an
interval of 0, below 0 or given as a string broke deep in the coordinator. Each is refused
here with an error naming the value and what is allowed (see :mod:`absnb.core.validate`).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING

from absnb.core import validate
from absnb.core.errors import InvalidTypeError, InvalidValueError
from absnb.protocols import get_protocol
from absnb.protocols.base import BarrierHandler, SnapshotProtocol
from absnb.runtime.failures import Failure

if TYPE_CHECKING:
    from absnb.core.job import Job


def check_run(
    job: object,
    protocol: object,
    checkpoint_interval: object,
    failures: object,
    max_restarts: object,
    allow_deadlock: object,
    source_rate: object,
    hosts: object = None,
    restore_older: object = False,
    min_pause: object = 0.0,
    keep_states: object = True,
    tolerable_failed_checkpoints: object = 0,
) -> None:
    """The arguments of :meth:`SparkRuntime.run <absnb.runtime.SparkRuntime.run>` (and the
    runtime's ``hosts``), checked before any Spark job starts."""
    from absnb.core.job import runnable_job

    checked = runnable_job(job, "SparkRuntime.run")
    check_protocol(protocol)
    validate.interval("checkpoint_interval (seconds)", checkpoint_interval)
    validate.nonnegative("min_pause (seconds after a completed checkpoint)", min_pause)
    restarts = validate.whole("max_restarts", max_restarts, minimum=0)
    validate.flag("allow_deadlock", allow_deadlock)
    validate.flag("restore_older", restore_older)
    validate.flag("keep_states", keep_states)
    validate.optional_whole("hosts", hosts, minimum=1)
    validate.whole(
        "tolerable_failed_checkpoints (how many checkpoints in a row may fail to be written "
        "before the run stops; 0 stops it at the first, as Flink does by default)",
        tolerable_failed_checkpoints,
    )
    validate.positive("source_rate", source_rate, optional=True)
    if isinstance(failures, Failure | str | bytes) or not isinstance(failures, Sequence):
        raise InvalidTypeError(
            f"failures must be a list of Failure, e.g. [Failure('count[1]', after_records=100)]"
            f", not {failures!r:.80}"
        )
    check_failures(checked, failures, restarts)
    declines = [f for f in failures if f.kind == "decline"]
    assert isinstance(protocol, str | SnapshotProtocol)  # check_protocol
    waiting = [f for f in failures if f.after_checkpoint is not None]
    if waiting and get_protocol(protocol).max_concurrent == 0:
        raise InvalidValueError(
            f"{waiting[0]} would never fire: protocol {protocol!r} takes no checkpoints, so "
            "none ever completes; use after_records=N, or a snapshot protocol such as 'abs'"
        )
    if declines and not get_protocol(protocol).may_be_declined:
        raise InvalidValueError(
            f"{declines[0]} would never fire: protocol {protocol!r} takes no declines (a "
            "Chandy-Lamport snapshot, or none at all); use kind='raise' or 'kill', or a "
            "barrier protocol such as 'abs'"
        )


def check_protocol(protocol: object) -> None:
    """``protocol`` is a protocol's name or a :class:`~absnb.protocols.base.SnapshotProtocol`
    object (which the executors receive pickled, its classes by value when they are defined in
    a notebook); a class of either kind is refused with the call that makes the object."""
    if isinstance(protocol, str | SnapshotProtocol):
        return
    names = "a name such as 'abs' or 'chandy-lamport', or a SnapshotProtocol object"
    if isinstance(protocol, type) and issubclass(protocol, SnapshotProtocol):
        needs = any(
            p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            for p in inspect.signature(protocol).parameters.values()
        )
        raise InvalidTypeError(
            f"protocol must be {names}, not the class {protocol.__name__}: pass an object of "
            f"it, {protocol.__name__}({'...' if needs else ''})"
        )
    if isinstance(protocol, type) and issubclass(protocol, BarrierHandler):
        raise InvalidTypeError(
            f"protocol must be {names}, not the handler class {protocol.__name__}: wrap it in "
            f"its lab's protocol, e.g. absnb.labs.LabProtocol({protocol.__name__}) (ABS) or "
            f"absnb.labs.MarkerLabProtocol({protocol.__name__}) (Chandy-Lamport)"
        )
    raise InvalidTypeError(f"protocol must be {names}, not {protocol!r:.80}")


def check_shipped(protocol: SnapshotProtocol) -> None:
    """A protocol object pickles, as the driver ships it to every host.

    Raises:
        InvalidValueError: it does not (it holds a lock, a file, a connection).
    """
    from pyspark import cloudpickle

    try:
        cloudpickle.dumps(protocol)  # type: ignore[no-untyped-call]  # pyspark's, unannotated
    except Exception as e:
        raise InvalidValueError(
            f"protocol {protocol!r:.80} cannot be pickled, so it cannot reach the executors "
            f"({type(e).__name__}: {e}): keep in it only what pickles (classes, numbers, "
            "strings), and make locks, files or connections in its handlers instead"
        ) from None


def check_checkpoint_dir(checkpoint_dir: object) -> None:
    """``SparkRuntime(checkpoint_dir=...)``: None (a fresh temporary folder) or a path or URL
    that is not empty (an empty one was silently replaced by a temporary folder)."""
    if checkpoint_dir is None:
        return
    if not isinstance(checkpoint_dir, str | PathLike):
        raise InvalidTypeError(
            f"checkpoint_dir must be a path or URL, or None for a temporary folder, not "
            f"{checkpoint_dir!r:.80}"
        )
    if not str(checkpoint_dir).strip():
        raise InvalidValueError(
            "checkpoint_dir is empty: name a folder (or URL) for the checkpoints, or pass None "
            "for a temporary one"
        )


def check_failures(job: Job, failures: Sequence[object], max_restarts: int) -> None:
    """Every failure is a :class:`~absnb.runtime.failures.Failure` naming a task of ``job``, in
    an attempt that runs (at most ``max_restarts``), and no two fail one task in one attempt
    (only the first can fire: the attempt ends there)."""

    names = [str(t) for t in job.graph.tasks]
    checked: list[Failure] = []
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
        checked.append(f)
    _check_attempts(checked, max_restarts)


def _check_attempts(failures: Sequence[Failure], max_restarts: int) -> None:
    """Each failure's attempt runs: it is at most ``max_restarts``, and the attempt before
    it has a failure that ends it; no two failures end one attempt of one task."""
    ending = {f.attempt for f in failures if f.kind != "decline"}
    for f in failures:
        if f.attempt > max_restarts:
            raise InvalidValueError(
                f"Failure({f.task!r}, attempt={f.attempt}) would never fire: with "
                f"max_restarts={max_restarts} the last attempt is {max_restarts}; lower the "
                "attempt or raise max_restarts"
            )
        if f.attempt > 0 and f.attempt - 1 not in ending:
            raise InvalidValueError(
                f"Failure({f.task!r}, attempt={f.attempt}) would never fire: attempt "
                f"{f.attempt} starts only once attempt {f.attempt - 1} fails, and no failure "
                f"(raise or kill) is given for attempt {f.attempt - 1}: add one, or use "
                f"attempt={f.attempt - 1}"
            )
    seen: dict[tuple[str, int], Failure] = {}
    for f in failures:
        if f.kind == "decline":
            continue  # a decline does not end the attempt
        first = seen.setdefault((f.task, f.attempt), f)
        if first is not f:
            raise InvalidValueError(
                f"two failures of {f.task} in attempt {f.attempt} ({first} and {f}): the "
                f"first to fire ends the attempt, so the other never fires; give it "
                f"attempt={f.attempt + 1}, or drop one"
            )
