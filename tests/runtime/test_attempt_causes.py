"""Why an attempt failed, decided without sockets
(:mod:`absnb.runtime.control_plane.attempt_causes`)."""

from __future__ import annotations

import pickle

from absnb.runtime.control_plane.attempt_causes import REPORT_CHARS, AttemptCauses
from absnb.runtime.control_plane.messages import Failed, HostFailure

CAUSE = "RuntimeError: injected failure of count[1]"
PEER = "ConnectionError: output channel source[0]->count[1] is closed"


def test_the_first_report_is_the_cause_and_a_later_one_does_not_replace_it() -> None:
    causes = AttemptCauses()
    causes.report(Failed(2, 0, CAUSE, pickle.dumps(ValueError("bad")), setup=True))
    causes.report(Failed(0, 0, "RuntimeError: a later error"))
    assert causes.failures == {0: CAUSE}
    error, setup = causes.cause(0) or (None, False)
    assert isinstance(error, ValueError)
    assert setup
    assert causes.settled(0)
    assert not causes.settled(1)
    assert causes.cause(1) is None


def test_a_report_that_follows_from_a_peer_gives_way_to_the_cause() -> None:
    causes = AttemptCauses()
    causes.report(Failed(0, 0, PEER))
    assert not causes.settled(0)  # known, but only a consequence: wait for the cause
    causes.report(Failed(2, 0, CAUSE))
    causes.report(Failed(1, 0, PEER))
    assert causes.failures == {0: CAUSE}
    assert causes.settled(0)
    error, _ = causes.cause(0) or (None, False)
    assert isinstance(error, HostFailure)
    assert CAUSE in str(error)


def test_an_exception_the_driver_cannot_unpickle_becomes_a_host_failure() -> None:
    causes = AttemptCauses()
    causes.report(Failed(0, 3, "x" * (REPORT_CHARS + 10), exception=b"not a pickle"))
    assert causes.failures == {3: "x" * REPORT_CHARS}
    error, setup = causes.cause(3) or (None, True)
    assert isinstance(error, HostFailure)
    assert not setup
