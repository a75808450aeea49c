"""The data plane's decisions, sans-IO: batching, credit-based flow control and spilling.

Batching. Record messages collect in a channel's batch until it holds ``limit`` messages;
:func:`batch_limit` sets the limit from the pickled size of the last batch (or of the
first record), so that a frame holds at most ``batch_records`` messages and about
``batch_bytes`` bytes.

Credit (Flink's credit-based flow control, as described in "A Deep-Dive into Flink's
Network Stack", flink.apache.org, 2019): a sender may have at most as many DATA frames
unacknowledged as the receiver granted credits; the receiver grants one for each frame it
has handed to its tasks.
:class:`SendQueue` holds the frames of one output channel that wait for credit: in
memory up to ``memory_bytes``, then appended to a spill file (local disk, no socket), in
order, so that sending never blocks and in-flight data stays bounded.
"""

from __future__ import annotations

import tempfile
from collections import deque
from collections.abc import Iterator
from typing import IO

from absnb.runtime.connections.wire import HEADER


def batch_limit(batch_records: int, batch_bytes: int, messages: int, payload_bytes: int) -> int:
    """How many messages the next batch of a channel holds, given that the last one held
    ``messages`` messages in ``payload_bytes`` pickled bytes: at least 1, at most
    ``batch_records``, about ``batch_bytes`` bytes."""
    return max(1, min(batch_records, batch_bytes * messages // max(1, payload_bytes)))


class SendQueue:
    """The frames of one output channel and its credit (see the module docstring).

    Args:
        memory_bytes: the most bytes of frames kept in memory while there is no credit.
        spill_dir: the directory of the spill file (default: the system's temporary one).
    """

    def __init__(self, memory_bytes: int, spill_dir: str | None = None) -> None:
        self.memory_bytes = memory_bytes
        self.spill_dir = spill_dir
        self.credit = 0
        self.queue: deque[bytes] = deque()
        self.queued_bytes = 0
        self.spill: IO[bytes] | None = None
        self.spill_frames = 0
        self.spill_read = 0
        self.spill_write = 0
        self.spilled_bytes = 0
        """Bytes ever written to the spill file."""
        self.dropped_bytes = 0
        """Bytes dropped because the receiver went away."""

    @property
    def waiting_frames(self) -> int:
        """Frames waiting for credit, in memory or spilled."""
        return len(self.queue) + self.spill_frames

    @property
    def waiting_bytes(self) -> int:
        """Bytes of the frames waiting for credit."""
        return self.queued_bytes + self.spill_write - self.spill_read

    def offer(self, frame: bytes) -> bytes | None:
        """A new frame: returned if it may be sent now (spending a credit), else kept,
        behind every frame kept before it."""
        if self.credit and not self.queue and not self.spill_frames:
            self.credit -= 1
            return frame
        if not self.spill_frames and self.queued_bytes + len(frame) <= self.memory_bytes:
            self.queue.append(frame)
            self.queued_bytes += len(frame)
        else:
            self._spill(frame)
        return None

    def grant(self, n: int) -> None:
        """The receiver granted ``n`` more frames."""
        if n < 0:
            raise ValueError(f"a credit grant is a number of frames, not {n}")
        self.credit += n

    def sendable(self) -> Iterator[bytes]:
        """The kept frames that credit now allows, in order: memory first, then spilled."""
        while self.credit and (self.queue or self.spill_frames):
            if self.queue:
                frame = self.queue.popleft()
                self.queued_bytes -= len(frame)
            else:
                frame = self._unspill()
            self.credit -= 1
            yield frame

    def kept(self) -> Iterator[bytes]:
        """The kept frames, in order (memory first, then spilled), left kept: what a
        priority event overtakes (:mod:`absnb.runtime.data_plane.priority`)."""
        yield from self.queue
        f = self.spill
        if f is None or not self.spill_frames:
            return
        pos = self.spill_read
        while pos < self.spill_write:
            f.seek(pos)
            header = f.read(HEADER.size)
            length, _ = HEADER.unpack(header)
            frame = header + f.read(length)
            pos += len(frame)
            yield frame

    def drop(self) -> None:
        """The receiver is gone: forget every kept frame (counted in ``dropped_bytes``)."""
        self.dropped_bytes += self.waiting_bytes
        self.queue.clear()
        self.queued_bytes = self.spill_frames = self.spill_read = self.spill_write = 0
        self.close()

    def close(self) -> None:
        """Close the spill file, if any."""
        if self.spill is not None:
            self.spill.close()
            self.spill = None

    def _spill(self, frame: bytes) -> None:
        if self.spill is None:
            # open until the spill drains away or the plane closes, so no `with`
            self.spill = tempfile.TemporaryFile(prefix="absnb-spill-", dir=self.spill_dir)  # noqa: SIM115
        self.spill.seek(self.spill_write)
        self.spill.write(frame)
        self.spill_write += len(frame)
        self.spill_frames += 1
        self.spilled_bytes += len(frame)

    def _unspill(self) -> bytes:
        f = self.spill
        assert f is not None
        f.seek(self.spill_read)
        header = f.read(HEADER.size)
        length, _ = HEADER.unpack(header)
        frame = header + f.read(length)
        self.spill_read += len(frame)
        self.spill_frames -= 1
        if not self.spill_frames:
            f.seek(0)
            f.truncate()
            self.spill_read = self.spill_write = 0
        return frame
