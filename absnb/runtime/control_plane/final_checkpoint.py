"""The job's final checkpoint (a mix-in of
:class:`~absnb.runtime.control_plane.server.CoordinatorServer`; Flink FLIP-147, as in Flink
1.15: a task waits for its final checkpoint before it exits).

A host whose tasks have all finished does not exit: it says so
(:class:`~absnb.runtime.control_plane.messages.Ended`, with the output its sinks hold
uncommitted) and goes on serving triggers, acknowledgements and notifications. A checkpoint
triggered meanwhile reaches such a host as a trigger naming no task, and its finished tasks
join it by the kernel's rules (:meth:`~absnb.task.StreamTask.join`): no barrier can reach
them any more. Once every host of the attempt has ended, nothing is pending and every host
has carried out the last notification, the server asks the coordinator
(:meth:`~absnb.CheckpointCoordinator.final_checkpoint_due`, as the
simulator does): if the final checkpoint is due it triggers it (again if it is aborted),
and its completion commits the sinks' last transactions (the hosts say so in a new
``Ended``). Then, or at once if none is due, it tells every host to
:class:`~absnb.runtime.control_plane.messages.Finish`, and each answers
:class:`~absnb.runtime.control_plane.messages.Finished` with its measurements. One final
checkpoint per attempt, as in Flink: a sink still holding output uncommitted after it is not
waited for again. A failure meanwhile restarts the job from the last completed checkpoint,
as any other; the final checkpoint is triggered again at the new attempt's end. A job that
terminates by quiescence (:mod:`absnb.runtime.control_plane.quiescence`) takes no part.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from absnb.core.ids import CheckpointId, TaskId
from absnb.protocols.coordinator import CheckpointCoordinator
from absnb.runtime.control_plane.messages import Ended, Finish, Finished, Trigger
from absnb.runtime.control_plane.pending import Event, PendingCheckpoints
from absnb.runtime.control_plane.server_loop import _Conn


class FinalCheckpoint:
    """The hosts' ``Ended`` reports, the final checkpoint, ``Finish`` and ``Finished``."""

    coordinator: CheckpointCoordinator
    hosts: int
    quiescence: bool
    events: list[Event]
    clock: Callable[[], float]
    _attempt: int
    _pending: PendingCheckpoints
    _task_host: dict[TaskId, int]
    _finished: dict[int, dict[str, object]]
    _cond: threading.Condition
    _running: Callable[[], bool]
    _send_to: Callable[[int, object], None]
    _broadcast: Callable[[object], None]
    _drop: Callable[[_Conn], None]

    def _reset_final(self) -> None:
        """Forget the hosts' reports (a new attempt begins)."""
        self._ended: dict[int, Ended] = {}
        self._finishing = False
        self._final: CheckpointId = 0  # the final checkpoint triggered (0: none yet)

    def _all_ended(self) -> bool:
        """Whether every host of the attempt has reported that its tasks ended."""
        return not self.quiescence and len(self._ended) == self.hosts

    def _on_end(self, conn: _Conn, msg: Ended | Finished) -> None:
        """A host's tasks have all ended (``Ended``), or it has finished (``Finished``)."""
        assert conn.register is not None
        if msg.host_id != conn.register.host_id or msg.attempt != self._attempt:
            self._drop(conn)
        elif isinstance(msg, Finished):
            with self._cond:
                self._finished[msg.host_id] = dict(msg.metrics)
                self._cond.notify_all()
        else:
            first = msg.host_id not in self._ended
            self._ended[msg.host_id] = msg
            if first:  # its tasks join the checkpoints pending now: no barrier reaches them
                for n in sorted(self.coordinator.pending):
                    self._send_to(msg.host_id, Trigger(n, ()))
            self._maybe_finish()

    def _maybe_finish(self) -> None:
        """Once every host has ended, nothing is pending and every host has carried out
        the last notification: trigger the final checkpoint if the coordinator says it is
        due, else tell every host to finish."""
        if self._finishing or not self._all_ended() or not self._running():
            return
        if self.coordinator.pending:
            return  # it completes (a notification follows) or is aborted first
        ended = self._ended.values()
        if any(e.notified < self._pending.notified for e in ended):
            return  # a host has yet to carry out the last notification (commit)
        uncommitted = sum(e.uncommitted for e in ended)
        now = self.clock()
        done = 0 < self._final <= self._pending.notified  # one final checkpoint, as in Flink
        if not done and self.coordinator.final_checkpoint_due(True, uncommitted):
            hosts = sorted(self._ended)
            self._final = self._pending.trigger(
                now, self._task_host, self._attempt, joining=hosts, final=True
            )
            return
        self._finishing = True
        self.events.append((now, "finishing", {"attempt": self._attempt}))
        self._broadcast(Finish())
