"""The one rule set: the enabled actions are exactly the candidates the rules accept.

:func:`~absnb.sim.enabled.enabled_actions` asks the rules' common cases inline (the hot path
of every step); over random runs of every protocol on every job, with crashes, both kinds of
recovery (partial recovery replays), alignments (blocked channels), synchronous halting and
the bank's transfers that wait for money, the list it returns must be, at every step and
in its order, the candidates whose preconditions in the action table
(:func:`~absnb.sim.rules.why_not`) accept.
"""

from __future__ import annotations

from typing import get_args

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import absnb
from absnb.protocols.aligned_timeout import AlignedWithTimeoutProtocol
from absnb.sim.actions import Action
from absnb.sim.enabled import RECOVER, WAIT, enabled_actions
from absnb.sim.rules import RULES, why_not

PROTOCOLS = ("chandy-lamport", "abs-cyclic", "synchronous", "unaligned", "at-least-once", "none")
JOBS = {
    "word count": lambda: absnb.word_count([["to be or", "not to be"], ["be that"]], counters=2),
    "bank": lambda: absnb.bank_transfer({"A": 100, "B": 0, "C": 50}, transfers=8, seed=2),
    "cyclic": lambda: absnb.cyclic([3, 5, 8], parallelism=2, sources=2),
}


def candidates(world: absnb.World) -> list[Action]:
    """Every action enabled_actions may offer, in its documented order."""
    g = world.graph
    if world.failed is not None:
        return list(RECOVER)
    acts: list[Action] = [absnb.Deliver(c) for c in g.channels]
    acts += [absnb.Emit(t) for t in g.tasks if g.kind(t) in ("source", "process")]
    acts += [absnb.Notify(t, n) for t, pending in world.notices.items() for n in pending]
    acts += [absnb.EndInput(c) for c in g.channels]
    acts += [WAIT, absnb.TriggerCheckpoint()]
    return acts + [absnb.Crash(t) for t in g.tasks]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    job=st.sampled_from(sorted(JOBS)),
    protocol=st.sampled_from((*PROTOCOLS, "abs", "timeout")),
    seed=st.integers(0, 2**16),
    interval=st.sampled_from([None, 1, 3, 6]),
    crash_at=st.none() | st.integers(0, 60),
    recovery=st.sampled_from(["full", "partial"]),
)
def test_enabled_actions_are_the_candidates_the_rules_accept(
    job: str, protocol: str, seed: int, interval: int | None, crash_at: int | None, recovery: str
) -> None:
    if protocol == "abs" and job != "word count":
        protocol = "abs-cyclic"  # Algorithm 1 needs an acyclic graph
    proto = AlignedWithTimeoutProtocol(alignment_timeout=2) if protocol == "timeout" else protocol
    world = absnb.World(JOBS[job](), proto, checkpoint_interval=interval)
    scheduler = absnb.RandomScheduler(seed=seed, crash_at=crash_at, recovery=recovery)  # type: ignore[arg-type]
    stepper = absnb.Stepper(world, scheduler, history=False)
    for _ in range(400):
        w = stepper.world
        expected = [a for a in candidates(w) if why_not(w, a) is None]
        assert enabled_actions(w, crashes=True, ends=True) == expected, w.clock
        assert w.enabled_actions() == [a for a in expected if type(a) not in _OPTIONAL]
        if stepper.step() is None:
            break


_OPTIONAL = (absnb.Crash, absnb.EndInput)
"""Offered only when asked for (``crashes``, ``ends``)."""


def test_the_action_table_has_one_rule_for_every_kind_of_action() -> None:
    """A new kind of action gets its precondition and effect in the table, or no step
    could check or perform it."""
    assert set(RULES) == set(get_args(Action))
