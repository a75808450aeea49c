"""The control plane: the checkpoint coordinator as a server on the driver, and its clients.

Every host process (one per Spark task, hosting one or more tasks of the execution graph)
opens one control connection to the driver's :class:`CoordinatorServer`; both prove they
know the per-job secret (:func:`absnb.runtime.wire.server_handshake`, mutual) before either
reads anything else from the other. The host then registers; once every host of the current
attempt has registered, each receives the :class:`AddressBook` (where every task's data
plane listens, and which checkpoint to restore). From then on the server triggers periodic
checkpoints at the hosts of the initiator tasks, collects the tasks' acknowledgements, and
when a checkpoint is complete calls ``on_complete`` (the runtime writes the storage manifest) and
only then sends notify-checkpoint-complete to every host.

A job whose end cannot travel as end-of-input (a cycle, or processes with their own input
logs sending to each other, like the bank) terminates by quiescence detection
(``quiescence=True``): the server probes every host in rounds (:class:`Probe`); each
answers with its records sent and received per channel and whether its own input is all
consumed (:class:`Report`). When two consecutive rounds see every host idle, every channel
with as many records received as sent, and the same counts in both, nothing can be in
transit or running any more, and the server tells every host to finish
(:class:`Terminate`). This is the four-counter method of F. Mattern, "Algorithms for
distributed termination detection", Distributed Computing 2(3):161-175, 1987: a host whose
input is consumed becomes busy again only by receiving a record, which would change the
counts between the two rounds.

Messages are small frozen dataclasses, pickled (protocol 5) into frames of kind
:data:`FRAME_KIND`. The server runs one thread with a selector; hosts use
:class:`ControlClient` from their single-threaded loop.
"""

from __future__ import annotations

import contextlib
import queue
import select
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from absnb.core.errors import AbsnbError
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.snapshot import TaskSnapshot
from absnb.protocols.coordinator import CheckpointCoordinator
from absnb.runtime.wire import (
    HEADER,
    MAX_FRAME,
    AuthenticationError,
    FrameError,
    client_handshake,
    dumps,
    encode,
    listen,
    loads,
    server_handshake,
)

FRAME_KIND = 0x43
"""The frame kind of every control-plane message."""

HELLO = "absnb-control/1"
"""What a control client says in the handshake, so that a data-plane peer is refused."""


class ControlError(AbsnbError, ConnectionError):
    """The control plane failed: the coordinator refused a host, or a connection broke."""


# -- messages ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Register:
    """Host -> server, first frame: who the host is and where its data plane listens."""

    host_id: int
    attempt: int
    tasks: tuple[TaskId, ...]
    data_address: tuple[str, int]


@dataclass(frozen=True)
class AddressBook:
    """Server -> every host once all hosts of the attempt registered."""

    attempt: int
    hosts: dict[int, tuple[str, int]]
    task_host: dict[TaskId, int]
    restore_checkpoint: CheckpointId
    """The checkpoint every task restores; 0 for none (a fresh start)."""


@dataclass(frozen=True)
class Trigger:
    """Server -> hosts of initiator tasks: start checkpoint ``checkpoint_id`` at ``tasks``."""

    checkpoint_id: CheckpointId
    tasks: tuple[TaskId, ...]


@dataclass(frozen=True)
class Ack:
    """Host -> server: ``task``'s part of a checkpoint is written to storage."""

    task: TaskId
    checkpoint_id: CheckpointId
    snapshot_key: str
    state_bytes: int
    alignment_s: float
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Notify:
    """Server -> every host: the checkpoint is complete (its manifest is written)."""

    checkpoint_id: CheckpointId


@dataclass(frozen=True)
class Aborted:
    """Server -> hosts: the checkpoint is aborted (subsumed, or the attempt failed)."""

    checkpoint_id: CheckpointId


@dataclass(frozen=True)
class Finished:
    """Host -> server: every task of the host has finished."""

    host_id: int
    attempt: int
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failed:
    """Host -> server, its last word: the host failed with ``error`` (its peers hear why)."""

    host_id: int
    attempt: int
    error: str


@dataclass(frozen=True)
class Stop:
    """Server -> hosts: stop now, failing (the host's attempt is over, a host of the attempt
    was lost, or the server is stopping)."""

    reason: str = field(default="", compare=False)


@dataclass(frozen=True)
class Probe:
    """Server -> every host: report your counts for termination-detection round ``round``."""

    round: int


@dataclass(frozen=True)
class Report:
    """Host -> server, the answer to :class:`Probe`: whether the host is idle (its own input
    logs consumed, nothing queued locally) and its tasks' records sent and received per
    channel (the channel sequence numbers, restored with the tasks after a failure)."""

    host_id: int
    attempt: int
    round: int
    idle: bool
    sent: dict[ChannelId, int]
    received: dict[ChannelId, int]


@dataclass(frozen=True)
class Terminate:
    """Server -> every host: the job has terminated (quiescence detected); finish now."""


@dataclass(frozen=True)
class Refused:
    """Server -> host, then the connection is closed: why the registration was refused."""

    reason: str


Command = Trigger | Notify | Aborted | Stop | Probe | Terminate
"""What :meth:`ControlClient.poll` returns."""


class _FrameReader:
    """Reassembles frames from the bytes of a stream, as they come."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> Iterator[Any]:
        """Add ``data``; yields every message now complete. Raises FrameError if malformed."""
        self._buffer += data
        while len(self._buffer) >= HEADER.size:
            length, kind = HEADER.unpack_from(self._buffer)
            if length > MAX_FRAME or kind != FRAME_KIND:
                raise FrameError(f"not a control frame (kind {kind}, {length} bytes)")
            end = HEADER.size + length
            if len(self._buffer) < end:
                return
            payload = bytes(self._buffer[HEADER.size : end])
            del self._buffer[:end]
            try:
                yield loads(payload)
            except Exception as e:  # the peer is authenticated; its frame is just malformed
                raise FrameError(f"a control frame could not be unpickled: {e}") from e


def _frame(message: Any) -> bytes:
    return encode(FRAME_KIND, dumps(message))


# -- the server -------------------------------------------------------------------------------
@dataclass(eq=False)
class _Conn:
    sock: socket.socket
    reader: _FrameReader = field(default_factory=_FrameReader)
    register: Register | None = None
    closed: bool = False
    failure: str = ""


Event = tuple[float, str, dict[str, Any]]


class CoordinatorServer:
    """The checkpoint coordinator on the driver, serving the hosts' control connections.

    One background thread (``start``) accepts connections, authenticates them, serves
    registrations, acknowledgements and finish reports, and triggers periodic checkpoints
    while the current attempt runs (every host registered, none finished or lost).
    Every other method may be called from any thread.

    Args:
        coordinator: the sans-IO coordinator; this server is the only one to drive it.
        secret: the per-job secret every host must prove it knows.
        hosts: how many hosts each attempt has.
        initiators: the tasks a trigger is injected into (the sources).
        on_complete: called with the checkpoint id and every task's :class:`Ack` (in the
            coordinator's task order) when a checkpoint completes, before any host is
            notified. If it raises, the checkpoint is aborted instead (and no longer
            counts as completed in the coordinator).
        bind_host, ports: where to listen: all interfaces, on the first free port of
            ``ports`` (by default any free port).
        advertise_host: the address hosts connect to (the runtime passes spark.driver.host).
        clock: the time for the coordinator and the events (seconds).
        attempt, restore_checkpoint: the first attempt, before any :meth:`new_attempt`.
        tick: the longest the thread sleeps between two checks for a due trigger.
        handshake_timeout: how long a new connection may take to authenticate; the thread
            waits for it, so a silent peer delays serving by at most this long.
        send_timeout: a host that does not read for this long is disconnected.
        quiescence: detect the job's termination by probing the hosts (see the module
            docstring), for jobs whose end cannot travel as end-of-input.
        probe_interval: the pause between two termination-detection rounds.

    Attributes:
        events: ``(time, kind, details)`` tuples for metrics, with kind ``triggered``,
            ``running`` (every host of an attempt registered), ``acknowledged``,
            ``completed``, ``aborted``, ``refused``, ``disconnected`` or ``terminated``.
    """

    def __init__(
        self,
        coordinator: CheckpointCoordinator,
        secret: bytes,
        *,
        hosts: int,
        initiators: Sequence[TaskId],
        on_complete: Callable[[CheckpointId, dict[TaskId, Ack]], None] | None = None,
        bind_host: str = "0.0.0.0",
        advertise_host: str = "127.0.0.1",
        ports: range | None = None,
        clock: Callable[[], float] = time.monotonic,
        attempt: int = 0,
        restore_checkpoint: CheckpointId = 0,
        tick: float = 0.05,
        handshake_timeout: float = 5.0,
        send_timeout: float = 30.0,
        quiescence: bool = False,
        probe_interval: float = 0.02,
    ) -> None:
        if hosts < 1:
            raise ValueError(f"a job needs at least one host, not hosts={hosts}")
        unknown = [str(t) for t in initiators if t not in coordinator.tasks]
        if unknown:
            raise ValueError(
                f"initiators {unknown} are not tasks of job {coordinator.job!r}: pass the "
                "job graph's own initiators"
            )
        self.coordinator = coordinator
        self.secret = secret
        self.hosts = hosts
        self.initiators = tuple(initiators)
        self.on_complete = on_complete
        self.advertise_host = advertise_host
        self.clock = clock
        self.tick = tick
        self.handshake_timeout = handshake_timeout
        self.send_timeout = send_timeout
        self.quiescence = quiescence
        self.probe_interval = probe_interval
        self.events: list[Event] = []
        self.failures: dict[int, str] = {}
        """The first error a host reported (``Failed``) in each attempt: why the attempt
        failed, which Spark's own message may not say (it names whichever task ended first)."""

        self._listener = listen(bind_host, ports)
        self._listener.setblocking(False)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
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
        self._attempt = attempt
        self._restore = restore_checkpoint
        self._registered: dict[int, Register] = {}
        self._live: dict[int, _Conn] = {}
        self._task_host: dict[TaskId, int] = {}
        self._book_sent = False
        self._finished: dict[int, dict[str, Any]] = {}
        self._lost: set[int] = set()
        self._acks: dict[CheckpointId, dict[TaskId, Ack]] = {}
        self._triggered_at: dict[CheckpointId, float] = {}
        # termination detection
        self._round = 0
        self._round_open = False
        self._reports: dict[int, Report] = {}
        self._previous_wave: object = None
        self._next_probe = 0.0
        self._terminated = False

    # -- public API ----------------------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        """Where hosts connect: ``(advertise_host, port)``."""
        return (self.advertise_host, self._listener.getsockname()[1])

    @property
    def attempt(self) -> int:
        """The current attempt."""
        return self._attempt

    @property
    def terminated(self) -> bool:
        """True once quiescence detection declared the current attempt's job finished."""
        return self._terminated

    def start(self) -> None:
        """Start serving in a background thread."""
        if self._thread is not None or self._stopped:
            raise RuntimeError("a CoordinatorServer is started once")
        self._thread = threading.Thread(target=self._run, name="absnb-control", daemon=True)
        self._thread.start()

    def new_attempt(self, attempt: int, restore_checkpoint: CheckpointId) -> None:
        """Start over after a failure: abort every pending checkpoint, send ``Aborted`` for
        each and then ``Stop`` to every host still connected, close all connections, and
        wait for the hosts of ``attempt``; their address book says to restore
        ``restore_checkpoint``. Registrations of any other attempt are refused.
        """
        if attempt < self._attempt:
            raise ValueError(
                f"attempt {attempt} is older than the current attempt {self._attempt}: "
                "attempts must not go back"
            )
        self._call(lambda: self._new_attempt(attempt, restore_checkpoint))

    def wait_finished(self, timeout: float | None = None) -> dict[int, dict[str, Any]]:
        """Block until every host of the current attempt sent ``Finished``; their metrics.

        Raises:
            TimeoutError: not every host finished within ``timeout`` seconds.
            ControlError: a host disconnected before it finished, or the server failed.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._failure is not None:
                    raise ControlError(f"the coordinator server failed: {self._failure!r}")
                if self._lost:
                    raise ControlError(
                        f"hosts {sorted(self._lost)} of attempt {self._attempt} disconnected "
                        "before they finished"
                    )
                if len(self._finished) >= self.hosts:
                    return dict(self._finished)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    running = sorted(set(self._registered) - set(self._finished))
                    raise TimeoutError(
                        f"{self.hosts - len(self._finished)} of {self.hosts} hosts of attempt "
                        f"{self._attempt} did not finish within {timeout} s (registered and "
                        f"running: {running}; not registered: "
                        f"{self.hosts - len(self._registered)})"
                    )
                self._cond.wait(remaining)

    def stop(self) -> None:
        """Send ``Stop`` to every connected host, close everything and end the thread."""
        if self._stopped:
            return
        if self._thread is not None and self._thread.is_alive():
            self._call(self._request_stop)
            if self._thread is not threading.current_thread():
                self._thread.join(10.0)
        else:
            self._close_all()
        self._stopped = True

    def __enter__(self) -> CoordinatorServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

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
                wait = self.tick
                if self.quiescence:
                    wait = min(wait, max(0.0, self._next_probe - self.clock()), 0.01)
                for key, _ in self._selector.select(wait):
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "wake":
                        self._run_commands()
                    elif isinstance(key.data, _Conn) and not key.data.closed:
                        self._read(key.data)
                    if self._stopping:
                        break
                else:
                    self._maybe_trigger()
                    self._maybe_probe()
        except BaseException as e:  # surfaced by wait_finished
            with self._cond:
                self._failure = e
                self._cond.notify_all()
        finally:
            self._run_commands()
            self._close_all()

    def _request_stop(self) -> None:
        for conn in list(self._live.values()):
            self._send(conn, Stop("the coordinator is stopping"))
        self._stopping = True

    def _close_all(self) -> None:
        if self._closed_all:
            return
        self._closed_all = True
        for conn in list(self._conns):
            self._close(conn)
        for s in (self._listener, self._wake_r, self._wake_w):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(s)
            s.close()
        self._selector.close()

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        sock.setblocking(True)
        try:
            hello = server_handshake(sock, self.secret, timeout=self.handshake_timeout)
        except AuthenticationError:
            sock.close()
            return
        if hello != HELLO:
            sock.close()
            return
        sock.settimeout(self.send_timeout)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(sock)
        self._conns.add(conn)
        self._selector.register(sock, selectors.EVENT_READ, conn)

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
            for message in conn.reader.feed(data):
                self._dispatch(conn, message)
                if conn.closed:
                    return
        except FrameError:
            self._drop(conn)

    def _dispatch(self, conn: _Conn, message: Any) -> None:
        if conn.register is None:
            if isinstance(message, Register):
                self._on_register(conn, message)
            else:
                self._drop(conn)
        elif isinstance(message, Ack):
            self._on_ack(conn, message)
        elif isinstance(message, Finished):
            self._on_finished(conn, message)
        elif isinstance(message, Report):
            self._on_report(conn, message)
        elif isinstance(message, Failed):
            if message.host_id == conn.register.host_id and message.attempt == self._attempt:
                conn.failure = message.error[:500]
                self.failures.setdefault(message.attempt, conn.failure)
            self._drop(conn)
        else:
            self._drop(conn)

    # -- registration -------------------------------------------------------------------------
    def _refuse(self, conn: _Conn, reason: str) -> None:
        self.events.append((self.clock(), "refused", {"reason": reason}))
        self._send(conn, Refused(reason))
        self._close(conn)

    def _registration_problem(self, reg: Register) -> str | None:
        job = self.coordinator.job
        if reg.attempt != self._attempt:
            return (
                f"host {reg.host_id} registered for attempt {reg.attempt} of job {job!r}, but "
                f"the current attempt is {self._attempt}"
            )
        if reg.host_id in self._registered:
            return f"host {reg.host_id} of attempt {reg.attempt} has already registered"
        if len(self._registered) >= self.hosts:
            return f"all {self.hosts} hosts of attempt {reg.attempt} have already registered"
        unknown = [str(t) for t in reg.tasks if t not in self.coordinator.tasks]
        taken = [str(t) for t in reg.tasks if t in self._task_host]
        if unknown or taken:
            return (
                f"host {reg.host_id} registered tasks that are not tasks of job {job!r} "
                f"({unknown}) or belong to another host ({taken})"
            )
        return None

    def _on_register(self, conn: _Conn, reg: Register) -> None:
        problem = self._registration_problem(reg)
        if problem is not None:
            self._refuse(conn, problem)
            return
        conn.register = reg
        with self._cond:
            self._registered[reg.host_id] = reg
            self._live[reg.host_id] = conn
            for t in reg.tasks:
                self._task_host[t] = reg.host_id
        if len(self._registered) == self.hosts:
            self._send_address_book()

    def _send_address_book(self) -> None:
        missing = [str(t) for t in self.coordinator.tasks if t not in self._task_host]
        if missing:
            reason = f"no host of attempt {self._attempt} registered tasks {missing}"
            with self._cond:
                self._failure = ControlError(reason)
                self._cond.notify_all()
            for conn in list(self._live.values()):
                self._refuse(conn, reason)
            return
        book = AddressBook(
            attempt=self._attempt,
            hosts={h: r.data_address for h, r in sorted(self._registered.items())},
            task_host=dict(self._task_host),
            restore_checkpoint=self._restore,
        )
        self._book_sent = True
        # The first periodic trigger comes one interval after the attempt starts.
        self.coordinator.last_trigger = self.clock()
        for conn in list(self._live.values()):
            self._send(conn, book)
        self.events.append(
            (self.clock(), "running", {"attempt": self._attempt, "restore": self._restore})
        )

    # -- checkpoints --------------------------------------------------------------------------
    def _running(self) -> bool:
        return (
            self._book_sent
            and not self._finished
            and not self._lost
            and not self._terminated
            and len(self._live) == self.hosts
        )

    def _maybe_trigger(self) -> None:
        now = self.clock()
        if self.coordinator.timeout is not None and self._running():
            for late in self.coordinator.expire(now):  # Flink's checkpoint timeout
                self._abort(late, "timed out", now)
        if not self._running() or not self.coordinator.is_due(now):
            return
        n = self.coordinator.trigger(now)
        self._triggered_at[n] = now
        self._acks[n] = {}
        self.events.append((now, "triggered", {"checkpoint_id": n, "attempt": self._attempt}))
        by_host: dict[int, list[TaskId]] = {}
        for t in self.initiators:
            by_host.setdefault(self._task_host[t], []).append(t)
        for h, tasks in sorted(by_host.items()):
            conn = self._live.get(h)
            if conn is not None:
                self._send(conn, Trigger(n, tuple(tasks)))

    def _on_ack(self, conn: _Conn, ack: Ack) -> None:
        assert conn.register is not None
        if ack.task not in conn.register.tasks:
            self._drop(conn)  # a host acknowledges only for its own tasks
            return
        n = ack.checkpoint_id
        if n not in self.coordinator.pending:
            return  # aborted or subsumed meanwhile
        now = self.clock()
        self._acks.setdefault(n, {})[ack.task] = ack
        self.events.append(
            (
                now,
                "acknowledged",
                {
                    "checkpoint_id": n,
                    "task": ack.task,
                    "alignment_s": ack.alignment_s,
                    "state_bytes": ack.state_bytes,
                    "metrics": dict(ack.metrics),
                },
            )
        )
        aborted_before = len(self.coordinator.aborted)
        done = self.coordinator.acknowledge(TaskSnapshot(ack.task, n, state=None, offset=0), now)
        for old in self.coordinator.aborted[aborted_before:]:
            self._abort(old, "subsumed", now)
        if done is None:
            return
        acks = self._acks.pop(n)
        acks = {t: acks[t] for t in self.coordinator.tasks}
        started = self._triggered_at.pop(n, now)
        if self.on_complete is not None:
            try:
                self.on_complete(n, acks)
            except Exception as e:
                # Not durable: the checkpoint must not count as completed.
                with contextlib.suppress(ValueError):
                    self.coordinator.completed.remove(done)
                self.coordinator.aborted.append(n)
                self._abort(n, f"on_complete failed: {e!r}", now)
                return
        self.events.append((now, "completed", {"checkpoint_id": n, "duration": now - started}))
        for c in list(self._live.values()):
            self._send(c, Notify(n))

    def _abort(self, n: CheckpointId, reason: str, now: float) -> None:
        self._acks.pop(n, None)
        self._triggered_at.pop(n, None)
        self.events.append((now, "aborted", {"checkpoint_id": n, "reason": reason}))
        for c in list(self._live.values()):
            self._send(c, Aborted(n))

    def _on_finished(self, conn: _Conn, msg: Finished) -> None:
        assert conn.register is not None
        if msg.host_id != conn.register.host_id or msg.attempt != self._attempt:
            self._drop(conn)
            return
        with self._cond:
            self._finished[msg.host_id] = dict(msg.metrics)
            self._cond.notify_all()

    # -- termination detection (quiescence) -----------------------------------------------
    def _maybe_probe(self) -> None:
        if not self.quiescence or self._round_open or not self._running():
            return
        if self.clock() < self._next_probe:
            return
        self._round += 1
        self._round_open = True
        self._reports = {}
        for conn in list(self._live.values()):
            self._send(conn, Probe(self._round))

    def _on_report(self, conn: _Conn, report: Report) -> None:
        assert conn.register is not None
        if report.host_id != conn.register.host_id or report.attempt != self._attempt:
            self._drop(conn)
            return
        if not self._round_open or report.round != self._round:
            return  # a late answer to an old round
        self._reports[report.host_id] = report
        if len(self._reports) < self.hosts:
            return
        self._round_open = False
        self._next_probe = self.clock() + self.probe_interval
        reports = self._reports.values()
        sent: dict[ChannelId, int] = {}
        received: dict[ChannelId, int] = {}
        for r in reports:
            sent.update(r.sent)
            received.update(r.received)
        quiet = all(r.idle for r in reports) and all(
            sent.get(c, 0) == received.get(c, 0) for c in {*sent, *received}
        )
        wave = (sorted(sent.items()), sorted(received.items())) if quiet else None
        if wave is None or wave != self._previous_wave:
            self._previous_wave = wave
            return
        self._terminated = True
        self.events.append(
            (self.clock(), "terminated", {"round": self._round, "attempt": self._attempt})
        )
        for c in list(self._live.values()):
            self._send(c, Terminate())

    # -- attempts -----------------------------------------------------------------------------
    def _new_attempt(self, attempt: int, restore: CheckpointId) -> None:
        now = self.clock()
        ids = self.coordinator.abort_all()
        for n in ids:
            self.events.append((now, "aborted", {"checkpoint_id": n, "reason": "new attempt"}))
        for conn in list(self._conns):
            if conn.register is not None:
                for n in ids:
                    self._send(conn, Aborted(n))
                self._send(conn, Stop(f"attempt {self._attempt} is over"))
            self._close(conn)
        with self._cond:
            self._attempt = attempt
            self._restore = restore
            self._registered.clear()
            self._live.clear()
            self._task_host.clear()
            self._book_sent = False
            self._finished.clear()
            self._lost.clear()
            self._acks.clear()
            self._triggered_at.clear()
            self._round_open = False
            self._reports = {}
            self._previous_wave = None
            self._terminated = False
            self._cond.notify_all()

    # -- connections --------------------------------------------------------------------------
    def _send(self, conn: _Conn, message: Any) -> None:
        if conn.closed:
            return
        try:
            conn.sock.sendall(_frame(message))
        except OSError:
            self._drop(conn)

    def _drop(self, conn: _Conn) -> None:
        """Close ``conn``; a host of the current attempt that had not finished is lost."""
        reg = conn.register
        self._close(conn)
        if reg is None or self._live.get(reg.host_id) is not conn:
            return
        del self._live[reg.host_id]
        if reg.host_id not in self._finished:
            self.events.append(
                (self.clock(), "disconnected", {"host_id": reg.host_id, "attempt": reg.attempt})
            )
            with self._cond:
                self._lost.add(reg.host_id)
                self._cond.notify_all()
            # The attempt cannot finish without it: its peers stop now instead of waiting
            # for data that will never come (the runtime starts the next attempt).
            reason = f"host {reg.host_id} of attempt {reg.attempt} " + (
                f"failed: {conn.failure}" if conn.failure else "was lost"
            )
            for other in list(self._live.values()):
                if other.register is not None and other.register.host_id not in self._finished:
                    self._send(other, Stop(reason))

    def _close(self, conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._conns.discard(conn)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        conn.sock.close()


# -- the client -------------------------------------------------------------------------------
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
        self._reader = _FrameReader()
        self._inbox: list[Any] = []
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
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            client_handshake(sock, self.secret, HELLO)
            sock.sendall(
                _frame(Register(self.host_id, self.attempt, self.tasks, self.data_address))
            )
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
        try:
            self._inbox.extend(self._reader.feed(data))
        except FrameError as e:
            self._eof = True
            raise ControlError(f"{self._who()}: {e}") from e
        return True

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
        out, self._inbox = self._inbox, []
        if not out and self._eof:
            raise ControlError(f"{self._who()}: the coordinator closed the control connection")
        return out

    def _send(self, message: Any) -> None:
        if self._sock is None:
            raise ControlError(f"{self._who()}: register() first")
        try:
            self._sock.sendall(_frame(message))
        except OSError as e:
            raise ControlError(
                f"{self._who()}: could not send {type(message).__name__}: {e}"
            ) from e

    def ack(self, ack: Ack) -> None:
        """Acknowledge one task's part of a checkpoint (already written to storage)."""
        self._send(ack)

    def failed(self, error: BaseException) -> None:
        """Tell the server why this host fails (best effort: it may be gone already)."""
        if self._sock is None:
            return
        with contextlib.suppress(ControlError):
            self._send(Failed(self.host_id, self.attempt, f"{type(error).__name__}: {error}"))

    def report(self, report: Report) -> None:
        """Answer a :class:`Probe` (termination detection)."""
        self._send(report)

    def finished(self, metrics: dict[str, Any]) -> None:
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
