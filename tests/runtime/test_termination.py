"""Mattern's four-counter termination detection, without sockets: the job terminates
only after two consecutive rounds in which every host is idle, every channel has received
what was sent, and the counts are the same."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.core.ids import ChannelId, TaskId
from absnb.runtime.control_plane.termination import TerminationDetector

A, B = TaskId("a"), TaskId("b")
AB, BA = ChannelId(A, B), ChannelId(B, A)


@dataclass
class Counts:
    host_id: int
    round: int
    idle: bool
    sent: dict[ChannelId, int]
    received: dict[ChannelId, int]


def run_round(d: TerminationDetector, now: float, hosts: list[tuple[bool, int, int]]) -> bool:
    """One round: host 0 sends ``AB`` and receives ``BA``, host 1 the other way round;
    each entry is (idle, sent on its channel, received on the other's)."""
    n = d.probe(now)
    assert n is not None
    (idle0, s0, r0), (idle1, s1, r1) = hosts
    first = d.report(Counts(0, n, idle0, {AB: s0}, {BA: r0}), now)
    assert not first  # a round completes with its last report only
    return d.report(Counts(1, n, idle1, {BA: s1}, {AB: r1}), now)


def test_two_equal_quiet_rounds_terminate() -> None:
    d = TerminationDetector(2, interval=1.0)
    quiet = [(True, 5, 3), (True, 3, 5)]
    assert not run_round(d, 0.0, quiet)
    assert d.probe(0.5) is None  # the interval has not passed
    assert run_round(d, 1.0, quiet)
    assert d.terminated
    assert d.probe(5.0) is None


@pytest.mark.parametrize(
    "second",
    [
        [(False, 5, 3), (True, 3, 5)],  # a host is busy
        [(True, 6, 3), (True, 3, 5)],  # a record is in transit
        [(True, 6, 3), (True, 3, 6)],  # quiet, but counts moved since the first round
    ],
)
def test_a_busy_host_a_record_in_transit_or_moved_counts_do_not(second) -> None:
    d = TerminationDetector(2, interval=0.0)
    assert not run_round(d, 0.0, [(True, 5, 3), (True, 3, 5)])
    assert not run_round(d, 1.0, second)
    assert not d.terminated


def test_an_answer_to_an_old_round_is_ignored_and_reset_starts_over() -> None:
    d = TerminationDetector(2, interval=0.0)
    n = d.probe(0.0)
    assert not d.report(Counts(0, n - 1, True, {}, {}), 0.0)
    assert d.open
    d.reset()
    assert not d.open
    assert d.probe(0.0) == n + 1


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(0, 3)), max_size=12))
def test_termination_needs_two_identical_quiet_rounds_in_a_row(rounds) -> None:
    """Each round: (both idle, records host 0 sent, records host 1 received of them)."""
    d = TerminationDetector(2, interval=0.0)
    previous = None
    for i, (idle, sent, received) in enumerate(rounds):
        hosts = [(idle, sent, 0), (idle, 0, received)]
        quiet = idle and sent == received
        done = run_round(d, float(i), hosts)
        assert done == (quiet and previous == (sent, received))
        if done:
            return
        previous = (sent, received) if quiet else None
