"""How much a host's sources may emit now: a batch at most, no faster than ``source_rate``,
and nothing while what they sent waits here (backpressure)."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from absnb.core.ids import ChannelId, TaskId
from absnb.runtime.plan import HostPlan

MAX_QUEUED = 4
"""Messages (mostly record batches) a source may have waiting in a local queue before it
waits for them to be consumed."""


class SourcePacing:
    """The pace of the sources of one host (:meth:`entries`)."""

    def __init__(self, plan: HostPlan) -> None:
        self.plan = plan
        self.rate_start: dict[TaskId, tuple[float, int]] = {}  # source_rate's reference

    def entries(
        self,
        t: TaskId,
        offset: int,
        left: int,
        queues: dict[ChannelId, deque[Any]],
        unsent: int,
    ) -> int:
        """Entries of its input log source ``t`` (at ``offset``, ``left`` to go) may emit
        now, given the host's local ``queues`` and ``unsent`` network bytes."""
        if left <= 0 or self.backlogged(t, queues, unsent):
            return 0
        n = min(self.plan.source_batch, left)
        if self.plan.source_rate is not None:
            n = min(n, self.allowed(t, offset))
        return n

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
