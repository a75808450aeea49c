"""The two ends of a data-plane channel as the I/O loop keeps them (socket, buffers,
frame reader, counters) and the counters a data plane reports (:func:`plane_stats`). State
only: :mod:`absnb.runtime.transport` does the I/O."""

from __future__ import annotations

import socket
import time
from collections import deque
from typing import Any

from absnb.core.ids import ChannelId
from absnb.core.messages import RECORD_TYPES, RecordBatch
from absnb.runtime.connections.frames import FrameReader
from absnb.runtime.flow import SendQueue


def _records(batch: list[Any]) -> int:
    """The records in a frame's messages (a :class:`RecordBatch` holds many)."""
    return sum(len(m) if m.__class__ is RecordBatch else m.__class__ in RECORD_TYPES for m in batch)


class _Conn:
    """What both ends of a channel have: a socket, its selector events, unsent bytes, and
    the reader of the frames it receives (of ``kinds``)."""

    __slots__ = ("channel", "events", "reader", "sock", "wbuf")

    def __init__(self, channel: ChannelId, kinds: tuple[int, ...]) -> None:
        self.channel = channel
        self.sock: socket.socket | None = None
        self.events = 0
        self.reader = FrameReader(kinds)
        self.wbuf = bytearray()

    def live(self) -> socket.socket:
        """The connected socket; using an end that has none is a bug, said so."""
        if self.sock is None:
            raise ConnectionError(f"channel {self.channel} has no connection")
        return self.sock


class _Output(_Conn):
    """The sending end of one channel."""

    __slots__ = (
        "address",
        "batch",
        "bytes",
        "error",
        "frames",
        "limit",
        "messages",
        "next_try",
        "priority",
        "proof",
        "proof_buf",
        "records",
        "sends",
        "sized",
        "state",
    )

    def __init__(
        self,
        channel: ChannelId,
        kinds: tuple[int, ...],
        address: tuple[str, int],
        sends: SendQueue,
    ) -> None:
        super().__init__(channel, kinds)
        self.address = address
        # connecting -> nonce (challenge awaited) -> proof (the receiver's proof awaited)
        # -> ack (first CREDIT awaited) -> open; refused / closed are final.
        self.state = "connecting"
        self.proof = b""  # the receiver's proof expected back
        self.proof_buf = bytearray()  # the receiver's proof as it arrives
        self.next_try = 0.0
        self.error = ""
        self.batch: list[Any] = []
        self.limit = 1  # until the first record has been sized
        self.sized = False
        self.sends = sends  # frames waiting for credit, and the credit
        self.records = self.messages = self.frames = self.bytes = 0
        self.priority = 0  # priority events sent


class _Input(_Conn):
    """The receiving end of one channel."""

    __slots__ = (
        "blocked",
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

    def __init__(self, channel: ChannelId, kinds: tuple[int, ...]) -> None:
        super().__init__(channel, kinds)
        self.connected = False
        self.closed = False
        self.blocked = False
        self.blocked_since = 0.0
        self.blocked_seconds = 0.0
        self.frames: deque[list[Any]] = deque()
        self.records = self.messages = self.received = self.bytes = self.handed = 0
        self.priority = 0  # priority events received


def plane_stats(
    address: tuple[str, int],
    outputs: dict[ChannelId, _Output],
    inputs: dict[ChannelId, _Input],
    refused: list[str],
) -> dict[str, Any]:
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
    sent = {
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
    received = {
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
        "records_sent": sum(s["records"] for s in sent.values()),
        "records_received": sum(r["records"] for r in received.values()),
        "bytes_sent": sum(s["bytes"] for s in sent.values()),
        "bytes_received": sum(r["bytes"] for r in received.values()),
        "frames_sent": sum(s["frames"] for s in sent.values()),
        "frames_received": sum(r["frames"] for r in received.values()),
        "spilled_bytes": sum(s["spilled_bytes"] for s in sent.values()),
        "refused": list(refused),
    }
