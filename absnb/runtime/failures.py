"""Failures injected on purpose into a run on the real runtime (teaching and tests).

A :class:`Failure` names a task, an attempt and a moment (after some records, during a
checkpoint, before or after a sink's commit); the host running that task fires it there,
raising :class:`InjectedFailure` or killing its own process, as a crashed machine would.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from absnb.core import validate
from absnb.core.errors import InvalidValueError
from absnb.core.events import EventRow

KINDS = ("raise", "kill", "decline")


FOLLOWING = ("ConnectionError", "ConnectionResetError", "BrokenPipeError", "EOFError")
"""How a host's failure report starts when it only follows from another host's: a peer
closed or dropped a channel under it."""


def follows_from_a_peer(error: str) -> bool:
    """Whether the failure report ``error`` only follows from another host's failure."""
    return error.startswith(FOLLOWING)


class InjectedFailure(RuntimeError):
    """A failure injected on purpose (teaching and tests)."""


@dataclass(frozen=True)
class Failure:
    """Make ``task`` fail in attempt ``attempt``: once it has consumed ``after_records``
    records (checked after each batch, so it may have consumed up to a batch more); once
    checkpoint ``after_checkpoint`` (or a newer one) has completed, at the first records it
    consumes after hearing so (``after_records=n`` more: once it has consumed n more), so
    that the restart restores a completed checkpoint; when it
    takes its part of checkpoint ``during_checkpoint`` (a sink: right after its pre-commit),
    or when it first hears that checkpoint ``notified`` or a newer one is complete: before it
    commits, or after (``after_commit``), the phases of two-phase commit. A two-phase-commit
    sink fails there only once it holds a transaction pre-committed for that checkpoint (a
    sink that had nothing to pre-commit has no commit to fail between), so the restart
    always has a pre-committed transaction to commit on restore.

    An ``after_checkpoint`` failure makes the sources of its attempt hold the second half
    of their input back until that checkpoint completes
    (:data:`~absnb.runtime.host.pacing.HOLD_SECONDS` at most), so that a short input does
    not end before it.

    ``kind`` ``raise`` raises in the task's Python worker; ``kill`` kills the worker with
    SIGKILL, as a crashed machine would; ``decline`` (with ``during_checkpoint``) is no
    failure: the task declines that checkpoint when its first barrier (or trigger) comes
    (Flink: ``declineCheckpoint``), and the run goes on.
    """

    task: str
    after_records: int | None = None
    during_checkpoint: int | None = None
    kind: Literal["raise", "kill", "decline"] = "raise"
    attempt: int = 0
    notified: int | None = None
    after_commit: bool = False
    after_checkpoint: int | None = None

    def __post_init__(self) -> None:
        check_failure(self)

    def fire(self, reason: str) -> None:
        if self.kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise InjectedFailure(f"injected failure of {self.task}: {reason}")


def check_failure(f: Failure) -> None:
    """A :class:`Failure`'s own fields: a task name, one condition, a known kind."""
    validate.text("Failure.task (a task's printed name, e.g. 'count[1]')", f.task)
    validate.choice("Failure.kind", f.kind, KINDS)
    validate.whole("Failure.attempt", f.attempt, minimum=0)
    validate.optional_whole("Failure.after_records", f.after_records, minimum=0)
    validate.optional_whole("Failure.during_checkpoint", f.during_checkpoint, minimum=1)
    validate.optional_whole("Failure.notified", f.notified, minimum=1)
    validate.flag("Failure.after_commit", f.after_commit)
    validate.optional_whole("Failure.after_checkpoint", f.after_checkpoint, minimum=1)
    if f.after_checkpoint is not None:
        if f.during_checkpoint is not None or f.notified is not None or f.kind == "decline":
            raise InvalidValueError(
                f"Failure({f.task!r}, after_checkpoint={f.after_checkpoint}) takes only "
                "after_records=N (records more) besides: drop during_checkpoint, notified or "
                "kind='decline', or use two Failures"
            )
        return
    conditions = [f.after_records, f.during_checkpoint, f.notified]
    if all(c is None for c in conditions):
        raise InvalidValueError(
            f"Failure({f.task!r}) has no condition, so it would never fire: give one of "
            "after_records=N, after_checkpoint=N, during_checkpoint=N or notified=N"
        )
    if sum(c is not None for c in conditions) > 1:
        raise InvalidValueError(
            f"Failure({f.task!r}) has more than one condition (after_records="
            f"{f.after_records!r}, during_checkpoint={f.during_checkpoint!r}, notified="
            f"{f.notified!r}): give exactly one; use two Failures for two"
        )
    if f.kind == "decline" and f.during_checkpoint is None:
        raise InvalidValueError(
            f"Failure({f.task!r}, kind='decline') needs during_checkpoint=N: the checkpoint "
            "the task declines"
        )
    if f.after_commit and f.notified is None:
        raise InvalidValueError(
            f"Failure({f.task!r}, after_commit=True) needs notified=N: after_commit says "
            "whether it fails before or after the commit of checkpoint N"
        )


def declines(failures: Sequence[Failure], attempt: int, task: str) -> frozenset[int]:
    """The checkpoints ``task`` is to decline in ``attempt`` (its
    :attr:`~absnb.task.StreamTask.declines`)."""
    return frozenset(
        f.during_checkpoint
        for f in failures
        if f.kind == "decline" and f.task == task and f.attempt == attempt
        if f.during_checkpoint is not None
    )


class Injections:
    """The failures one host injects in one attempt, by task name (its declines are its
    tasks': :func:`declines`).

    ``on_fire``, if given, hears of a failure just before it fires (the host records it in
    its event log and sends the log on, which a killed process could not do after)."""

    def __init__(
        self,
        failures: Sequence[Failure],
        attempt: int,
        on_fire: Callable[[Failure, str], None] | None = None,
    ) -> None:
        mine = [f for f in failures if f.attempt == attempt]
        self.failures = [f for f in mine if f.kind != "decline"]
        self.on_fire = on_fire
        self.armed: dict[Failure, int | None] = {
            f: None for f in self.failures if f.after_checkpoint is not None
        }
        """For each ``after_checkpoint`` failure, the records its task had consumed when it
        heard that the checkpoint completed (None: not yet)."""
        self.totals: dict[str, int] = {}

    def _fire(self, f: Failure, reason: str) -> None:
        if self.on_fire is not None:
            self.on_fire(f, reason)
        f.fire(reason)

    def after_records(self, task: str, total: int) -> None:
        """``task`` has consumed ``total`` records."""
        self.totals[task] = total
        for f in self.failures:
            if f.task != task:
                continue
            if f.after_checkpoint is not None:
                armed = self.armed[f]
                if armed is not None and total - armed >= max(1, f.after_records or 0):
                    self._fire(
                        f,
                        f"after checkpoint {f.after_checkpoint} completed and "
                        f"{total - armed} records more",
                    )
            elif f.after_records is not None and total >= f.after_records:
                self._fire(f, f"after {total} records")

    def during_checkpoint(self, task: str, checkpoint_id: int) -> None:
        """``task`` takes its part of ``checkpoint_id``."""
        for f in self.failures:
            if f.during_checkpoint == checkpoint_id and f.task == task:
                self._fire(f, f"during checkpoint {checkpoint_id}")

    def notified(
        self, task: str, checkpoint_id: int, *, after_commit: bool, committing: bool = True
    ) -> None:
        """``task`` hears that ``checkpoint_id`` is complete, before or after its commit;
        ``committing``: it has a pre-committed transaction to commit for it (always true of
        a task that is not a two-phase-commit sink)."""
        for f, armed in self.armed.items():
            done = f.after_checkpoint is not None and checkpoint_id >= f.after_checkpoint
            if armed is None and f.task == task and done and after_commit:
                self.armed[f] = self.totals.get(task, 0)
        for f in self.failures:
            due = f.notified is not None and checkpoint_id >= f.notified and committing
            if due and f.task == task and f.after_commit == after_commit:
                when = "after" if after_commit else "before"
                self._fire(f, f"notified of checkpoint {checkpoint_id}, {when} its commit")


def fired(f: Failure, rows: Sequence[EventRow], errors: Sequence[str]) -> bool:
    """Whether failure ``f`` fired in a run with event log ``rows`` and failed attempts'
    ``errors``: its ``failure`` row (or for a decline its ``declined`` row) is in the log, or
    for a kill its attempt failed."""
    kind = "declined" if f.kind == "decline" else "failure"
    return any(r.kind == kind and r.task == f.task and r.attempt == f.attempt for r in rows) or (
        f.kind == "kill" and len(errors) > f.attempt
    )


def not_fired(
    failures: Sequence[Failure],
    rows: Sequence[EventRow],
    errors: Sequence[str],
    consumed: Mapping[str, int],
) -> dict[Failure, str]:
    """Each of ``failures`` that did not fire in a run (see :func:`fired`), with what
    happened instead; ``consumed``: the records each task consumed in the last attempt."""
    return {
        f: why_not_fired(f, consumed.get(f.task, 0), len(errors))
        for f in failures
        if not fired(f, rows, errors)
    }


def why_not_fired(f: Failure, consumed: int, restarts: int) -> str:
    """What happened instead of failure ``f``, whose task consumed ``consumed`` records in
    the run's last attempt (``restarts``), and what to change."""
    if f.attempt > restarts:
        return (
            f"the failure of {f.task} in attempt {f.attempt} never fired: the run ended in "
            f"attempt {restarts}; fail an earlier attempt"
        )
    if f.kind == "decline" or f.notified is not None or f.during_checkpoint is not None:
        n = f.notified or f.during_checkpoint
        return (
            f"the failure of {f.task} never fired: checkpoint {n} did not reach it in attempt "
            f"{f.attempt}; use a larger input, a lower source_rate or an earlier checkpoint"
        )
    want = (
        f"checkpoint {f.after_checkpoint} to complete and {f.after_records or 1} records more"
        if f.after_checkpoint is not None
        else f"{f.after_records} records"
    )
    return (
        f"the crash never fired: {f.task} consumed {consumed:,} records in attempt "
        f"{restarts} and the spec waited for {want}; use a larger input, a lower source "
        "rate or an earlier point"
    )


def committing_to(state: Any, checkpoint_id: int) -> bool:
    """A task told that ``checkpoint_id`` completed has a commit to make: a two-phase-commit
    sink holds a transaction pre-committed for it or an older one (any other task: True)."""
    pending = getattr(state, "pending", None)
    return pending is None or any(n <= checkpoint_id for n, _ in pending)
