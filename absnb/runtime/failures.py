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

    def fire(self, reason: str) -> None:
        if self.kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise InjectedFailure(f"injected failure of {self.task}: {reason}")
