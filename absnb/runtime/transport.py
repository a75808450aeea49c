"""The data plane: framed TCP channels between the hosts of a job.

DESIGN, "The two runtimes": "channels are framed TCP connections carrying batches of
records with barriers in FIFO order between them". A host process (one or more tasks) has
one :class:`DataPlane`: single-threaded, a :mod:`selectors` loop driven by the host through
:meth:`DataPlane.poll`, non-blocking sockets once a connection is authenticated.

Connections. The sender opens one TCP connection per output channel
(:meth:`DataPlane.connect_outputs`) and answers the receiver's challenge
(:func:`~absnb.runtime.wire.client_answer`) with hello ``{"channel": ChannelId, "attempt": n}``.
The receiver checks it with a :class:`~absnb.runtime.handshake.ServerHandshake` fed from its
loop (never blocking it: a peer that does not answer by its deadline is dropped), proves to
the sender that it knows the secret too (the sender checks that proof before it reads a
frame), and maps the connection to the channel, or closes it without a word: a wrong
secret, another attempt (an old attempt's messages are dropped), a channel it does not
expect, or one already connected. Accepting is acknowledged by the receiver's first CREDIT
frame.

Frames (:mod:`absnb.runtime.wire`): DATA carries a pickled list of messages (a batch),
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
(batch sizes, credit, spilling) are sans-IO in :mod:`absnb.runtime.flow`.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from itertools import repeat
from typing import Any

from absnb.core.ids import ChannelId
from absnb.core.messages import RECORD_TYPES, RecordBatch
from absnb.runtime.flow import SendQueue, batch_limit
from absnb.runtime.handshake import HANDSHAKE_SECONDS, ServerHandshake
from absnb.runtime.wire import (
    HEADER,
    MAC_BYTES,
    MAX_FRAME,
    NONCE_BYTES,
    AuthenticationError,
    bind_address,
    check_server_proof,
    client_answer,
    dumps,
    encode,
    listen,
    loads,
)

DATA = 1
"""Frame kind of a batch: a pickled list of messages."""
CREDIT = 2
"""Frame kind of a credit grant: a pickled count of frames."""

HANDSHAKE_TIMEOUT = HANDSHAKE_SECONDS
"""Seconds a connecting peer has to answer the receiver's challenge."""

_READ = selectors.EVENT_READ
_WRITE = selectors.EVENT_WRITE
_RECV_BYTES = 256 * 1024
_RETRY_SECONDS = 0.05


def _records(batch: list[Any]) -> int:
    """The records in a frame's messages (a :class:`RecordBatch` holds many)."""
    return sum(len(m) if m.__class__ is RecordBatch else m.__class__ in RECORD_TYPES for m in batch)


class _Conn:
    """What both ends of a channel have: a socket, its selector events, unsent bytes."""

    __slots__ = ("channel", "events", "rbuf", "sock", "wbuf")

    def __init__(self, channel: ChannelId) -> None:
        self.channel = channel
        self.sock: socket.socket | None = None
        self.events = 0
        self.rbuf = bytearray()
        self.wbuf = bytearray()


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
        "proof",
        "records",
        "sends",
        "sized",
        "state",
    )

    def __init__(self, channel: ChannelId, address: tuple[str, int], sends: SendQueue) -> None:
        super().__init__(channel)
        self.address = address
        # connecting -> nonce (challenge awaited) -> proof (the receiver's proof awaited)
        # -> ack (first CREDIT awaited) -> open; refused / closed are final.
        self.state = "connecting"
        self.proof = b""  # the receiver's proof expected back
        self.next_try = 0.0
        self.error = ""
        self.batch: list[Any] = []
        self.limit = 1  # until the first record has been sized
        self.sized = False
        self.sends = sends  # frames waiting for credit, and the credit
        self.records = self.messages = self.frames = self.bytes = 0


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
        "received",
        "records",
    )

    def __init__(self, channel: ChannelId) -> None:
        super().__init__(channel)
        self.connected = False
        self.closed = False
        self.blocked = False
        self.blocked_since = 0.0
        self.blocked_seconds = 0.0
        self.frames: deque[list[Any]] = deque()
        self.records = self.messages = self.received = self.bytes = self.handed = 0


class _Admission:
    """An accepted connection still proving that it knows the job secret."""

    __slots__ = ("handshake", "peer", "sock")

    def __init__(self, sock: socket.socket, peer: Any, handshake: ServerHandshake) -> None:
        self.sock = sock
        self.peer = peer
        self.handshake = handshake


class DataPlane:
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
        self._sel = selectors.DefaultSelector()
        if bind_host is None:
            bind_host = bind_address(advertise_host)
        self._listener = listen(bind_host, ports, backlog=1024)
        self._listener.setblocking(False)
        self._sel.register(self._listener, _READ, None)
        self.address: tuple[str, int] = (advertise_host, self._listener.getsockname()[1])
        self._inputs: dict[ChannelId, _Input] = {}
        self._by_name: dict[tuple[str, str], _Input] = {}
        self._outputs: dict[ChannelId, _Output] = {}
        self._sendable: dict[ChannelId, _Output] = {}  # open outputs, looked up by send()
        self._ready: dict[_Input, None] = {}  # unblocked inputs with frames, in order
        self._closed_inputs: list[ChannelId] = []
        self._admissions: set[_Admission] = set()
        self._refused: list[str] = []
        self._closed = False

    # -- setting up ----------------------------------------------------------------------
    def expect_inputs(self, channels: Iterable[ChannelId]) -> None:
        """Declare input channels; connections for any other channel are refused."""
        for c in channels:
            c = ChannelId(*c)
            if c not in self._inputs:
                inp = self._inputs[c] = _Input(c)
                self._by_name[(str(c.src), str(c.dst))] = inp

    def connect_outputs(
        self,
        routes: Mapping[ChannelId, tuple[str, int]],
        timeout: float = 30,
        check: Callable[[], None] | None = None,
    ) -> None:
        """Open one connection per output channel to its receiver's ``address``.

        Retries a refused or failed connect until ``timeout``; returns once every receiver
        has accepted (sent its first credit). Accepts this host's own inputs meanwhile.
        ``check``, if given, is called every few ms while waiting; whatever it raises ends
        the wait (a host uses it to hear that its attempt is over).

        Raises:
            ConnectionError: a receiver closed a connection after the handshake (wrong
                secret, another attempt, or a channel it does not expect).
            TimeoutError: some channel could not be connected in time.
        """
        deadline = time.monotonic() + timeout
        pending = []
        for c, address in routes.items():
            c = ChannelId(*c)
            if c in self._outputs:
                raise ValueError(f"output channel {c} is already connected")
            sends = SendQueue(self._memory_bytes, self._spill_dir)
            out = self._outputs[c] = _Output(c, (address[0], int(address[1])), sends)
            pending.append(out)
        while True:
            now = time.monotonic()
            for out in pending:
                if out.state == "connecting" and out.next_try <= now:
                    self._try_connect(out, deadline - now)
            refused = [o for o in pending if o.state in ("refused", "closed")]
            if refused:
                raise ConnectionError(
                    "the receiver closed the connection after the handshake (wrong job secret, "
                    f"another attempt than {self.attempt}, or a channel it does not expect), "
                    "or failed to prove it knows the job secret: "
                    + ", ".join(
                        f"{o.channel} to {o.address[0]}:{o.address[1]}"
                        + (f" ({o.error})" if o.error else "")
                        for o in refused
                    )
                )
            waiting = [o for o in pending if o.state != "open"]
            if not waiting:
                return
            if check is not None:
                check()
            now = time.monotonic()
            if now >= deadline:
                raise TimeoutError(
                    f"could not connect output channels within {timeout:g} s: "
                    + "; ".join(
                        f"{o.channel} to {o.address[0]}:{o.address[1]} ({o.state}"
                        + (f", {o.error}" if o.error else "")
                        + ")"
                        for o in waiting
                    )
                )
            self._io(min(_RETRY_SECONDS, deadline - now))

    def wait_ready(self, timeout: float = 30, check: Callable[[], None] | None = None) -> None:
        """Accept connections until every expected input channel has connected.

        ``check``, if given, is called every few ms while waiting; whatever it raises ends
        the wait.

        Raises:
            TimeoutError: naming the input channels that did not connect in time.
        """
        deadline = time.monotonic() + timeout
        while True:
            missing = [c for c, i in self._inputs.items() if not i.connected]
            if not missing:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                refused = f"; refused: {'; '.join(self._refused)}" if self._refused else ""
                raise TimeoutError(
                    f"the data plane at {self.address[0]}:{self.address[1]} (attempt "
                    f"{self.attempt}) waited {timeout:g} s for input channels that never "
                    f"connected: {', '.join(map(str, missing))}{refused}"
                )
            if check is None:
                self._io(left)
            else:
                self._io(min(left, _RETRY_SECONDS))
                check()

    # -- sending -------------------------------------------------------------------------
    def send(self, channel: ChannelId, message: Any) -> None:
        """Append ``message`` to the channel's batch; never blocks.

        A record frames the batch once it is full; anything else (barrier, marker) joins
        the batch and frames it at once, so it keeps its place in the FIFO order.
        """
        try:
            out = self._sendable[channel]
        except KeyError:
            raise self._cannot_send(channel) from None
        batch = out.batch
        batch.append(message)
        if message.__class__ not in RECORD_TYPES:
            self._frame(out)
        elif len(batch) >= out.limit:
            if out.sized:
                self._frame(out)
            else:
                self._size(out)

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
    def poll(self, timeout: float = 0.0) -> list[tuple[ChannelId, Any]]:
        """Do socket I/O, then hand out ``(channel, message)`` of the unblocked inputs.

        Waits up to ``timeout`` seconds for I/O when nothing is buffered. Messages are in FIFO
        order per channel, channels may interleave; a channel's messages stop after its first
        barrier (any non-record), so the host can block it before anything behind is handed
        out. Each frame handed out returns a credit to its sender.
        """
        self._io(0.0 if self._ready else timeout)
        if not self._ready:
            return []
        result: list[tuple[ChannelId, Any]] = []
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

    def block(self, channel: ChannelId) -> None:
        """Stop reading the channel's socket and handing out its buffered messages."""
        inp = self._input(channel)
        if inp.blocked:
            return
        inp.blocked = True
        inp.blocked_since = time.monotonic()
        self._ready.pop(inp, None)
        self._rewatch(inp)

    def unblock(self, channel: ChannelId) -> None:
        """Resume the channel: its buffered messages first, then its socket."""
        inp = self._input(channel)
        if not inp.blocked:
            return
        inp.blocked = False
        inp.blocked_seconds += time.monotonic() - inp.blocked_since
        if inp.frames:
            self._ready[inp] = None
        self._rewatch(inp)

    def closed_inputs(self) -> list[ChannelId]:
        """Input channels whose sender closed the connection, in the order noticed."""
        return list(self._closed_inputs)

    def stats(self) -> dict[str, Any]:
        """Counters: per channel ``sent`` and ``received``, and totals.

        ``sent[c]``: records, messages, frames, bytes (framed), spilled_bytes, dropped_bytes
        (output lost when the receiver closed), queued_frames (waiting for credit), credit,
        state. ``received[c]``: records, messages, frames, bytes, handed_frames (handed out by
        poll), buffered_frames, buffered_messages, blocked_seconds, blocked, closed.
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
            }
            for c, o in self._outputs.items()
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
                "blocked_seconds": i.blocked_seconds
                + (now - i.blocked_since if i.blocked else 0.0),
                "blocked": i.blocked,
                "closed": i.closed,
            }
            for c, i in self._inputs.items()
        }
        return {
            "address": self.address,
            "sent": sent,
            "received": received,
            "records_sent": sum(s["records"] for s in sent.values()),
            "records_received": sum(r["records"] for r in received.values()),
            "bytes_sent": sum(s["bytes"] for s in sent.values()),
            "bytes_received": sum(r["bytes"] for r in received.values()),
            "frames_sent": sum(s["frames"] for s in sent.values()),
            "frames_received": sum(r["frames"] for r in received.values()),
            "spilled_bytes": sum(s["spilled_bytes"] for s in sent.values()),
            "refused": list(self._refused),
        }

    def close(self) -> None:
        """Close every connection, the listening socket and spill files (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for conn in [*self._inputs.values(), *self._outputs.values()]:
            if conn.sock is not None:
                self._drop_socket(conn)
        for admission in list(self._admissions):
            self._end_admission(admission, "the data plane closed")
        for out in self._outputs.values():
            out.sends.close()
        self._sel.close()
        self._listener.close()

    def __enter__(self) -> DataPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- framing and credit (the decisions: absnb.runtime.flow) ----------------------------
    def _size(self, out: _Output) -> None:
        """First records of a channel: set the batch limit from one pickled record."""
        out.sized = True
        out.limit = batch_limit(
            self._batch_records, self._batch_bytes, 1, len(dumps(out.batch[-1:]))
        )
        if len(out.batch) >= out.limit:
            self._frame(out)

    def _frame(self, out: _Output) -> None:
        batch = out.batch
        out.batch = []
        payload = dumps(batch)
        if len(payload) > MAX_FRAME:
            raise ValueError(
                f"a batch of {len(payload)} bytes on {out.channel} is larger than the frame "
                f"limit of {MAX_FRAME} bytes: send smaller records"
            )
        n = len(batch)
        out.messages += n
        out.records += _records(batch)
        out.limit = batch_limit(self._batch_records, self._batch_bytes, n, len(payload))
        out.sized = True
        frame = encode(DATA, payload)
        out.frames += 1
        out.bytes += len(frame)
        now = out.sends.offer(frame)
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
        if self._admissions:
            self._expire_admissions()
        for key, mask in self._sel.select(timeout):
            conn = key.data
            if conn is None:
                self._accept_all()
                continue
            if type(conn) is _Admission:
                self._read_admission(conn)
                continue
            if mask & _WRITE and conn.sock is not None:
                self._write_pending(conn)
            if mask & _READ and conn.sock is not None:
                if type(conn) is _Input:
                    self._read_input(conn)
                else:
                    self._read_output(conn)

    def _events(self, conn: _Conn) -> int:
        if conn.sock is None:
            return 0
        events = _WRITE if conn.wbuf else 0
        if type(conn) is _Output or not conn.blocked:  # type: ignore[attr-defined]
            events |= _READ
        return events

    def _rewatch(self, conn: _Conn) -> None:
        events = self._events(conn)
        if events == conn.events:
            return
        if not conn.events:
            self._sel.register(conn.sock, events, conn)  # type: ignore[arg-type]
        elif not events:
            self._sel.unregister(conn.sock)  # type: ignore[arg-type]
        else:
            self._sel.modify(conn.sock, events, conn)  # type: ignore[arg-type]
        conn.events = events

    def _write(self, conn: _Conn, data: bytes) -> None:
        if conn.wbuf:
            conn.wbuf += data
            return
        try:
            sent = conn.sock.send(data)  # type: ignore[union-attr]
        except BlockingIOError:
            sent = 0
        except OSError as e:
            self._lost(conn, e)
            return
        if sent < len(data):
            conn.wbuf += memoryview(data)[sent:]
            self._rewatch(conn)

    def _write_pending(self, conn: _Conn) -> None:
        try:
            sent = conn.sock.send(conn.wbuf)  # type: ignore[union-attr]
        except BlockingIOError:
            return
        except OSError as e:
            self._lost(conn, e)
            return
        del conn.wbuf[:sent]
        if not conn.wbuf:
            self._rewatch(conn)

    def _recv(self, conn: _Conn) -> bytes | None:
        """Bytes from the socket; ``None`` if it would block, ``b""`` at the end."""
        try:
            return conn.sock.recv(_RECV_BYTES)  # type: ignore[union-attr]
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def _frames(self, conn: _Conn, data: bytes) -> list[tuple[int, Any]] | None:
        """Complete frames in ``conn.rbuf + data``, decoded; ``None`` if malformed."""
        if conn.rbuf:
            conn.rbuf += data
            buf: bytes | bytearray = conn.rbuf
        else:
            buf = data
        frames = []
        pos, n = 0, len(buf)
        with memoryview(buf) as view:
            while n - pos >= HEADER.size:
                length, kind = HEADER.unpack_from(buf, pos)
                if length > MAX_FRAME or kind not in (DATA, CREDIT):
                    return None
                end = pos + HEADER.size + length
                if end > n:
                    break
                frames.append((kind, loads(view[pos + HEADER.size : end])))
                pos = end
        if buf is data:
            conn.rbuf = bytearray(data[pos:]) if pos < n else bytearray()
        else:
            del conn.rbuf[:pos]
        return frames

    def _read_input(self, inp: _Input) -> None:
        data = self._recv(inp)
        if data is None:
            return
        frames = self._frames(inp, data) if data else None
        if frames is None:
            self._lost(inp, None)
            return
        for kind, batch in frames:
            if kind != DATA or not isinstance(batch, list) or not batch:
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
        if out.state == "nonce":
            self._answer_challenge(out)
            return
        data = self._recv(out)
        if data is None:
            return
        if out.state == "proof" and data:
            out.rbuf += data
            if len(out.rbuf) < MAC_BYTES:
                return
            proof, data = bytes(out.rbuf[:MAC_BYTES]), bytes(out.rbuf[MAC_BYTES:])
            out.rbuf.clear()
            try:
                check_server_proof(out.proof, proof)
            except AuthenticationError as e:
                out.error = str(e)
                self._lost(out, None)
                return
            out.state = "ack"
            if not data:
                return
        frames = self._frames(out, data) if data else None
        if frames is None:
            self._lost(out, None)
            return
        for kind, count in frames:
            if kind != CREDIT:
                self._lost(out, None)
                return
            if out.state == "ack":
                out.state = "open"
                self._sendable[out.channel] = out
            self._grant(out, count)

    def _lost(self, conn: _Conn, error: OSError | None) -> None:
        """The peer closed (or broke) the connection: record it, keep going."""
        self._drop_socket(conn)
        if type(conn) is _Input:
            conn.closed = True  # type: ignore[attr-defined]
            self._closed_inputs.append(conn.channel)
            return
        out: _Output = conn  # type: ignore[assignment]
        if out.state in ("nonce", "proof", "ack"):
            out.state = "refused"
            return
        out.state = "closed"
        out.error = str(error) if error else "closed by the receiver"
        self._sendable.pop(out.channel, None)
        out.sends.drop()

    def _drop_socket(self, conn: _Conn) -> None:
        if conn.events:
            self._sel.unregister(conn.sock)  # type: ignore[arg-type]
            conn.events = 0
        conn.sock.close()  # type: ignore[union-attr]
        conn.sock = None
        conn.wbuf.clear()
        conn.rbuf.clear()

    # -- connecting ----------------------------------------------------------------------
    def _try_connect(self, out: _Output, left: float) -> None:
        try:
            sock = socket.create_connection(out.address, timeout=max(0.1, min(5.0, left)))
        except OSError as e:
            out.error = f"{type(e).__name__}: {e}"
            out.next_try = time.monotonic() + _RETRY_SECONDS
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(HANDSHAKE_TIMEOUT)
        out.sock = sock
        out.state = "nonce"
        self._rewatch(out)

    def _answer_challenge(self, out: _Output) -> None:
        """The receiver's challenge is readable: answer it (never blocks once it is here)."""
        try:
            peek = out.sock.recv(NONCE_BYTES, socket.MSG_PEEK)  # type: ignore[union-attr]
        except OSError as e:
            self._lost(out, e)
            return
        if not peek:
            self._lost(out, None)
            return
        if len(peek) < NONCE_BYTES:
            return
        hello = {"channel": out.channel, "attempt": self.attempt}
        try:
            nonce = out.sock.recv(NONCE_BYTES)  # type: ignore[union-attr]
            answer, out.proof = client_answer(self._secret, nonce, hello)
            out.sock.sendall(answer)  # type: ignore[union-attr]
        except OSError as e:
            self._lost(out, e)
            return
        out.sock.setblocking(False)  # type: ignore[union-attr]
        out.state = "proof"  # the receiver's proof comes next, read by _read_output

    def _accept_all(self) -> None:
        while True:
            try:
                conn, peer = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # e.g. out of file descriptors: try again later
                self._refused.append(f"accept failed: {e}")
                return
            self._admit(conn, peer)

    def _admit(self, sock: socket.socket, peer: Any) -> None:
        """Challenge a new connection; it answers by its deadline or is dropped, and this
        loop never waits for it (:class:`~absnb.runtime.handshake.ServerHandshake`)."""
        sock.setblocking(False)
        admission = _Admission(sock, peer, ServerHandshake(self._secret, time.monotonic()))
        self._admissions.add(admission)
        self._sel.register(sock, _READ, admission)
        self._admission_send(admission)

    def _admission_send(self, admission: _Admission) -> bool:
        out = admission.handshake.outgoing()
        try:
            if out and admission.sock.send(out) < len(out):  # a few dozen bytes: never short
                raise OSError("short send during the handshake")
        except OSError as e:
            self._end_admission(admission, f"handshake failed: {e}")
            return False
        return True

    def _read_admission(self, admission: _Admission) -> None:
        hs = admission.handshake
        data = self._recv(admission)  # type: ignore[arg-type]
        if data is None:
            return
        hs.receive(data)
        if hs.state == "waiting":
            return
        if hs.state == "failed":
            self._end_admission(admission, hs.error)
            return
        inp, reason = self._match(hs.hello)
        if inp is None:
            self._end_admission(admission, reason)
            return
        self._sel.unregister(admission.sock)
        self._admissions.discard(admission)
        sock = admission.sock
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        inp.sock = sock
        inp.connected = True
        self._rewatch(inp)
        # the server's proof, then the first credit that says the channel is accepted
        self._write(inp, hs.outgoing() + encode(CREDIT, dumps(self._credits)))

    def _end_admission(self, admission: _Admission, reason: str) -> None:
        self._admissions.discard(admission)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(admission.sock)
        self._refuse(admission.sock, admission.peer, reason)

    def _expire_admissions(self) -> None:
        now = time.monotonic()
        for admission in [a for a in self._admissions if a.handshake.expired(now)]:
            self._end_admission(admission, admission.handshake.error)

    def _match(self, hello: Any) -> tuple[_Input | None, str]:
        if not isinstance(hello, dict):
            return None, f"a hello that is not a dict: {hello!r}"
        attempt, channel = hello.get("attempt"), hello.get("channel")
        if attempt != self.attempt:
            return None, f"channel {channel} of attempt {attempt}, this is attempt {self.attempt}"
        inp = None
        if isinstance(channel, tuple) and len(channel) == 2:
            try:
                inp = self._inputs.get(channel)  # type: ignore[arg-type]
            except TypeError:  # unhashable
                inp = None
            if inp is None and all(isinstance(s, str) for s in channel):
                inp = self._by_name.get(channel)  # type: ignore[arg-type]
        if inp is None:
            return None, f"channel {channel!r} is not an expected input"
        if inp.connected:
            return None, f"channel {inp.channel} is already connected"
        return inp, ""

    def _refuse(self, sock: socket.socket, peer: Any, reason: str) -> None:
        self._refused.append(f"{peer}: {reason}")
        sock.close()

    # -- errors ------------------------------------------------------------------------------
    def _input(self, channel: ChannelId) -> _Input:
        try:
            return self._inputs[channel]
        except KeyError:
            raise ValueError(
                f"{channel} is not an input channel of this host; declare it with expect_inputs()"
            ) from None

    def _cannot_send(self, channel: ChannelId) -> Exception:
        out = self._outputs.get(channel)
        if out is None:
            return ValueError(
                f"{channel} is not an output channel of this host; connect it with "
                "connect_outputs()"
            )
        return ConnectionError(f"output channel {channel} is {out.state}: {out.error}")


__all__ = ["CREDIT", "DATA", "HANDSHAKE_TIMEOUT", "DataPlane"]
