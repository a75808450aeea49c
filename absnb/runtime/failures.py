"""Failures injected on purpose into a run on the real runtime (teaching and tests).

A :class:`Failure` names a task, an attempt and a moment (after some records, during a
checkpoint, before or after a sink's commit); the host running that task fires it there,
raising :class:`InjectedFailure` or killing its own process, as a crashed machine would.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Literal

from absnb.core import validate
from absnb.core.errors import InvalidValueError

KINDS = ("raise", "kill")


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
    SIGKILL, as a crashed machine would.
    """

    task: str
    after_records: int | None = None
    during_checkpoint: int | None = None
    kind: Literal["raise", "kill"] = "raise"
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
    if f.after_commit and f.notified is None:
        raise InvalidValueError(
            f"Failure({f.task!r}, after_commit=True) needs notified=N: after_commit says "
            "whether it fails before or after the commit of checkpoint N"
        )
