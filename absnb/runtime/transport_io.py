"""The non-blocking socket I/O of a data plane's connections: selector events, buffered
writes, reads (:class:`SocketIO`, a base of :class:`~absnb.runtime.transport.DataPlane`)."""

from __future__ import annotations

import selectors

from absnb.runtime.channel_ends import _Conn, _Input
from absnb.runtime.connections.listener import READ, WRITE
from absnb.runtime.transport_connect import Connecting

_RECV_BYTES = 256 * 1024


class SocketIO(Connecting):
    """Writes that never block (what a socket does not take waits in ``wbuf`` and the
    connection is watched for writing), reads of at most ``_RECV_BYTES``."""

    _sel: selectors.BaseSelector

    def _events(self, conn: _Conn) -> int:
        if conn.sock is None:
            return 0
        events = WRITE if conn.wbuf else 0
        if not isinstance(conn, _Input) or not conn.blocked:  # an output is always read
            events |= READ
        return events

    def _rewatch(self, conn: _Conn) -> None:
        events = self._events(conn)
        if events == conn.events:
            return
        sock = conn.live()
        if not conn.events:
            self._sel.register(sock, events, conn)
        elif not events:
            self._sel.unregister(sock)
        else:
            self._sel.modify(sock, events, conn)
        conn.events = events

    def _write(self, conn: _Conn, data: bytes) -> None:
        if conn.wbuf:
            conn.wbuf += data
            return
        try:
            sent = conn.live().send(data)
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
            sent = conn.live().send(conn.wbuf)
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
            return conn.live().recv(_RECV_BYTES)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def _drop_socket(self, conn: _Conn) -> None:
        if conn.events:
            self._sel.unregister(conn.live())
            conn.events = 0
        conn.live().close()
        conn.sock = None
        conn.wbuf.clear()
        conn.reader.clear()
