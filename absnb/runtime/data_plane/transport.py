"""The data plane: framed TCP channels between the hosts of a job.

DESIGN, "The two runtimes": "channels are framed TCP connections carrying batches of
records with barriers in FIFO order between them". A host process (one or more tasks) has
one :class:`DataPlane`: single-threaded, a :mod:`selectors` loop driven by the host through
:meth:`DataPlane.poll`, non-blocking sockets once a connection is authenticated.

Connections (:mod:`absnb.runtime.connections`, :mod:`absnb.runtime.data_plane.connect`): one
per output channel, each authenticated with the job secret, the receiver never waiting for a
peer.

Frames (:mod:`absnb.runtime.connections.wire`): DATA carries a pickled list of messages (a batch),
sender to receiver; CREDIT carries a pickled count, receiver to sender. Record messages (a
:class:`~absnb.core.messages.Record`, or the hosts' :class:`~absnb.core.messages.RecordBatch`
of many) collect in the channel's batch until ``batch_records`` messages or about
``batch_bytes`` (estimated from the pickled size of the previous batch); anything else
(barrier, marker, end of input) closes the batch it joins, so FIFO order between records
and barriers is kept.

Flow control, credit-based per channel: a sender has at most ``credits`` DATA frames
unacknowledged (the receiver grants its ``credits`` on accepting); the receiver returns one
credit for each frame :meth:`DataPlane.poll` has handed out. Blocking stops reading; in-flight
data is bounded by credits; a sender that runs out of credit queues and past
``memory_bytes`` spills to disk. So :meth:`DataPlane.send` never blocks, and a receiver
buffers at most ``credits`` frames per channel (no receiver-side spill). These decisions
(batch sizes, credit, spilling) are sans-IO in :mod:`absnb.runtime.data_plane.flow`.

A priority lane (:meth:`DataPlane.send_priority`, :mod:`absnb.runtime.data_plane.priority`): a
barrier of an unaligned checkpoint (never a cancellation marker) is a frame of its own kind, written
ahead of the channel's batch and of its frames waiting for credit, and handed out by
:meth:`DataPlane.poll` (or :meth:`DataPlane.poll_urgent`) ahead of the buffered frames.
"""

from __future__ import annotations

import time
from itertools import repeat
from typing import cast

from absnb.core.ids import ChannelId
from absnb.core.messages import RECORD_TYPES
from absnb.runtime.connections.admission import Admission
from absnb.runtime.connections.link import READ, WRITE
from absnb.runtime.connections.listener import Listener
from absnb.runtime.connections.wire import FrameError, dumps, encode
from absnb.runtime.data_plane.channel_ends import (
    _Conn,
    _Input,
    _Output,
    _records,
    plane_stats,
)
from absnb.runtime.data_plane.connect import (
    CREDIT,
    HANDSHAKE_TIMEOUT,
    cannot_send,
    handshake_step,
    not_an_input,
)
from absnb.runtime.data_plane.priority import PRIORITY, PRIORITY_TYPES, carried, received
from absnb.runtime.data_plane.setup import DATA, SettingUp


class DataPlane(SettingUp):
    """One host's end of the job's channels (see the module docstring); not thread-safe:
    one thread drives it.

    Args:
        secret: the per-job secret every connection proves it knows.
        bind_host: where the listening socket binds (by default the interface of
            ``advertise_host``: loopback for a local job).
        ports: the ports it may listen on, the first free one (by default any free port).
        advertise_host: the host name other hosts connect to (``address``).
        batch_records: most messages in one DATA frame.
        batch_bytes: about the most bytes in one DATA frame.
        credits: DATA frames a sender may have unacknowledged on each of this host's inputs.
        memory_bytes: credit-less frames one output channel queues in memory before spilling.
        spill_dir: directory of spill files (default: the system's temporary directory).
        attempt: the job attempt; connections of another attempt are refused.
    """

    def __init__(
        self,
        secret: bytes,
        *,
        bind_host: str | None = None,
        ports: range | None = None,
        advertise_host: str = "127.0.0.1",
        batch_records: int = 1000,
        batch_bytes: int = 64 * 1024,
        credits: int = 8,
        memory_bytes: int = 64 * 1024 * 1024,
        spill_dir: str | None = None,
        attempt: int = 0,
    ) -> None:
        for name, value in (
            ("batch_records", batch_records),
            ("batch_bytes", batch_bytes),
            ("credits", credits),
        ):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        self._secret = secret
        self._batch_records = batch_records
        self._batch_bytes = batch_bytes
        self._credits = credits
        self._memory_bytes = memory_bytes
        self._spill_dir = spill_dir
        self.attempt = attempt
        self._refused: list[str] = []
        self._listener = Listener(
            secret,
            bind_host=bind_host,
            ports=ports,
            advertise_host=advertise_host,
            backlog=1024,
            on_refused=self._refused.append,
        )
        self._sel = self._listener.selector
        self.address: tuple[str, int] = self._listener.address
        self._inputs: dict[ChannelId, _Input] = {}
        self._by_name: dict[tuple[str, str], _Input] = {}
        self._outputs: dict[ChannelId, _Output] = {}
        self._sendable: dict[ChannelId, _Output] = {}  # open outputs, looked up by send()
        self._ready: dict[_Input, None] = {}  # unblocked inputs with frames, in order
        self._urgent: list[tuple[ChannelId, object]] = []  # priority events, handed out first
        self._closed_inputs: list[ChannelId] = []
        self._closed = False

    # -- sending -------------------------------------------------------------------------

    def send(self, channel: ChannelId, message: object) -> None:
        """Append ``message`` to the channel's batch; never blocks.

        A record frames the batch once it is full; anything else (barrier, marker) joins
        the batch and frames it at once, so it keeps its place in the FIFO order.
        """
        try:
            out = self._sendable[channel]
        except KeyError:
            raise cannot_send(channel, self._outputs.get(channel)) from None
        batch = out.batch
        batch.append(message)
        if message.__class__ not in RECORD_TYPES:
            self._frame(out)
        elif len(batch) >= out.limit:
            if out.sized:
                self._frame(out)
            else:
                self._size(out)

    def send_priority(self, channel: ChannelId, message: object) -> None:
        """Send a barrier on the priority lane (:mod:`absnb.runtime.data_plane.priority`): ahead of
        the channel's pending batch and of its frames waiting for credit, spending no credit;
        never blocks. It carries the records it overtakes here, which still follow it."""
        try:
            out = self._sendable[channel]
        except KeyError:
            raise cannot_send(channel, self._outputs.get(channel)) from None
        if type(message) not in PRIORITY_TYPES:
            raise ValueError(f"only barriers take the priority lane, not {message!r}")
        overtaken = carried(out.sends.kept(), out.batch)
        out.priority += 1
        self._write(out, encode(PRIORITY, dumps((message, overtaken))))

    def flush(self) -> None:
        """Frame every pending partial batch (the host calls this every few ms and when idle)."""
        for out in list(self._sendable.values()):  # a lost receiver leaves _sendable
            if out.batch:
                self._frame(out)

    def pending_output(self) -> int:
        """Framed bytes not yet written to sockets (queued, spilled or partly written)."""
        total = 0
        for out in self._outputs.values():
            total += len(out.wbuf) + out.sends.waiting_bytes
        for inp in self._inputs.values():
            total += len(inp.wbuf)
        return total

    # -- receiving -----------------------------------------------------------------------

    def poll(self, timeout: float = 0.0) -> list[tuple[ChannelId, object]]:
        """Do socket I/O, then hand out ``(channel, message)`` of the unblocked inputs.

        Waits up to ``timeout`` seconds for I/O when nothing is buffered. Messages are in FIFO
        order per channel, channels may interleave; a channel's messages stop after its first
        barrier (any non-record), so the host can block it before anything behind is handed
        out. Each frame handed out returns a credit to its sender.
        """
        self._io(0.0 if self._ready or self._urgent else timeout)
        result: list[tuple[ChannelId, object]] = self._urgent
        self._urgent = []
        if not self._ready:
            return result
        for inp in list(self._ready):
            frames = inp.frames
            handed = 0
            while frames:
                batch = frames.popleft()
                handed += 1
                result.extend(zip(repeat(inp.channel, len(batch)), batch, strict=True))
                if batch[-1].__class__ not in RECORD_TYPES:
                    break
            inp.handed += handed
            if not frames:
                del self._ready[inp]
            if inp.sock is not None:
                self._write(inp, encode(CREDIT, dumps(handed)))
        return result

    def poll_urgent(self) -> list[tuple[ChannelId, object]]:
        """Do socket I/O without waiting, then hand out only the priority events that have
        arrived (what :meth:`poll` would hand out first); frames stay buffered."""
        self._io(0.0)
        urgent, self._urgent = self._urgent, []
        return urgent

    def block(self, channel: ChannelId) -> None:
        """Stop reading the channel's socket and handing out its buffered messages."""
        inp = self._input(channel)
        if inp.blocked:
            return
        inp.reading = False
        inp.blocked_since = time.monotonic()
        self._ready.pop(inp, None)
        inp.watch()

    def unblock(self, channel: ChannelId) -> None:
        """Resume the channel: its buffered messages first, then its socket."""
        inp = self._input(channel)
        if not inp.blocked:
            return
        inp.reading = True
        inp.blocked_seconds += time.monotonic() - inp.blocked_since
        if inp.frames:
            self._ready[inp] = None
        inp.watch()

    def stats(self) -> dict[str, object]:
        """Counters: per channel ``sent`` and ``received``, and totals
        (:func:`~absnb.runtime.data_plane.channel_ends.plane_stats`)."""
        return plane_stats(self.address, self._outputs, self._inputs, self._refused)

    def closed_inputs(self) -> list[ChannelId]:
        """Input channels whose sender closed the connection, in the order noticed."""
        return list(self._closed_inputs)

    def close(self) -> None:
        """Close every connection, the listening socket and spill files (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for conn in [*self._inputs.values(), *self._outputs.values()]:
            if conn.sock is not None:
                conn.drop()
        for out in self._outputs.values():
            out.sends.close()
        self._listener.close("the data plane closed")

    def __enter__(self) -> DataPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- framing and credit (the decisions: absnb.runtime.data_plane.flow)
    # ----------------------------

    def _size(self, out: _Output) -> None:
        """First records of a channel: set the batch limit from one pickled record."""
        if out.size(self._batch_records, self._batch_bytes):
            self._frame(out)

    def _frame(self, out: _Output) -> None:
        now = out.seal(DATA, self._batch_records, self._batch_bytes)
        if now is not None:
            self._write(out, now)

    def _grant(self, out: _Output, n: int) -> None:
        """Credit arrived: write kept frames, memory first, then spilled ones."""
        out.sends.grant(n)
        if out.sock is None:
            return
        for frame in out.sends.sendable():
            self._write(out, frame)
            if out.sock is None:  # lost while writing: the rest is dropped
                return

    # -- socket I/O ------------------------------------------------------------------------

    def _io(self, timeout: float) -> None:
        if self._closed:
            raise RuntimeError("the data plane is closed")
        for conn, mask in self._listener.select(timeout):
            if type(conn) is Admission:
                self._admit(conn)
                continue
            if mask & WRITE and conn.sock is not None:
                error = conn.write_pending()
                if error is not None:
                    self._lost(conn, error)
            if mask & READ and conn.sock is not None:
                if type(conn) is _Input:
                    self._read_input(conn)
                else:
                    self._read_output(conn)

    def _read_input(self, inp: _Input) -> None:
        data = inp.recv()
        if data is None:
            return
        frames = self._frames(inp, data)
        if frames is None:
            return
        for kind, batch in frames:
            if kind == PRIORITY:
                urgent = received(batch, inp.frames)
                if urgent is None:
                    self._lost(inp, None)
                    return
                self._urgent.append((inp.channel, urgent))
                inp.priority += 1
                continue
            if not isinstance(batch, list) or not batch:
                self._lost(inp, None)
                return
            inp.frames.append(batch)
            inp.received += 1
            inp.messages += len(batch)
            inp.records += _records(batch)
        inp.bytes += len(data)
        if frames and not inp.blocked:
            self._ready[inp] = None

    def _read_output(self, out: _Output) -> None:
        data = out.recv()
        if data is None:
            return
        if out.state == "handshake":
            rest = handshake_step(out, data)
            if rest is None:  # the receiver refused us, or failed to prove the secret
                self._lost(out, None)
                return
            if answer := out.handshake.outgoing():
                self._write(out, answer)
            if not rest or out.sock is None:
                return
            data = rest
        frames = self._frames(out, data)
        if frames is None:
            return
        for _, count in frames:  # CREDIT only (the reader refuses other kinds)
            if out.state == "ack":
                out.state = "open"
                self._sendable[out.channel] = out
            self._grant(out, cast(int, count))  # a CREDIT frame holds a count

    def _write(self, conn: _Conn, data: bytes) -> None:
        error = conn.write(data)
        if error is not None:
            self._lost(conn, error)

    def _frames(self, conn: _Conn, data: bytes) -> list[tuple[int, object]] | None:
        """The frames ``data`` completes; ``None`` (the connection lost) at the end of the
        stream or when a frame is malformed (corruption: too long, of a kind this end does not
        receive, or not unpickling)."""
        if data:
            try:
                return conn.reader.feed(data)
            except FrameError:
                pass
        self._lost(conn, None)
        return None

    def _lost(self, conn: _Conn, error: OSError | None) -> None:
        """The peer closed (or broke) the connection: record it, keep going."""
        conn.drop()
        if isinstance(conn, _Input):
            conn.closed = True
            self._closed_inputs.append(conn.channel)
            return
        assert isinstance(conn, _Output)
        out = conn
        if out.state in ("handshake", "ack"):
            out.state = "refused"
            return
        out.state = "closed"
        out.error = str(error) if error else "closed by the receiver"
        self._sendable.pop(out.channel, None)
        out.sends.drop()

    def _input(self, channel: ChannelId) -> _Input:
        try:
            return self._inputs[channel]
        except KeyError:
            raise not_an_input(channel) from None


__all__ = ["CREDIT", "DATA", "HANDSHAKE_TIMEOUT", "DataPlane"]
