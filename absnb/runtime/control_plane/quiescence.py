"""Termination by quiescence (a mix-in of
:class:`~absnb.runtime.control_plane.server.CoordinatorServer`).

A job whose end cannot travel as end-of-input (a cycle, or processes sending to each
other, like the bank) terminates by quiescence detection (``quiescence=True``): the server
probes every host in rounds (:class:`~absnb.runtime.control_plane.messages.Probe`,
:class:`~absnb.runtime.control_plane.messages.Report`) and tells every host to finish
(:class:`~absnb.runtime.control_plane.messages.Terminate`) when Mattern's four-counter method,
sans-IO in :mod:`absnb.runtime.control_plane.termination`, sees that nothing runs or is in transit
any more.
"""

from __future__ import annotations

from collections.abc import Callable

from absnb.runtime.control_plane.messages import Probe, Report, Terminate
from absnb.runtime.control_plane.pending import Event
from absnb.runtime.control_plane.server_loop import _Conn
from absnb.runtime.control_plane.termination import TerminationDetector


class Quiescence:
    """Probing rounds while the attempt runs, and ``Terminate`` once nothing runs or is in
    transit."""

    quiescence: bool
    tick: float
    events: list[Event]
    clock: Callable[[], float]
    _attempt: int
    _termination: TerminationDetector
    _running: Callable[[], bool]
    _broadcast: Callable[[object], None]
    _drop: Callable[[_Conn], None]

    def _wait(self) -> float:
        if not self.quiescence:
            return self.tick
        return min(self.tick, max(0.0, self._termination.next_probe - self.clock()), 0.01)

    def _maybe_probe(self) -> None:
        if not self.quiescence or not self._running():
            return
        round = self._termination.probe(self.clock())
        if round is None:
            return
        self._broadcast(Probe(round))

    def _on_report(self, conn: _Conn, report: Report) -> None:
        assert conn.register is not None
        if report.host_id != conn.register.host_id or report.attempt != self._attempt:
            self._drop(conn)
            return
        if not self._termination.report(report, self.clock()):
            return
        self.events.append(
            (
                self.clock(),
                "terminated",
                {"round": self._termination.round, "attempt": self._attempt},
            )
        )
        self._broadcast(Terminate())
