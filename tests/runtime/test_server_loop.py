"""The control server's loop never waits on one peer: what a host does not read waits in
that connection's buffer while the loop serves every other host, and a host that reads
nothing for ``send_timeout`` seconds is disconnected; a stopping server still sends what
waits, for a while."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from absnb.runtime.connections.frames import FrameReader, frame
from absnb.runtime.connections.handshake import client_handshake
from absnb.runtime.connections.wire import new_secret
from absnb.runtime.control_plane import server_loop
from absnb.runtime.control_plane.messages import FRAME_KIND, HELLO
from absnb.runtime.control_plane.server_loop import SelectorServer, _Conn

SECRET = new_secret()
FLOOD = b"x" * (16 << 20)
"""Far more than a socket's buffers hold: a peer that does not read it stalls a blocking
send."""


class Flooder(SelectorServer):
    """Answers ``"flood"`` with :data:`FLOOD`, anything else with ``("pong", it)``."""

    def __init__(self, send_timeout: float) -> None:
        super().__init__(SECRET, hello=HELLO, send_timeout=send_timeout)
        self.dropped: list[_Conn] = []

    def _dispatch(self, conn: _Conn, message: Any) -> None:
        self._send(conn, FLOOD if message == "flood" else ("pong", message))

    def _drop(self, conn: _Conn) -> None:
        self.dropped.append(conn)
        super()._drop(conn)


@pytest.fixture
def flooder(request: pytest.FixtureRequest) -> Iterator[Flooder]:
    server = Flooder(getattr(request, "param", 5.0))
    server.start()
    yield server
    server.stop()


def connect(server: Flooder, *, rcvbuf: int = 0) -> socket.socket:
    """A proven control connection (its receive buffer small if ``rcvbuf``)."""
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(2.0)
    sock.connect(server.address)
    client_handshake(sock, SECRET, HELLO)
    return sock


def answer(sock: socket.socket) -> Any:
    reader = FrameReader((FRAME_KIND,))
    while True:
        data = sock.recv(1 << 16)
        assert data, "the server closed the connection"
        if frames := reader.feed(data):
            return frames[0][1]


def test_a_host_that_stops_reading_does_not_stall_the_server_for_another(
    flooder: Flooder,
) -> None:
    with connect(flooder, rcvbuf=4096) as stalled:
        stalled.sendall(frame(FRAME_KIND, "flood"))
        time.sleep(0.2)  # the server is writing to a host that reads nothing
        with connect(flooder) as other:  # a blocked loop would not even admit it
            other.sendall(frame(FRAME_KIND, "ping"))
            assert answer(other) == ("pong", "ping")
            # asked while ``other`` is open: once it closes, the server drops it
            assert flooder.dropped == []  # the stalled host is kept until its send timeout


@pytest.mark.parametrize("flooder", [0.3], indirect=True)
def test_a_host_that_reads_nothing_for_the_send_timeout_is_disconnected(
    flooder: Flooder,
) -> None:
    with connect(flooder, rcvbuf=4096) as stalled:
        stalled.sendall(frame(FRAME_KIND, "flood"))
        deadline = time.monotonic() + 3.0
        while not flooder.dropped and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(flooder.dropped) == 1


def test_a_stopping_server_sends_what_a_slow_host_has_not_read_yet(
    flooder: Flooder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What waits in a connection's buffer when the server stops still reaches a host that
    reads it within the linger time, before the connection closes."""
    monkeypatch.setattr(server_loop, "LINGER_SECONDS", 8.0)  # ample on a loaded machine
    with connect(flooder, rcvbuf=4096) as slow:
        slow.sendall(frame(FRAME_KIND, "flood"))
        time.sleep(0.2)  # most of the flood waits in the server's buffer
        stopping = threading.Thread(target=flooder.stop)
        stopping.start()
        slow.settimeout(5.0)
        got = 0
        while data := slow.recv(1 << 20):
            got += len(data)
        stopping.join(10)
        assert got == len(frame(FRAME_KIND, FLOOD))
