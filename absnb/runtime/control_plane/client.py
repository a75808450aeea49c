"""A host's end of the control plane: :class:`ControlClient`, used from the host's
single-threaded loop (connect, prove the job secret, register, then poll for commands and
send acknowledgements, reports and the end), and :func:`report_failure` for a host that
failed before it could register.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections.abc import Sequence

from absnb.core.ids import CheckpointId, TaskId
from absnb.runtime.connections.frames import FrameReader, frame
from absnb.runtime.connections.handshake import client_handshake
from absnb.runtime.connections.wire import AuthenticationError, FrameError, dumps
from absnb.runtime.control_plane.messages import (
    FRAME_KIND,
    HELLO,
    Ack,
    AddressBook,
    Command,
    ControlError,
    Ended,
    Failed,
    Finished,
    Refused,
    Register,
    Report,
    Stop,
)
from absnb.runtime.events.log import EventBatch
from absnb.runtime.plan import HostPlan

ServerMessage = Command | AddressBook | Refused
"""What a coordinator sends a host: before the address book, the book or a refusal."""
HostMessage = Register | Ack | Ended | Failed | Finished | Report | EventBatch
"""What a host sends the coordinator."""


def failure_message(
    host_id: int, attempt: int, error: BaseException, *, setup: bool = False
) -> Failed:
    """The :class:`~absnb.runtime.control_plane.messages.Failed` message for ``error``, with the
    exception pickled if it pickles. The message ends with the error's notes (Python 3.11's
    ``add_note``, such as the line of a lab student's code that raised it), as a
    traceback prints them."""
    try:
        exception = dumps(error)
    except Exception:
        exception = b""
    notes = "".join(f" ({note})" for note in getattr(error, "__notes__", ()))
    return Failed(host_id, attempt, f"{type(error).__name__}: {error}{notes}", exception, setup)


def report_failure(
    address: tuple[str, int], secret: bytes, failed: Failed, timeout: float = 5.0
) -> None:
    """Send ``failed`` to the coordinator on a connection of its own (best effort): how a
    host that failed before it registered tells the driver why."""
    with contextlib.suppress(Exception), socket.create_connection(address, timeout) as sock:
        client_handshake(sock, secret, HELLO)
        sock.sendall(frame(FRAME_KIND, failed))
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(1 << 16):  # until the server closes: nothing lost to a reset
            pass


def report_setup_failure(plan: HostPlan, error: BaseException) -> None:
    """Tell the coordinator that the host of ``plan`` failed before it could register, and
    why."""
    failed = failure_message(plan.host_id, plan.attempt, error, setup=True)
    report_failure(plan.coordinator, plan.secret, failed, min(plan.setup_timeout, 5.0))


class ControlClient:
    """A host's control connection, used from the host's single-threaded loop.

    Args:
        address: the coordinator server's ``address``.
        secret: the per-job secret.
        host_id, attempt, tasks, data_address: what :meth:`register` announces.
        timeout: how long :meth:`register` waits for the address book, and a send may block.
    """

    def __init__(
        self,
        address: tuple[str, int],
        secret: bytes,
        *,
        host_id: int,
        attempt: int,
        tasks: Sequence[TaskId],
        data_address: tuple[str, int],
        timeout: float = 60.0,
    ) -> None:
        self.address: tuple[str, int] = (address[0], address[1])
        self.secret = secret
        self.host_id = host_id
        self.attempt = attempt
        self.tasks = tuple(tasks)
        self.data_address: tuple[str, int] = (data_address[0], data_address[1])
        self.timeout = timeout
        self.book: AddressBook | None = None
        self._sock: socket.socket | None = None
        self._reader = FrameReader((FRAME_KIND,))
        self._inbox: list[ServerMessage] = []
        self._eof = False

    def _who(self) -> str:
        host, port = self.address
        return f"host {self.host_id} (attempt {self.attempt}), coordinator at {host}:{port}"

    def register(self) -> AddressBook:
        """Connect, authenticate, register; block until the address book arrives.

        Raises:
            TimeoutError: no connection or no address book within ``timeout``.
            ControlError: the coordinator refused the host (the reason says why) or closed
                the connection (a wrong job secret, or the server stopped).
        """
        if self._sock is not None:
            raise ControlError(f"{self._who()}: register() is called once")
        deadline = time.monotonic() + self.timeout
        try:
            sock = socket.create_connection(self.address, timeout=self.timeout)
        except TimeoutError as e:
            raise TimeoutError(
                f"{self._who()}: could not connect within {self.timeout} s; is the driver "
                "reachable from the executors (spark.driver.host)?"
            ) from e
        except OSError as e:
            raise ControlError(f"{self._who()}: could not connect: {e}") from e
        self._sock = sock
        try:
            return self._register(sock, deadline)
        except BaseException:
            self._sock = None
            sock.close()
            raise

    def _register(self, sock: socket.socket, deadline: float) -> AddressBook:
        """Authenticate, send Register, and wait for the address book (or a refusal)."""
        self._handshake(sock)
        while True:
            for message in self._inbox:
                if isinstance(message, AddressBook):
                    self._inbox.remove(message)
                    self.book = message
                    return message
                if isinstance(message, Refused):
                    raise ControlError(f"{self._who()}: refused: {message.reason}")
                if isinstance(message, Stop):
                    raise ControlError(f"{self._who()}: the coordinator stopped")
            if self._eof:
                raise ControlError(
                    f"{self._who()}: the coordinator closed the connection before sending the "
                    "address book: does this host have the job's secret?"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"{self._who()}: no address book within {self.timeout} s: not every host "
                    "of the attempt registered (does the cluster have a slot for every host?)"
                )
            self._receive(remaining)

    def _handshake(self, sock: socket.socket) -> None:
        """Prove the job's secret both ways (:mod:`absnb.runtime.connections.handshake`), then
        register."""
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            early = client_handshake(sock, self.secret, HELLO)
            register = Register(self.host_id, self.attempt, self.tasks, self.data_address)
            sock.sendall(frame(FRAME_KIND, register))
        except TimeoutError as e:
            raise TimeoutError(f"{self._who()}: the handshake timed out") from e
        except AuthenticationError as e:
            raise ControlError(
                f"{self._who()}: refused the coordinator: {e}; pass the coordinator address "
                "and secret of the same run"
            ) from e
        except OSError as e:
            raise ControlError(
                f"{self._who()}: the coordinator closed the connection during the handshake "
                f"({e}): does this host have the job's secret?"
            ) from e
        if early:  # frames the server sent right after its proof
            self._take(early)

    def _receive(self, timeout: float) -> bool:
        """Read what has arrived, waiting up to ``timeout``; False if nothing was readable."""
        sock = self._sock
        if sock is None or self._eof:
            return False
        readable, _, _ = select.select([sock], [], [], timeout)
        if not readable:
            return False
        try:
            data = sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError, TimeoutError):
            return False
        except OSError:
            data = b""
        if not data:
            self._eof = True
            return False
        self._take(data)
        return True

    def _take(self, data: bytes) -> None:
        """The server's messages that ``data`` completes, into the inbox.

        Raises:
            ControlError: a frame is corrupt, or not a control-plane message.
        """
        try:
            frames = self._reader.feed(data)
        except FrameError as e:
            self._eof = True
            raise ControlError(f"{self._who()}: {e}") from e
        for _, message in frames:
            if not isinstance(message, ServerMessage):
                self._eof = True
                raise ControlError(
                    f"{self._who()}: the coordinator sent {type(message).__name__!r}, which is "
                    "not a control-plane message: is the driver running the same absnb?"
                )
            self._inbox.append(message)

    def poll(self) -> list[Command]:
        """Every command that has arrived, without blocking.

        Raises:
            ControlError: the coordinator closed the connection and nothing is left to read.
        """
        if self._sock is None:
            raise ControlError(f"{self._who()}: register() first")
        for _ in range(64):  # bounded, so a busy server cannot starve the host's loop
            if not self._receive(0.0):
                break
        out: list[Command] = []
        for message in self._inbox:
            if not isinstance(message, Command):
                self._eof = True
                raise ControlError(
                    f"{self._who()}: the coordinator sent {type(message).__name__} after the "
                    "address book"
                )
            out.append(message)
        self._inbox = []
        if not out and self._eof:
            raise ControlError(f"{self._who()}: the coordinator closed the control connection")
        return out

    def _send(self, message: HostMessage) -> None:
        if self._sock is None:
            raise ControlError(f"{self._who()}: register() first")
        try:
            self._sock.sendall(frame(FRAME_KIND, message))
        except OSError as e:
            raise ControlError(
                f"{self._who()}: could not send {type(message).__name__}: {e}"
            ) from e

    def ack(self, ack: Ack) -> None:
        """Acknowledge one task's part of a checkpoint (already written to storage)."""
        self._send(ack)

    def decline(
        self, task: TaskId, checkpoint_id: CheckpointId, reason: str, *, write_failed: bool = False
    ) -> None:
        """``task`` declined ``checkpoint_id``, for ``reason`` (``write_failed``: its snapshot
        could not be written to checkpoint storage): the server aborts it."""
        self._send(Ack(task, checkpoint_id, "", 0, 0.0, declined=reason, write_failed=write_failed))

    def failed(self, error: BaseException, *, setup: bool = False) -> None:
        """Tell the server why this host fails (best effort: it may be gone already). Before
        :meth:`register`, on a connection of its own."""
        failed = failure_message(self.host_id, self.attempt, error, setup=setup)
        if self._sock is not None:
            with contextlib.suppress(ControlError):
                self._send(failed)
            return
        report_failure(self.address, self.secret, failed, min(self.timeout, 5.0))

    def events(self, batch: EventBatch) -> None:
        """Send rows of the host's event log."""
        self._send(batch)

    def report(self, report: Report) -> None:
        """Answer a :class:`~absnb.runtime.control_plane.messages.Probe` (termination detection)."""
        self._send(report)

    def ended(self, uncommitted: int, notified: CheckpointId) -> None:
        """Report that every task of this host has finished, and the output its sinks still
        hold uncommitted as of checkpoint ``notified``
        (:class:`~absnb.runtime.control_plane.messages.Ended`)."""
        self._send(Ended(self.host_id, self.attempt, uncommitted, notified))

    def finished(self, metrics: dict[str, object]) -> None:
        """Report that every task of this host has finished."""
        self._send(Finished(self.host_id, self.attempt, metrics))

    def close(self, linger: float = 2.0) -> None:
        """Close gracefully: end our side, then read until the server closes (at most
        ``linger`` seconds), so that nothing we sent is lost to a reset."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + linger
            while (remaining := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([sock], [], [], remaining)
                if readable and not sock.recv(1 << 16):
                    break
        except OSError:
            pass
        finally:
            sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
