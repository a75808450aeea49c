"""Both halves of the job-secret handshake, sans-IO; the server's with a deadline.

The protocol is :mod:`absnb.runtime.connections.wire`'s mutual challenge-response; each half is a
state machine that never touches a socket (h11's style): the I/O loop feeds it the bytes it
receives (``receive``) and sends what it returns (``outgoing``). The server's half
(:class:`ServerHandshake`) also says whether the connection's time is up
(:meth:`ServerHandshake.expired`). So an accepting loop (the coordinator's, a data
plane's) never blocks on a peer: a peer that sends nothing, or a byte a second, costs one
idle socket until its deadline and is then dropped, while every other connection is
served. The client's proof is checked with :func:`hmac.compare_digest` before anything it
sent is unpickled.

The connecting half (:class:`ClientHandshake`) is the one both planes use: a data plane's
sending end drives it from its loop, a host's control client through
:func:`client_handshake` on a blocking socket.
"""

from __future__ import annotations

import hmac
import os
import socket
import struct

from absnb.runtime.connections.wire import (
    CLIENT_LABEL,
    MAC_BYTES,
    MAX_HELLO,
    NONCE_BYTES,
    SERVER_LABEL,
    FrameError,
    check_server_proof,
    client_answer,
    loads,
    mac,
)

HANDSHAKE_SECONDS = 5.0
"""The most time a connecting peer has to prove it knows the job secret."""

_LENGTH = struct.Struct(">I")


class ServerHandshake:
    """One accepted connection's handshake: ``waiting`` for the client's answer, then
    ``done`` (``hello`` is the client's hello) or ``failed`` (``error`` says why).

    Args:
        secret: the per-job secret.
        now: the time the connection was accepted (seconds, any monotonic clock).
        timeout: the connection's deadline is ``now + timeout``.
        nonce: the challenge (random by default; given in tests).
    """

    def __init__(
        self,
        secret: bytes,
        now: float,
        timeout: float = HANDSHAKE_SECONDS,
        nonce: bytes | None = None,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"a handshake timeout must be above 0 seconds, not {timeout!r}")
        self.secret = secret
        self.nonce = nonce if nonce is not None else os.urandom(NONCE_BYTES)
        if len(self.nonce) != NONCE_BYTES:
            raise ValueError(f"a nonce has {NONCE_BYTES} bytes, not {len(self.nonce)}")
        self.deadline = now + timeout
        self.state = "waiting"
        self.hello: object = None
        self.error = ""
        self._out = bytearray(self.nonce)  # the challenge goes first
        self._buffer = bytearray()
        self._length: int | None = None

    def outgoing(self) -> bytes:
        """What to send now (and forget): the challenge, later the server's proof."""
        out, self._out = bytes(self._out), bytearray()
        return out

    def expired(self, now: float) -> bool:
        """True if the handshake was still waiting at its deadline (it has failed then):
        drop the connection."""
        if self.state == "waiting" and now >= self.deadline:
            self._fail("no answer to the challenge before the deadline")
            return True
        return False

    def receive(self, data: bytes) -> None:
        """Bytes from the peer (``b""``: it closed the connection)."""
        if self.state != "waiting":
            if data:
                self._fail("the peer sent more before the handshake was answered")
            return
        if not data:
            self._fail("the peer closed the connection during the handshake")
            return
        self._buffer += data
        head = MAC_BYTES + _LENGTH.size
        if self._length is None and len(self._buffer) >= head:
            (length,) = _LENGTH.unpack_from(self._buffer, MAC_BYTES)
            if not NONCE_BYTES <= length <= NONCE_BYTES + MAX_HELLO:
                self._fail(f"a hello of {length} bytes is malformed")
                return
            self._length = length
        if self._length is None or len(self._buffer) < head + self._length:
            return
        if len(self._buffer) > head + self._length:
            self._fail("the peer sent more than its answer before the proof")
            return
        proof, body = bytes(self._buffer[:MAC_BYTES]), bytes(self._buffer[head:])
        self._buffer.clear()
        if not hmac.compare_digest(proof, mac(self.secret, CLIENT_LABEL, self.nonce, body)):
            self._fail("the peer does not know the job secret")
            return
        try:
            self.hello = loads(body[NONCE_BYTES:])  # proven: the peer knows the secret
        except Exception as e:
            self._fail(f"the hello cannot be unpickled: {e}")
            return
        self._out += mac(self.secret, SERVER_LABEL, self.nonce, body)
        self.state = "done"

    def _fail(self, why: str) -> None:
        self.state = "failed"
        self.error = why
        self._out.clear()


class ClientHandshake:
    """The connecting side's handshake: ``challenge`` (the server's nonce awaited), then
    ``proof`` (the answer, with ``hello``, is sent; the server's proof awaited), then
    ``done``.

    Args:
        secret: the per-job secret.
        hello: what the client says it is (the server's plane decides what it may be).
    """

    def __init__(self, secret: bytes, hello: object) -> None:
        self.secret = secret
        self.hello = hello
        self.state = "challenge"
        self._buffer = bytearray()
        self._out = b""
        self._expected = b""

    def outgoing(self) -> bytes:
        """What to send now (and forget): the answer, once the challenge came."""
        out, self._out = self._out, b""
        return out

    def receive(self, data: bytes) -> bytes:
        """Bytes from the server (``b""``: it closed the connection); once its proof checks,
        the bytes that came after it (the start of the connection's frames).

        Raises:
            AuthenticationError: the server's proof is wrong (it does not know the secret).
            FrameError: the server closed the connection (it refused our answer), or
                :meth:`receive` was called after the handshake ended.
        """
        if self.state == "done":
            raise FrameError("the handshake is over: the bytes belong to the frames")
        if not data:
            raise FrameError(
                "the peer closed the connection during the handshake (it refused our "
                "answer: another job's secret, or not a peer of this job)"
            )
        buf = self._buffer
        buf += data
        if self.state == "challenge":
            if len(buf) < NONCE_BYTES:
                return b""
            self._out, self._expected = client_answer(
                self.secret, bytes(buf[:NONCE_BYTES]), self.hello
            )
            del buf[:NONCE_BYTES]
            self.state = "proof"
        if len(buf) < MAC_BYTES:
            return b""
        proof, rest = bytes(buf[:MAC_BYTES]), bytes(buf[MAC_BYTES:])
        buf.clear()
        check_server_proof(self._expected, proof)
        self.state = "done"
        return rest


def client_handshake(sock: socket.socket, secret: bytes, hello: object) -> bytes:
    """:class:`ClientHandshake` on a blocking socket: answer the server's challenge with
    ``hello``, check the server's proof; the bytes the server sent after it.

    Raises:
        AuthenticationError, FrameError: see :meth:`ClientHandshake.receive`.
        TimeoutError: the socket's timeout passed while waiting for the server.
    """
    hs = ClientHandshake(secret, hello)
    while True:
        rest = hs.receive(sock.recv(1 << 12))
        if out := hs.outgoing():
            sock.sendall(out)
        if hs.state == "done":
            return rest
