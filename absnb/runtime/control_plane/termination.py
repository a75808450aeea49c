"""Termination detection by quiescence, sans-IO: Mattern's four-counter method.

F. Mattern, "Algorithms for distributed termination detection", Distributed Computing
2(3):161-175, 1987, section 4 (the four-counter method). A job whose end cannot travel as
end-of-input (a cycle, or processes sending to each other, like the bank) ends when
nothing is running and nothing is in transit. The coordinator asks every host for its
counts in rounds (a :class:`~absnb.runtime.control_plane.messages.Probe`); each host answers
with its records sent and received per channel and whether its own input is all consumed
(a :class:`~absnb.runtime.control_plane.messages.Report`). When two consecutive rounds see
every host idle, every channel with as many records received as sent, and the same
counts in both, the job has terminated: a host whose input is consumed becomes busy
again only by receiving a record, which would change the counts between the two rounds.

:class:`TerminationDetector` holds the rounds; the coordinator's loop sends the probes it
asks for and feeds it the reports. No socket, no clock of its own: times are arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from absnb.core.ids import ChannelId


class Counts(Protocol):
    """What one host reports (:class:`~absnb.runtime.control_plane.messages.Report`, a frozen
    dataclass: the members are read-only)."""

    @property
    def host_id(self) -> int: ...
    @property
    def round(self) -> int: ...
    @property
    def idle(self) -> bool: ...
    @property
    def sent(self) -> dict[ChannelId, int]: ...
    @property
    def received(self) -> dict[ChannelId, int]: ...


class TerminationDetector:
    """Rounds of Mattern's four-counter method over ``hosts`` hosts.

    Args:
        hosts: how many hosts answer each round.
        interval: the pause between the end of a round and the next probe (seconds).
    """

    def __init__(self, hosts: int, interval: float = 0.02) -> None:
        if hosts < 1:
            raise ValueError(f"termination detection needs at least one host, not {hosts}")
        self.hosts = hosts
        self.interval = interval
        self.round = 0
        self.open = False
        """True while a round waits for reports."""
        self.terminated = False
        self.next_probe = 0.0
        self._reports: dict[int, Counts] = {}
        self._previous: object = None

    def reset(self) -> None:
        """Start over (a new attempt): no round open, nothing seen."""
        self.open = False
        self.terminated = False
        self._reports = {}
        self._previous = None

    def probe(self, now: float) -> int | None:
        """The round to probe every host for now, or None (one is open, or not yet due)."""
        if self.open or self.terminated or now < self.next_probe:
            return None
        self.round += 1
        self.open = True
        self._reports = {}
        return self.round

    def report(self, counts: Counts, now: float) -> bool:
        """A host's answer; True when it completes the round that detects termination.
        Answers to an old round are ignored."""
        if not self.open or counts.round != self.round:
            return False
        self._reports[counts.host_id] = counts
        if len(self._reports) < self.hosts:
            return False
        self.open = False
        self.next_probe = now + self.interval
        wave = quiet_wave(self._reports.values())
        if wave is None or wave != self._previous:
            self._previous = wave
            return False
        self.terminated = True
        return True


def quiet_wave(reports: Iterable[Counts]) -> object:
    """The counts of a round if it is quiet (every host idle, every channel with as many
    records received as sent), else None: two equal quiet waves in a row terminate."""
    reports = list(reports)
    sent: dict[ChannelId, int] = {}
    received: dict[ChannelId, int] = {}
    for r in reports:
        sent.update(r.sent)
        received.update(r.received)
    quiet = all(r.idle for r in reports) and all(
        sent.get(c, 0) == received.get(c, 0) for c in {*sent, *received}
    )
    return (sorted(sent.items()), sorted(received.items())) if quiet else None
