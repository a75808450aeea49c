"""The two ends of a data-plane channel as the I/O loop keeps them: a
:class:`~absnb.runtime.connections.link.Link` (socket, buffers, frame reader) with the
channel's state and counters, and the sending end's batch framed
(``_Output.seal``, the limits from :func:`~absnb.runtime.data_plane.flow.batch_limit`); and the
counters a data plane reports (:func:`plane_stats`). The I/O is
:mod:`absnb.runtime.data_plane.transport`'s."""

from __future__ import annotations

import selectors
import time
from collections import deque

from absnb.core.ids import ChannelId
from absnb.core.messages import RECORD_TYPES, RecordBatch
from absnb.runtime.connections.handshake import ClientHandshake
from absnb.runtime.connections.link import Link
from absnb.runtime.connections.wire import MAX_FRAME, dumps, encode
from absnb.runtime.data_plane.flow import SendQueue, batch_limit


def _records(batch: list[object]) -> int:
    """The records in a frame's messages (a :class:`RecordBatch` holds many)."""
    return sum(len(m) if m.__class__ is RecordBatch else m.__class__ in RECORD_TYPES for m in batch)


class _Conn(Link):
    """What both ends of a channel have: the channel and its link."""

    __slots__ = ("channel",)

    def __init__(
        self, channel: ChannelId, selector: selectors.BaseSelector, kinds: tuple[int, ...]
    ) -> None:
        super().__init__(selector, kinds, f"channel {channel}")
        self.channel = channel


class _Output(_Conn):
    """The sending end of one channel."""

    __slots__ = (
        "address",
        "batch",
        "bytes",
        "error",
        "frames",
        "handshake",
        "limit",
        "messages",
        "next_try",
        "priority",
        "records",
        "sends",
        "sized",
        "state",
    )

    def __init__(
        self,
        channel: ChannelId,
        selector: selectors.BaseSelector,
        kinds: tuple[int, ...],
        address: tuple[str, int],
        sends: SendQueue,
        handshake: ClientHandshake,
    ) -> None:
        super().__init__(channel, selector, kinds)
        self.address = address
        # connecting -> handshake (its state says what is awaited) -> ack (first CREDIT
        # awaited) -> open; refused / closed are final.
        self.state = "connecting"
        self.handshake = handshake
        self.next_try = 0.0
        self.error = ""
        self.batch: list[object] = []
        self.limit = 1  # until the first record has been sized
        self.sized = False
        self.sends = sends  # frames waiting for credit, and the credit
        self.records = self.messages = self.frames = self.bytes = 0
        self.priority = 0  # priority events sent

    def size(self, batch_records: int, batch_bytes: int) -> bool:
        """First records of the channel: set the batch limit from one pickled record; True
        if the batch is full already."""
        self.sized = True
        self.limit = batch_limit(batch_records, batch_bytes, 1, len(dumps(self.batch[-1:])))
        return len(self.batch) >= self.limit

    def seal(self, kind: int, batch_records: int, batch_bytes: int) -> bytes | None:
        """Frame the batch (a frame of ``kind``) and offer it to the credit queue: the bytes
        to write now, ``None`` if it waits for credit. The next limit follows its size."""
        batch = self.batch
        self.batch = []
        payload = dumps(batch)
        if len(payload) > MAX_FRAME:
            raise ValueError(
                f"a batch of {len(payload)} bytes on {self.channel} is larger than the frame "
                f"limit of {MAX_FRAME} bytes: send smaller records"
            )
        n = len(batch)
        self.messages += n
        self.records += _records(batch)
        self.limit = batch_limit(batch_records, batch_bytes, n, len(payload))
        self.sized = True
        frame = encode(kind, payload)
        self.frames += 1
        self.bytes += len(frame)
        return self.sends.offer(frame)


class _Input(_Conn):
    """The receiving end of one channel."""

    __slots__ = (
        "blocked_seconds",
        "blocked_since",
        "bytes",
        "closed",
        "connected",
        "frames",
        "handed",
        "messages",
        "priority",
        "received",
        "records",
    )

    def __init__(
        self, channel: ChannelId, selector: selectors.BaseSelector, kinds: tuple[int, ...]
    ) -> None:
        super().__init__(channel, selector, kinds)
        self.connected = False
        self.closed = False
        self.blocked_since = 0.0
        self.blocked_seconds = 0.0
        self.frames: deque[list[object]] = deque()
        self.records = self.messages = self.received = self.bytes = self.handed = 0
        self.priority = 0  # priority events received

    @property
    def blocked(self) -> bool:
        """The host blocked the channel: its socket is not read, its frames not handed out."""
        return not self.reading


def plane_stats(
    address: tuple[str, int],
    outputs: dict[ChannelId, _Output],
    inputs: dict[ChannelId, _Input],
    refused: list[str],
) -> dict[str, object]:
    """A data plane's counters: per channel ``sent`` and ``received``, and totals.

    ``sent[c]``: records, messages, frames, bytes (framed), spilled_bytes, dropped_bytes
    (output lost when the receiver closed), queued_frames (waiting for credit), credit,
    state, priority (priority events sent). ``received[c]``: records, messages, frames,
    bytes, handed_frames (handed out by poll), buffered_frames, buffered_messages,
    blocked_seconds, blocked, closed, priority.
    Totals: records/bytes/frames sent and received, spilled_bytes, and ``refused``: why
    each refused connection was refused. ``address``: where this plane listens.
    """
    now = time.monotonic()
    sent: dict[ChannelId, dict[str, object]] = {
        c: {
            "records": o.records,
            "messages": o.messages,
            "frames": o.frames,
            "bytes": o.bytes,
            "spilled_bytes": o.sends.spilled_bytes,
            "dropped_bytes": o.sends.dropped_bytes,
            "queued_frames": o.sends.waiting_frames,
            "credit": o.sends.credit,
            "state": o.state,
            "priority": o.priority,
        }
        for c, o in outputs.items()
    }
    received: dict[ChannelId, dict[str, object]] = {
        c: {
            "records": i.records,
            "messages": i.messages,
            "frames": i.received,
            "bytes": i.bytes,
            "handed_frames": i.handed,
            "buffered_frames": len(i.frames),
            "buffered_messages": sum(map(len, i.frames)),
            "blocked_seconds": i.blocked_seconds + (now - i.blocked_since if i.blocked else 0.0),
            "blocked": i.blocked,
            "closed": i.closed,
            "priority": i.priority,
        }
        for c, i in inputs.items()
    }
    return {
        "address": address,
        "sent": sent,
        "received": received,
        "records_sent": sum(o.records for o in outputs.values()),
        "records_received": sum(i.records for i in inputs.values()),
        "bytes_sent": sum(o.bytes for o in outputs.values()),
        "bytes_received": sum(i.bytes for i in inputs.values()),
        "frames_sent": sum(o.frames for o in outputs.values()),
        "frames_received": sum(i.received for i in inputs.values()),
        "spilled_bytes": sum(o.sends.spilled_bytes for o in outputs.values()),
        "refused": list(refused),
    }
