"""The selector loop of a plane: one listening socket, the connections it admits
(:mod:`~absnb.runtime.connections.admission`) and whatever the plane registers itself.
:meth:`Listener.select` does the accepting and the admitting and hands the plane the rest:
its own readable or writable connections, and the admissions whose peer has proven it knows
the job secret, for the plane to take or refuse by their hello.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Callable
from typing import Any

from absnb.runtime.connections.admission import Admission, Admissions
from absnb.runtime.connections.handshake import HANDSHAKE_SECONDS
from absnb.runtime.connections.link import READ
from absnb.runtime.connections.wire import bind_address, listen


class Listener:
    """A listening socket and its selector (see the module docstring); one thread drives it.

    Args:
        secret: the per-job secret every connection proves it knows.
        bind_host: where to listen (by default the interface of ``advertise_host``:
            loopback for a local job), on the first free port of ``ports`` (by default any).
        advertise_host: the host name peers connect to (``address``).
        backlog: the listening socket's backlog.
        clock: the time for handshake deadlines (seconds).
        handshake_timeout: how long a new connection may take to prove itself.
        on_refused: told why each refused connection was refused.
    """

    def __init__(
        self,
        secret: bytes,
        *,
        bind_host: str | None = None,
        ports: range | None = None,
        advertise_host: str = "127.0.0.1",
        backlog: int = 128,
        clock: Callable[[], float] = time.monotonic,
        handshake_timeout: float = HANDSHAKE_SECONDS,
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        if bind_host is None:
            bind_host = bind_address(advertise_host)
        self.selector = selectors.DefaultSelector()
        self.admissions = Admissions(
            secret,
            self.selector,
            clock=clock,
            timeout=handshake_timeout,
            on_refused=on_refused,
        )
        self._sock = listen(bind_host, ports, backlog=backlog)
        self._sock.setblocking(False)
        self.selector.register(self._sock, READ, None)
        self.address: tuple[str, int] = (advertise_host, self._sock.getsockname()[1])
        self._closed = False

    def select(self, timeout: float) -> list[tuple[Any, int]]:
        """Wait up to ``timeout`` seconds for I/O; accept, admit and expire admissions; return
        ``(data, events)`` of the plane's own registrations that are ready, and
        ``(admission, READ)`` of each admission whose hello is proven."""
        admissions = self.admissions
        ready = []
        for key, mask in self.selector.select(timeout):
            data = key.data
            if data is None:
                admissions.accept(self._sock)
            elif type(data) is Admission:
                if admissions.read(data):
                    ready.append((data, mask))
            else:
                ready.append((data, mask))
        if admissions:
            admissions.expire()
        return ready

    def getsockname(self) -> tuple[str, int]:
        """Where the listening socket is bound: ``(interface, port)``."""
        host, port = self._sock.getsockname()[:2]
        return (str(host), int(port))

    def admit(self, admission: Admission) -> socket.socket:
        """The proven connection (see
        :meth:`Admissions.admit <absnb.runtime.connections.admission.Admissions.admit>`)."""
        return self.admissions.admit(admission)

    def refuse(self, admission: Admission, reason: str) -> None:
        """Close a proven connection the plane does not take, noting ``reason``."""
        self.admissions.refuse(admission, reason)

    def close(self, reason: str) -> None:
        """Drop the connections still proving themselves, close the listening socket and the
        selector (idempotent; close the plane's own connections first)."""
        if self._closed:
            return
        self._closed = True
        self.admissions.close(reason)
        self.selector.close()
        self._sock.close()
