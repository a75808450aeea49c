"""Failures injected on purpose into a run on the real runtime (teaching and tests).

A :class:`Failure` names a task, an attempt and a moment (after some records, during a
checkpoint, before or after a sink's commit); the host running that task fires it there,
raising :class:`InjectedFailure` or killing its own process, as a crashed machine would.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from absnb.core import validate
from absnb.core.errors import InvalidValueError

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
    records (checked after each batch, so it may have consumed up to a batch more), when it
    takes its part of checkpoint ``during_checkpoint`` (a sink: right after its pre-commit),
    or when it hears that checkpoint ``notified`` is complete: before it commits, or after
    (``after_commit``), the phases of two-phase commit.

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
    conditions = [f.after_records, f.during_checkpoint, f.notified]
    if all(c is None for c in conditions):
        raise InvalidValueError(
            f"Failure({f.task!r}) has no condition, so it would never fire: give one of "
            "after_records=N, during_checkpoint=N or notified=N"
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


class Injections:
    """The failures and declines one host injects in one attempt, by task name."""

    def __init__(self, failures: Sequence[Failure], attempt: int) -> None:
        mine = [f for f in failures if f.attempt == attempt]
        self.failures = [f for f in mine if f.kind != "decline"]
        self.declines = {(f.task, f.during_checkpoint) for f in mine if f.kind == "decline"}

    def declines_checkpoint(self, task: str, checkpoint_id: int) -> bool:
        """``task`` is to decline ``checkpoint_id``."""
        return (task, checkpoint_id) in self.declines

    def after_records(self, task: str, total: int) -> None:
        """``task`` has consumed ``total`` records."""
        for f in self.failures:
            if f.after_records is not None and f.task == task and total >= f.after_records:
                f.fire(f"after {total} records")

    def during_checkpoint(self, task: str, checkpoint_id: int) -> None:
        """``task`` takes its part of ``checkpoint_id``."""
        for f in self.failures:
            if f.during_checkpoint == checkpoint_id and f.task == task:
                f.fire(f"during checkpoint {checkpoint_id}")

    def notified(self, task: str, checkpoint_id: int, *, after_commit: bool) -> None:
        """``task`` hears that ``checkpoint_id`` is complete, before or after its commit."""
        for f in self.failures:
            if f.notified == checkpoint_id and f.task == task and f.after_commit == after_commit:
                when = "after" if after_commit else "before"
                f.fire(f"notified of checkpoint {checkpoint_id}, {when} its commit")
