"""The hosts' registration with the coordinator server (a mix-in of
:class:`~absnb.runtime.control_plane.server.CoordinatorServer`): a registration is checked
(:meth:`Register.problem <absnb.runtime.control_plane.messages.Register.problem>`) and refused with
a reason, or recorded; once every host of the attempt has registered, each receives the
:class:`~absnb.runtime.control_plane.messages.AddressBook` (where every task's data plane listens,
and which checkpoint to restore) and the attempt runs."""

from __future__ import annotations

import threading
from collections.abc import Callable

from absnb.core.ids import CheckpointId, TaskId
from absnb.protocols.coordinator import CheckpointCoordinator
from absnb.runtime.control_plane.messages import AddressBook, ControlError, Refused, Register
from absnb.runtime.control_plane.pending import Event
from absnb.runtime.control_plane.server_loop import _Conn


class Registration:
    """Registration, and the address book that starts an attempt."""

    coordinator: CheckpointCoordinator
    hosts: int
    events: list[Event]
    clock: Callable[[], float]
    _attempt: int
    _restore: CheckpointId
    _registered: dict[int, Register]
    _live: dict[int, _Conn]
    _task_host: dict[TaskId, int]
    _book_sent: bool
    _cond: threading.Condition
    _failure: BaseException | None
    _send: Callable[[_Conn, object], None]
    _close: Callable[[_Conn], None]
    _broadcast: Callable[[object], None]

    def _refuse(self, conn: _Conn, reason: str) -> None:
        self.events.append((self.clock(), "refused", {"reason": reason}))
        self._send(conn, Refused(reason))
        self._close(conn)

    def _on_register(self, conn: _Conn, reg: Register) -> None:
        problem = reg.problem(
            self.coordinator.job,
            self._attempt,
            self.hosts,
            self._registered,
            self.coordinator.tasks,
            self._task_host,
        )
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
        self._broadcast(book)
        self.events.append(
            (self.clock(), "running", {"attempt": self._attempt, "restore": self._restore})
        )
