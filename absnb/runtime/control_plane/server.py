"""The control plane: the checkpoint coordinator as a server on the driver.

Every host process (one per Spark task, hosting one or more tasks of the execution graph) opens one
control connection to the driver's :class:`CoordinatorServer`; both prove they know the per-job
secret (:mod:`absnb.runtime.connections.handshake`, mutual) before either reads anything else from
the other.
The host then registers; once every host of the current attempt has registered, each receives the
:class:`~absnb.runtime.control_plane.messages.AddressBook` (where every task's data plane listens,
and which checkpoint to restore). From then on the server triggers periodic checkpoints at the hosts
of the initiator tasks, collects the tasks' acknowledgements, and when a checkpoint is complete
calls ``on_complete`` (the runtime writes the storage manifest) and only then sends
notify-checkpoint-complete to every host.

A host whose tasks have all finished waits for the job's final checkpoint before it ends
(:mod:`absnb.runtime.control_plane.final_checkpoint`, FLIP-147); a job whose end cannot travel
as end-of-input (a cycle, or processes sending to each other, like the bank) terminates by
quiescence detection (:mod:`absnb.runtime.control_plane.quiescence`).

The control plane's modules, one job each: the messages and their framing
(:mod:`absnb.runtime.control_plane.messages`), the server's loop
(:mod:`absnb.runtime.control_plane.server_loop`),
the checkpoint bookkeeping (:mod:`absnb.runtime.control_plane.pending`), the host's client
(:mod:`absnb.runtime.control_plane.client`), why an attempt failed
(:mod:`absnb.runtime.control_plane.attempt_causes`), here the hosts' registration, attempts and end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from absnb.core.ids import CheckpointId, TaskId
from absnb.protocols.coordinator import CheckpointCoordinator
from absnb.runtime.connections.handshake import HANDSHAKE_SECONDS
from absnb.runtime.control_plane.attempt_causes import REPORT_CHARS, AttemptCauses
from absnb.runtime.control_plane.final_checkpoint import FinalCheckpoint
from absnb.runtime.control_plane.messages import (
    HELLO,
    Aborted,
    Ack,
    ControlError,
    Ended,
    Failed,
    Finished,
    Register,
    Report,
    Stop,
)
from absnb.runtime.control_plane.pending import Event, PendingCheckpoints
from absnb.runtime.control_plane.quiescence import Quiescence
from absnb.runtime.control_plane.registration import Registration
from absnb.runtime.control_plane.server_loop import SelectorServer, _Conn
from absnb.runtime.control_plane.termination import TerminationDetector
from absnb.runtime.events.log import EventBatch
from absnb.runtime.storage.fs import StorageError


class CoordinatorServer(Registration, Quiescence, FinalCheckpoint, SelectorServer):
    """The checkpoint coordinator on the driver, serving the hosts' control connections.

    One background thread (``start``) accepts connections, authenticates them, serves
    registrations, acknowledgements and finish reports, and triggers periodic checkpoints
    while the current attempt runs (every host registered, none finished or lost), then
    the final one.
    Every other method may be called from any thread.

    Args:
        coordinator: the sans-IO coordinator; this server is the only one to drive it.
        secret: the per-job secret every host must prove it knows.
        hosts: how many hosts each attempt has.
        initiators: the tasks a trigger is injected into (the sources).
        on_complete: makes a checkpoint durable before it completes
            (:class:`~absnb.runtime.control_plane.pending.PendingCheckpoints`).
        on_failed: discards what was written of a checkpoint aborted because storage refused
            a write (:class:`~absnb.runtime.control_plane.pending.PendingCheckpoints`); when
            more checkpoints failed so in a row than the coordinator tolerates, the server
            stops the run (:attr:`stopped`).
        bind_host, ports: where to listen (by default the interface of
            ``advertise_host``: loopback for a local job), on the first free port of
            ``ports`` (by default any free port).
        advertise_host: the address hosts connect to (the runtime passes spark.driver.host).
        clock: the time for the coordinator and the events (seconds).
        attempt, restore_checkpoint: the first attempt, before any :meth:`new_attempt`.
        tick: the longest the thread sleeps between two checks for a due trigger.
        handshake_timeout: how long a new connection may take to authenticate; one that
            takes longer is dropped (the thread never waits for it: a silent peer delays
            nobody).
        send_timeout: a host that does not read for this long is disconnected.
        quiescence: detect the job's termination by probing the hosts (see the module
            docstring), for jobs whose end cannot travel as end-of-input.
        probe_interval: the pause between two termination-detection rounds.

    Attributes:
        events: ``(time, kind, details)`` tuples for metrics, with kind ``triggered``,
            ``running`` (every host of an attempt registered), ``acknowledged``,
            ``completed``, ``aborted``, ``refused``, ``disconnected``, ``terminated`` or
            ``finishing`` (the final checkpoint's ``triggered`` says ``final``).
    """

    def __init__(
        self,
        coordinator: CheckpointCoordinator,
        secret: bytes,
        *,
        hosts: int,
        initiators: Sequence[TaskId],
        on_complete: Callable[[CheckpointId, dict[TaskId, Ack]], None] | None = None,
        on_failed: Callable[[CheckpointId], None] | None = None,
        bind_host: str | None = None,
        advertise_host: str = "127.0.0.1",
        ports: range | None = None,
        clock: Callable[[], float] = time.monotonic,
        attempt: int = 0,
        restore_checkpoint: CheckpointId = 0,
        tick: float = 0.05,
        handshake_timeout: float = HANDSHAKE_SECONDS,
        send_timeout: float = 30.0,
        quiescence: bool = False,
        probe_interval: float = 0.02,
    ) -> None:
        if hosts < 1:
            raise ValueError(f"a job needs at least one host, not hosts={hosts}")
        self.events: list[Event] = []
        self._pending = PendingCheckpoints(
            coordinator,
            initiators,
            on_complete,
            clock,
            self.events,
            self._broadcast,
            self._send_to,
            on_failed=on_failed,
            stop=self._stop_run,
        )
        super().__init__(
            secret,
            hello=HELLO,
            bind_host=bind_host,
            advertise_host=advertise_host,
            ports=ports,
            clock=clock,
            tick=tick,
            handshake_timeout=handshake_timeout,
            send_timeout=send_timeout,
        )
        self.coordinator = coordinator
        self.hosts = hosts
        self.quiescence = quiescence
        self.probe_interval = probe_interval
        self.host_events: list[tuple[float, EventBatch]] = []
        self.causes = AttemptCauses()
        """Why each attempt failed, from the hosts' ``Failed`` reports."""
        self._attempt = attempt
        self._restore = restore_checkpoint
        self._registered: dict[int, Register] = {}
        self._live: dict[int, _Conn] = {}
        self._task_host: dict[TaskId, int] = {}
        self._book_sent = False
        self._fenced = False  # the attempt failed: no acknowledgement or trigger counts
        self._finished: dict[int, dict[str, object]] = {}
        self._lost: set[int] = set()
        self._termination = TerminationDetector(hosts, probe_interval)
        self._reset_final()

    # -- public API ----------------------------------------------------------------------------

    @property
    def attempt(self) -> int:
        """The current attempt."""
        return self._attempt

    @property
    def stopped(self) -> StorageError | None:
        """The error the run stopped with: more checkpoints failed in a row than the
        coordinator tolerates (None while it runs)."""
        return self._pending.stopped

    @property
    def terminated(self) -> bool:
        """True once quiescence detection declared the current attempt's job finished."""
        return self._termination.terminated

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

    def fence(self) -> None:
        """End the failed attempt's checkpointing before the driver reads storage for the
        checkpoint to restore: abort every pending checkpoint, and take no acknowledgement
        and trigger none until :meth:`new_attempt`. Otherwise a failed attempt's last
        acknowledgements could still complete a checkpoint (write its manifest) after that
        read, and the hosts, told to restore the one before, would find a newer one."""
        self._call(self._fence)

    def wait_finished(self, timeout: float | None = None) -> dict[int, dict[str, object]]:
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

    @property
    def failures(self) -> dict[int, str]:
        """Each attempt's cause as text (the ``failures`` of
        :class:`~absnb.runtime.control_plane.attempt_causes.AttemptCauses`)."""
        return self.causes.failures

    def failure(self, attempt: int, timeout: float = 0.0) -> tuple[BaseException, bool] | None:
        """The exception that caused ``attempt``'s failure and whether it came while setting
        up, waiting up to ``timeout`` s for a cause (a report not following from a peer's)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self.causes.settled(attempt):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._silent(attempt):
                    break
                self._cond.wait(remaining)
            return self.causes.cause(attempt)

    def _silent(self, attempt: int) -> bool:
        """No host of ``attempt`` can report anything more: every one of them registered,
        and every connection has closed (a host killed by SIGKILL never reports its cause;
        waiting for it would only delay the restart)."""
        return attempt == self._attempt and len(self._registered) == self.hosts and not self._live

    # -- messages ------------------------------------------------------------------------------
    def _request_stop(self) -> None:
        self._broadcast(Stop("the coordinator is stopping"))
        super()._request_stop()

    def _dispatch(self, conn: _Conn, message: object) -> None:
        if conn.register is None:
            if isinstance(message, Register):
                self._on_register(conn, message)
            elif isinstance(message, Failed) and message.attempt == self._attempt:
                self._on_failed(message)  # a host that failed before it could register
                self._close(conn)
            else:
                self._drop(conn)
        elif isinstance(message, Ack):
            self._on_ack(conn, message)
        elif isinstance(message, Ended | Finished):
            self._on_end(conn, message)
        elif isinstance(message, Report):
            self._on_report(conn, message)
        elif isinstance(message, EventBatch):  # the host's event log, on the driver's clock
            self.host_events.append((self.clock(), message))
        elif isinstance(message, Failed):
            if message.host_id == conn.register.host_id and message.attempt == self._attempt:
                conn.failure = message.error[:REPORT_CHARS]
                self._on_failed(message)
            self._drop(conn)
        else:
            self._drop(conn)

    def _on_failed(self, message: Failed) -> None:
        with self._cond:
            self.causes.report(message)
            self._cond.notify_all()

    # -- checkpoints --------------------------------------------------------------------------

    def _running(self) -> bool:
        return (
            self._book_sent
            and not self._fenced
            and not self._finished
            and not self._lost
            and not self._termination.terminated
            and len(self._live) == self.hosts
        )

    def _maybe_trigger(self) -> None:
        now = self.clock()
        if self.coordinator.timeout is not None and self._running():
            self._pending.expire(now)
        if self._running() and not self._all_ended() and self.coordinator.is_due(now):
            joining = sorted(self._ended)  # hosts whose tasks have all finished join it
            self._pending.trigger(now, self._task_host, self._attempt, joining=joining)

    def _on_ack(self, conn: _Conn, ack: Ack) -> None:
        assert conn.register is not None
        if self._fenced:
            return  # the attempt failed: its checkpoints were aborted
        if ack.task not in conn.register.tasks:
            self._drop(conn)  # a host acknowledges only for its own tasks
            return
        self._pending.acknowledge(ack)

    def _idle(self) -> None:
        self._maybe_trigger()
        self._maybe_probe()
        self._maybe_finish()

    # -- attempts -----------------------------------------------------------------------------

    def _stop_run(self, error: StorageError) -> None:
        """Too many checkpoints failed: abort the pending ones, take no acknowledgement and
        trigger none, and tell every host to end (a final Stop: the driver raises
        ``error``, no Spark task fails)."""
        self._fenced = True
        self._pending.abort_all("the run is stopped")
        self._broadcast(Stop(str(error), final=True))
        with self._cond:
            self._cond.notify_all()

    def _fence(self) -> None:
        self._fenced = True
        self._pending.abort_all("new attempt")

    def _new_attempt(self, attempt: int, restore: CheckpointId) -> None:
        self._fenced = False
        ids = self._pending.abort_all("new attempt", tell_hosts=False)
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
            self._pending.clear()
            self._termination.reset()
            self._reset_final()
            self._cond.notify_all()

    # -- connections --------------------------------------------------------------------------
    def _broadcast(self, message: object) -> None:
        for conn in list(self._live.values()):
            self._send(conn, message)

    def _send_to(self, host_id: int, message: object) -> None:
        conn = self._live.get(host_id)
        if conn is not None:
            self._send(conn, message)

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
