"""A threaded selector loop serving authenticated, framed connections: the I/O of the
coordinator's control plane (:class:`~absnb.runtime.control_plane.server.CoordinatorServer`).

One background thread drives a :class:`~absnb.runtime.connections.listener.Listener`
(accepting connections, each proving it knows the job secret by its deadline without the
loop waiting for it: :mod:`absnb.runtime.connections.admission`), keeps each connection it
admitted on a :class:`~absnb.runtime.connections.link.Link` (the data plane's: frames
reassembled as they come, writes that never block), and hands each message to
``SelectorServer._dispatch``. What a host does not read waits in its link's buffer while
the loop serves every other host; a host that reads nothing for ``send_timeout`` seconds is
disconnected. Other threads run code on the loop's thread with ``SelectorServer._call``.
A subclass decides what messages mean; this module only moves bytes.
"""

from __future__ import annotations

import contextlib
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable

from absnb.runtime.connections.admission import Admission
from absnb.runtime.connections.frames import frame
from absnb.runtime.connections.handshake import HANDSHAKE_SECONDS
from absnb.runtime.connections.link import READ, WRITE, Link
from absnb.runtime.connections.listener import Listener
from absnb.runtime.connections.wire import FrameError
from absnb.runtime.control_plane.messages import FRAME_KIND, Register

_WAKE = object()
"""The data of the socket other threads wake the loop with."""


LINGER_SECONDS = 2.0
"""The longest a stopping server spends sending what its hosts have not read yet."""


class _Conn(Link):
    """An authenticated connection: its link, the peer's registration (the subclass's
    business) and whether it is closed (a closed one may still send what waits in its
    buffer, :attr:`since` the last time its peer read anything)."""

    __slots__ = ("closed", "failure", "register", "since")

    def __init__(self, selector: selectors.BaseSelector, sock: socket.socket, peer: object) -> None:
        super().__init__(selector, (FRAME_KIND,), f"the control connection of {peer}")
        self.sock = sock
        self.register: Register | None = None
        self.closed = False
        self.failure = ""
        self.since = 0.0


class SelectorServer:
    """The loop (see the module docstring).

    Args:
        secret: the per-job secret every connection proves it knows.
        hello: what a client must say in its handshake.
        bind_host, ports: where to listen (by default the interface of ``advertise_host``:
            loopback for a local job), on the first free port of ``ports`` (by default any).
        advertise_host: the address clients connect to.
        clock: the time for deadlines (seconds).
        tick: the longest the thread sleeps between two calls of ``_idle``.
        handshake_timeout: how long a new connection may take to authenticate.
        send_timeout: a peer that does not read for this long is disconnected.
    """

    def __init__(
        self,
        secret: bytes,
        *,
        hello: object,
        bind_host: str | None = None,
        advertise_host: str = "127.0.0.1",
        ports: range | None = None,
        clock: Callable[[], float] = time.monotonic,
        tick: float = 0.05,
        handshake_timeout: float = HANDSHAKE_SECONDS,
        send_timeout: float = 30.0,
    ) -> None:
        self.secret = secret
        self.hello = hello
        self.clock = clock
        self.tick = tick
        self.send_timeout = send_timeout
        self._listener = Listener(
            secret,
            bind_host=bind_host,
            ports=ports,
            advertise_host=advertise_host,
            clock=clock,
            handshake_timeout=handshake_timeout,
        )
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector = self._listener.selector
        self._selector.register(self._wake_r, READ, _WAKE)
        self._commands: queue.SimpleQueue[tuple[Callable[[], None], threading.Event]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._stopped = False
        self._closed_all = False
        self._cond = threading.Condition()
        self._failure: BaseException | None = None
        self._conns: set[_Conn] = set()
        self._unsent: set[_Conn] = set()
        """The connections (open or closed) with bytes their peer has not taken yet."""

    @property
    def address(self) -> tuple[str, int]:
        """Where clients connect: ``(advertise_host, port)``."""
        return self._listener.address

    def start(self) -> None:
        """Start serving in a background thread."""
        if self._thread is not None or self._stopped:
            raise RuntimeError("a CoordinatorServer is started once")
        self._thread = threading.Thread(target=self._run, name="absnb-control", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Close everything and end the thread (``_request_stop`` says goodbye first)."""
        if self._stopped:
            return
        if self._thread is not None and self._thread.is_alive():
            self._call(self._request_stop)
            if self._thread is not threading.current_thread():
                self._thread.join(10.0)
        else:
            self._close_all()
        self._stopped = True

    def __enter__(self) -> SelectorServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what a subclass decides ---------------------------------------------------------------
    def _dispatch(self, conn: _Conn, message: object) -> None:
        """One message from an authenticated connection."""
        raise NotImplementedError

    def _drop(self, conn: _Conn) -> None:
        """The connection broke or misbehaved: close it (a subclass also forgets its peer)."""
        self._close(conn)

    def _wait(self) -> float:
        """The longest the loop may sleep now."""
        return self.tick

    def _idle(self) -> None:
        """Called after every round of the loop that was not cut short."""

    def _request_stop(self) -> None:
        """On the loop's thread: end the loop (a subclass says goodbye first)."""
        self._stopping = True

    # -- commands from other threads ----------------------------------------------------------

    def _call(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the server thread (or here if none runs) and wait until it ran."""
        thread = self._thread
        if thread is None or not thread.is_alive() or thread is threading.current_thread():
            fn()
            return
        done = threading.Event()
        self._commands.put((fn, done))
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")
        while not done.wait(0.1):
            if not thread.is_alive():  # it ended before running the command
                if not done.is_set():
                    fn()
                return

    def _run_commands(self) -> None:
        with contextlib.suppress(OSError):
            while self._wake_r.recv(4096):
                pass
        while True:
            try:
                fn, done = self._commands.get_nowait()
            except queue.Empty:
                return
            try:
                fn()
            finally:
                done.set()

    # -- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stopping:
                for data, mask in self._listener.select(self._wait()):
                    if data is _WAKE:
                        self._run_commands()
                    elif type(data) is Admission:
                        self._admit(data)
                    elif isinstance(data, _Conn):
                        self._ready(data, mask)
                    if self._stopping:
                        break
                else:
                    self._idle()
                if self._unsent:
                    self._expire_unsent()
            self._linger()
        except BaseException as e:  # surfaced by wait_finished
            with self._cond:
                self._failure = e
                self._cond.notify_all()
        finally:
            self._run_commands()
            self._close_all()

    def _close_all(self) -> None:
        if self._closed_all:
            return
        self._closed_all = True
        for conn in list(self._conns):
            self._close(conn)
        for conn in list(self._unsent):
            self._shut(conn)
        for s in (self._wake_r, self._wake_w):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(s)
            s.close()
        self._listener.close("the server stopped")

    def _linger(self) -> None:
        """The loop is ending: send what the hosts have not taken yet (a ``Stop``, say), for
        at most :data:`LINGER_SECONDS` (and ``send_timeout``)."""
        deadline = time.monotonic() + min(LINGER_SECONDS, self.send_timeout)
        for conn in self._conns:
            conn.reading = False
            conn.watch()
        while self._unsent and (left := deadline - time.monotonic()) > 0:
            for data, mask in self._listener.select(left):
                if data is _WAKE:
                    self._run_commands()
                elif isinstance(data, _Conn):
                    self._ready(data, mask & WRITE)

    def _admit(self, admission: Admission) -> None:
        """A connection that proved it knows the secret: served if its hello is a control
        client's, else closed without a word."""
        if admission.handshake.hello != self.hello:
            self._listener.refuse(admission, "not a control client")
            return
        conn = _Conn(self._selector, self._listener.admit(admission), admission.peer)
        self._conns.add(conn)
        conn.watch()
        self._write(conn, admission.handshake.outgoing())  # the server's proof

    def _ready(self, conn: _Conn, mask: int) -> None:
        if conn.sock is None:  # shut earlier in this round (a peer's message dropped it)
            return
        if mask & WRITE:
            self._flush(conn)
        if mask & READ and not conn.closed:
            self._read(conn)

    def _read(self, conn: _Conn) -> None:
        data = conn.recv()
        if data is None:
            return
        if not data:
            self._drop(conn)
            return
        try:
            frames = conn.reader.feed(data)
        except FrameError:
            self._drop(conn)
            return
        for _, message in frames:
            self._dispatch(conn, message)
            if conn.closed:
                return

    # -- connections --------------------------------------------------------------------------

    def _send(self, conn: _Conn, message: object) -> None:
        if not conn.closed:
            self._write(conn, frame(FRAME_KIND, message))

    def _write(self, conn: _Conn, data: bytes) -> None:
        """Send ``data`` without waiting; what the socket does not take waits in the link."""
        error = conn.write(data)
        if error is not None:
            self._drop(conn)
        elif conn.wbuf and conn not in self._unsent:
            conn.since = time.monotonic()
            self._unsent.add(conn)

    def _flush(self, conn: _Conn) -> None:
        """``conn`` is writable: send what waits; a closed one is shut once all is sent."""
        before = len(conn.wbuf)
        error = conn.write_pending()
        if error is not None:
            self._abandon(conn)
            return
        if len(conn.wbuf) < before:
            conn.since = time.monotonic()
        if not conn.wbuf:
            self._unsent.discard(conn)
            if conn.closed:
                self._shut(conn)

    def _expire_unsent(self) -> None:
        """Disconnect the hosts that took nothing for ``send_timeout`` seconds."""
        too_old = time.monotonic() - self.send_timeout
        for conn in [c for c in self._unsent if c.since <= too_old]:
            self._abandon(conn)

    def _abandon(self, conn: _Conn) -> None:
        """Forget what waits for ``conn``'s peer: drop it if open, shut it if closed."""
        conn.wbuf.clear()
        self._unsent.discard(conn)
        if conn.closed:
            self._shut(conn)
        else:
            self._drop(conn)

    def _close(self, conn: _Conn) -> None:
        """Close ``conn`` once what waits in its buffer is sent (read nothing more)."""
        if conn.closed:
            return
        conn.closed = True
        self._conns.discard(conn)
        if conn.wbuf and conn.sock is not None:
            conn.reading = False
            conn.watch()
        else:
            self._shut(conn)

    def _shut(self, conn: _Conn) -> None:
        """Close ``conn``'s socket now, whatever waits."""
        conn.closed = True
        self._unsent.discard(conn)
        if conn.sock is not None:
            conn.drop()
