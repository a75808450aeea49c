"""Admitting a connecting peer: it proves that it knows the job secret by its deadline
(a :class:`~absnb.runtime.connections.handshake.ServerHandshake` fed from the loop), or it is
dropped without a word. The loop never waits for a peer: one that sends nothing, or a byte a second,
costs one idle socket until its deadline while every other connection is served.

What a proven peer may be (its hello) is the plane's decision: the data plane maps it to an
expected input channel, the control plane checks that it is a control client.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
from collections.abc import Callable

from absnb.runtime.connections.handshake import HANDSHAKE_SECONDS, ServerHandshake

_READ = selectors.EVENT_READ
_RECV_BYTES = 1 << 12


class Admission:
    """An accepted connection still proving that it knows the job secret."""

    __slots__ = ("handshake", "peer", "sock")

    def __init__(self, sock: socket.socket, peer: object, handshake: ServerHandshake) -> None:
        self.sock = sock
        self.peer = peer
        self.handshake = handshake


class Admissions:
    """The connections of one listener still proving themselves, watched by its selector.

    Args:
        secret: the per-job secret every connection proves it knows.
        selector: the loop's selector; an admission is registered with itself as data.
        clock: the time for deadlines (seconds).
        timeout: how long a new connection may take to prove itself.
        on_refused: told why each refused connection was refused (``"peer: reason"``).
    """

    def __init__(
        self,
        secret: bytes,
        selector: selectors.BaseSelector,
        *,
        clock: Callable[[], float] = time.monotonic,
        timeout: float = HANDSHAKE_SECONDS,
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        self._secret = secret
        self._selector = selector
        self._clock = clock
        self._timeout = timeout
        self._on_refused = on_refused
        self._waiting: set[Admission] = set()

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def accept(self, listener: socket.socket) -> None:
        """Accept every waiting connection and send each its challenge."""
        while True:
            try:
                sock, peer = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # e.g. out of file descriptors: the next round tries again
                self._note(f"accept failed: {e}")
                return
            sock.setblocking(False)
            admission = Admission(
                sock, peer, ServerHandshake(self._secret, self._clock(), self._timeout)
            )
            self._waiting.add(admission)
            self._selector.register(sock, _READ, admission)
            self._send(admission)

    def read(self, admission: Admission) -> bool:
        """Bytes from a connection still proving itself; True once its hello is proven (the
        caller then :meth:`admit` s or :meth:`refuse` s it). A failed one is refused here."""
        hs = admission.handshake
        try:
            data = admission.sock.recv(_RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            data = b""
        hs.receive(data)
        if hs.state == "failed":
            self.refuse(admission, hs.error)
        return hs.state == "done"

    def admit(self, admission: Admission) -> socket.socket:
        """The proven connection, no longer watched here (non-blocking, ``TCP_NODELAY``).
        The caller sends ``admission.handshake.outgoing()`` (the server's proof) first."""
        self._waiting.discard(admission)
        self._selector.unregister(admission.sock)
        sock = admission.sock
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def refuse(self, admission: Admission, reason: str) -> None:
        """Close the connection without a word, noting ``reason``."""
        self._waiting.discard(admission)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(admission.sock)
        self._note(f"{admission.peer}: {reason}")
        admission.sock.close()

    def expire(self) -> None:
        """Drop the connections that did not prove themselves by their deadline."""
        now = self._clock()
        for admission in [a for a in self._waiting if a.handshake.expired(now)]:
            self.refuse(admission, admission.handshake.error)

    def close(self, reason: str) -> None:
        """Drop every connection still proving itself."""
        for admission in list(self._waiting):
            self.refuse(admission, reason)

    def _send(self, admission: Admission) -> None:
        out = admission.handshake.outgoing()
        try:
            if out and admission.sock.send(out) < len(out):  # a few dozen bytes: never short
                raise OSError("short send during the handshake")
        except OSError as e:
            self.refuse(admission, f"handshake failed: {e}")

    def _note(self, why: str) -> None:
        if self._on_refused is not None:
            self._on_refused(why)
