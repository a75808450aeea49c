"""A threaded selector loop serving authenticated, framed connections: the I/O of the
coordinator's control plane (:class:`~absnb.runtime.control.CoordinatorServer`).

One background thread drives a :class:`~absnb.runtime.connections.listener.Listener`
(accepting connections, each proving it knows the job secret by its deadline without the
loop waiting for it: :mod:`absnb.runtime.connections.admission`), reassembles the frames of
the connections it admitted (:class:`~absnb.runtime.connections.frames.FrameReader`), and
hands each message to :meth:`SelectorServer._dispatch`. Other threads run code on the loop's
thread with :meth:`SelectorServer._call`. A subclass decides what messages mean; this
module only moves bytes.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from absnb.runtime.connections.admission import Admission
from absnb.runtime.connections.frames import FrameReader, frame
from absnb.runtime.connections.link import READ
from absnb.runtime.connections.listener import Listener
from absnb.runtime.control_messages import FRAME_KIND
from absnb.runtime.handshake import HANDSHAKE_SECONDS
from absnb.runtime.wire import FrameError

_WAKE = object()
"""The data of the socket other threads wake the loop with."""


@dataclass(eq=False)
class _Conn:
    """An authenticated connection."""

    sock: socket.socket
    reader: FrameReader = field(default_factory=lambda: FrameReader((FRAME_KIND,)))
    register: Any = None
    """What the peer registered as (the subclass's business)."""
    closed: bool = False
    failure: str = ""


class SelectorServer:
    """The loop (see the module docstring).

    Args:
        secret: the per-job secret every connection proves it knows.
        hello: what a client must say in its handshake.
        bind_host, ports: where to listen (by default the interface of ``advertise_host``:
            loopback for a local job), on the first free port of ``ports`` (by default any).
        advertise_host: the address clients connect to.
        clock: the time for deadlines (seconds).
        tick: the longest the thread sleeps between two calls of :meth:`_idle`.
        handshake_timeout: how long a new connection may take to authenticate.
        send_timeout: a peer that does not read for this long is disconnected.
    """

    def __init__(
        self,
        secret: bytes,
        *,
        hello: Any,
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
        """Close everything and end the thread (:meth:`_request_stop` says goodbye first)."""
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
    def _dispatch(self, conn: _Conn, message: Any) -> None:
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
                for data, _ in self._listener.select(self._wait()):
                    if data is _WAKE:
                        self._run_commands()
                    elif type(data) is Admission:
                        self._admit(data)
                    elif isinstance(data, _Conn) and not data.closed:
                        self._read(data)
                    if self._stopping:
                        break
                else:
                    self._idle()
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
        for s in (self._wake_r, self._wake_w):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(s)
            s.close()
        self._listener.close("the server stopped")

    def _admit(self, admission: Admission) -> None:
        """A connection that proved it knows the secret: served if its hello is a control
        client's, else closed without a word."""
        if admission.handshake.hello != self.hello:
            self._listener.refuse(admission, "not a control client")
            return
        sock = self._listener.admit(admission)
        try:
            sock.sendall(admission.handshake.outgoing())  # the server's proof
        except OSError:
            sock.close()
            return
        sock.setblocking(True)
        sock.settimeout(self.send_timeout)
        conn = _Conn(sock)
        self._conns.add(conn)
        self._selector.register(sock, READ, conn)

    def _read(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError, TimeoutError):
            return
        except OSError:
            data = b""
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

    def _send(self, conn: _Conn, message: Any) -> None:
        if conn.closed:
            return
        try:
            conn.sock.sendall(frame(FRAME_KIND, message))
        except OSError:
            self._drop(conn)

    def _close(self, conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._conns.discard(conn)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        conn.sock.close()
