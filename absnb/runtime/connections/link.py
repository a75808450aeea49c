"""One connection's socket as a single-threaded selector loop keeps it (:class:`Link`):
writes that never block (what the socket does not take waits in ``wbuf``, and the link is
watched for writing until it is sent), reads of at most a quarter MiB, and the reader of the
frames it receives. What a lost connection means is the plane's business: these methods
return the error instead of deciding.
"""

from __future__ import annotations

import selectors
import socket

from absnb.runtime.connections.frames import FrameReader

READ = selectors.EVENT_READ
WRITE = selectors.EVENT_WRITE
_RECV_BYTES = 256 * 1024


class Link:
    """A connection watched by ``selector`` (:meth:`watch`), read while :attr:`reading`.

    Args:
        selector: the loop's selector; the link registers itself as the data.
        kinds: the frame kinds it receives (its :attr:`reader`'s).
        name: what it is, for errors (a channel, a peer).
    """

    __slots__ = ("events", "name", "reader", "reading", "selector", "sock", "wbuf")

    def __init__(self, selector: selectors.BaseSelector, kinds: tuple[int, ...], name: str) -> None:
        self.selector = selector
        self.name = name
        self.sock: socket.socket | None = None
        self.events = 0
        self.reading = True
        self.reader = FrameReader(kinds)
        self.wbuf = bytearray()

    def live(self) -> socket.socket:
        """The connected socket; using a link that has none is a bug, said so."""
        if self.sock is None:
            raise ConnectionError(f"{self.name} has no connection")
        return self.sock

    def watch(self) -> None:
        """Watch the socket for what is due now: reading unless paused, writing while
        ``wbuf`` holds bytes."""
        events = 0
        if self.sock is not None:
            events = WRITE if self.wbuf else 0
            if self.reading:
                events |= READ
        if events == self.events:
            return
        sock = self.live()
        if not self.events:
            self.selector.register(sock, events, self)
        elif not events:
            self.selector.unregister(sock)
        else:
            self.selector.modify(sock, events, self)
        self.events = events

    def write(self, data: bytes) -> OSError | None:
        """Send ``data`` after what waits, never blocking; the error if the socket broke."""
        if self.wbuf:
            self.wbuf += data
            return None
        try:
            sent = self.live().send(data)
        except BlockingIOError:
            sent = 0
        except OSError as e:
            return e
        if sent < len(data):
            self.wbuf += memoryview(data)[sent:]
            self.watch()
        return None

    def write_pending(self) -> OSError | None:
        """The socket is writable: send what waits; the error if the socket broke."""
        try:
            sent = self.live().send(self.wbuf)
        except BlockingIOError:
            return None
        except OSError as e:
            return e
        del self.wbuf[:sent]
        if not self.wbuf:
            self.watch()
        return None

    def recv(self) -> bytes | None:
        """Bytes from the socket; ``None`` if it would block, ``b""`` at the end (or broken)."""
        try:
            return self.live().recv(_RECV_BYTES)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def drop(self) -> None:
        """Close the socket and forget what was unsent or half-received."""
        if self.events:
            self.selector.unregister(self.live())
            self.events = 0
        self.live().close()
        self.sock = None
        self.wbuf.clear()
        self.reader.clear()
