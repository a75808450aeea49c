"""What a host has taken from its inputs and not yet delivered, in pieces small enough for a
priority event to come between them.

Flink's task thread processes one network buffer at a time and takes priority events (an
unaligned checkpoint's barrier; never a cancellation marker, which comes in order) between
two buffers, however slow its operator ("Checkpointing under backpressure": the barrier
overtakes the buffers in front of it). A host here takes whole frames from the data plane
and whole batches from its local queues; with a protocol whose barriers overtake,
:func:`pieces` cuts a batch into pieces of at most :data:`PIECE` records, and the host
looks for priority events between two pieces. A barrier that arrives then overtakes,
besides what waits in the transport, the records the host holds for its channel
(:meth:`Inbox.held`), which it still delivers after the barrier.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from absnb.core.ids import ChannelId
from absnb.core.messages import Record, RecordBatch
from absnb.protocols.overtaken import overtaken

PIECE = 64
"""The most records of one batch a host delivers before it looks for priority events."""


def pieces(message: Any, limit: int = PIECE) -> tuple[Any, Any | None]:
    """``message`` cut after ``limit`` records: the first piece, and the rest (None if
    there is none). Anything but a large batch is one piece."""
    if type(message) is not RecordBatch or len(message) <= limit:
        return message, None
    values, first = message.values, message.first
    return RecordBatch(values[:limit], first), RecordBatch(values[limit:], first + limit)


def take(queue: deque[Any], split: bool) -> tuple[Any, bool]:
    """The next message of ``queue``, or with ``split`` its first piece (the rest stays
    first in the queue); and whether it was the whole message."""
    m = queue.popleft()
    if not split:
        return m, True
    m, rest = pieces(m)
    if rest is not None:
        queue.appendleft(rest)
    return m, rest is None


class Inbox:
    """Messages a host has taken from the data plane, in the order it delivers them."""

    def __init__(self) -> None:
        self.queue: deque[tuple[ChannelId, Any]] = deque()

    def __bool__(self) -> bool:
        return bool(self.queue)

    def extend(self, messages: list[tuple[ChannelId, Any]]) -> None:
        """Messages handed out by the data plane, after those held already."""
        self.queue.extend(messages)

    def take(self, split: bool) -> tuple[ChannelId, Any]:
        """The next message, or its first piece with ``split`` (the rest stays first)."""
        c, m = self.queue.popleft()
        if split:
            m, rest = pieces(m)
            if rest is not None:
                self.queue.appendleft((c, rest))
        return c, m

    def held(self, channel: ChannelId) -> tuple[Record | RecordBatch, ...]:
        """The records held for ``channel``, in order: what a barrier arriving on it now
        overtakes at this host."""
        return overtaken(m for c, m in self.queue if c == channel)
