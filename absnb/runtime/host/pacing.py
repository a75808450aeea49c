"""How much a host's sources may emit now: a batch at most, no faster than ``source_rate``,
nothing while what they sent waits here (backpressure), and no more than half their input
before the checkpoint an injected failure waits for has completed (:data:`HOLD_SECONDS`)."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from absnb.core.ids import ChannelId, TaskId
from absnb.runtime.plan import HostPlan

HOLD_SECONDS = 60.0
"""The longest a source holds the second half of its input back for the checkpoint an
``after_checkpoint`` failure of its attempt waits for. Flink's test
sources wait for checkpoints the same way (``FiniteTestSource`` ends only after two have
completed): without the hold, a run whose input ends before that checkpoint completes (a
short input, a loaded machine) never fires its failure. After it, the run goes on and
reports the failure as not fired. Not the checkpoint a failure fails during or is told of:
that may be the final checkpoint, which comes only once the input has ended."""


MAX_QUEUED = 4
"""Messages (mostly record batches) a source may have waiting in a local queue before it
waits for them to be consumed."""


class SourcePacing:
    """The pace of the sources of one host (:meth:`entries`)."""

    def __init__(self, plan: HostPlan) -> None:
        self.plan = plan
        self.rate_start: dict[TaskId, tuple[float, int]] = {}  # source_rate's reference
        self.hold_for = min(
            (
                f.after_checkpoint
                for f in plan.failures
                if f.attempt == plan.attempt and f.after_checkpoint is not None
            ),
            default=None,
        )
        """The checkpoint the sources wait for, at half their input (None: no hold)."""
        self.hold_began: float | None = None

    def entries(
        self,
        t: TaskId,
        offset: int,
        left: int,
        queues: dict[ChannelId, deque[Any]],
        unsent: int,
        notified: int = 0,
    ) -> int:
        """Entries of its input log source ``t`` (at ``offset``, ``left`` to go) may emit
        now, given the host's local ``queues``, ``unsent`` network bytes and the newest
        checkpoint this host has heard complete (``notified``)."""
        left = min(left, self.before_hold(offset, left, notified))
        if left <= 0 or self.backlogged(t, queues, unsent):
            return 0
        n = min(self.plan.source_batch, left)
        if self.plan.source_rate is not None:
            n = min(n, self.allowed(t, offset))
        return n

    def before_hold(self, offset: int, left: int, notified: int) -> int:
        """Entries a source at ``offset`` may read before the hold (all ``left`` when there
        is none, or once checkpoint :attr:`hold_for` completed or :data:`HOLD_SECONDS`
        passed): up to half its input log."""
        if self.hold_for is None or notified >= self.hold_for:
            return left
        half = (offset + left) // 2
        if offset < half:
            return half - offset
        now = time.monotonic()
        if self.hold_began is None:
            self.hold_began = now
        return left if now - self.hold_began > HOLD_SECONDS else 0

    def allowed(self, t: TaskId, offset: int) -> int:
        """Entries source ``t`` may read now under ``source_rate``, counted from the start of
        this attempt's loop (or its first call) and the offset it had then."""
        now = time.monotonic()
        began, first = self.rate_start.setdefault(t, (now, offset))
        rate = self.plan.source_rate or 0.0
        return max(0, int((now - began) * rate) + 1 - (offset - first))

    def backlogged(self, t: TaskId, queues: dict[ChannelId, deque[Any]], unsent: int) -> bool:
        """Backpressure: a source waits while what it sent is still queued here (local
        queues, unsent network bytes), so that barriers never wait behind a long backlog
        and alignment stays short."""
        for c in self.plan.job.graph.outputs[t]:
            q = queues.get(c)
            if q is not None and len(q) > MAX_QUEUED:
                return True
        return unsent > self.plan.max_unsent_bytes
