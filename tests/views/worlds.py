"""Worlds built by scripted actions, for the view tests (and the golden DOT files).

A script is a list of steps written as in the classroom: ``"A sends 1000 to B"``,
``"trigger"``, ``"trigger at A"``, ``"emit source[0]"``, ``"deliver A->B"`` (``x3`` for
three deliveries), ``"crash B"``, ``"recover partial"``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import absnb
from absnb.sim.actions import Action, Crash, Deliver, Emit, Recover, Transfer, TriggerCheckpoint


def actions(world: absnb.World, step: str) -> list[Action]:
    """The actions of one script step."""
    g = world.graph
    words = step.split()
    times = 1
    if words[-1].startswith("x") and words[-1][1:].isdigit():
        times = int(words.pop()[1:])
    match words:
        case [src, "sends", amount, "to", dst]:
            act: Action = Transfer(g.task(src), g.task(dst), int(amount))
        case ["trigger"]:
            act = TriggerCheckpoint()
        case ["trigger", "at", task]:
            act = TriggerCheckpoint(g.task(task))
        case ["emit", task]:
            act = Emit(g.task(task))
        case ["deliver", channel]:
            act = Deliver(g.channel(channel))
        case ["crash", task]:
            act = Crash(g.task(task))
        case ["recover", mode]:
            act = Recover(mode)  # type: ignore[arg-type]
        case _:
            raise ValueError(f"cannot read script step {step!r}")
    return [act] * times


def build(job: absnb.Job, protocol: str, script: Sequence[str]) -> absnb.World:
    """A fresh world of ``job`` under ``protocol`` after the steps of ``script``."""
    world = absnb.World(job, protocol)
    for step in script:
        for act in actions(world, step):
            world.apply(act)
    return world


SEED_001 = [
    # A=10,000 and B=5,000. A sends 1,000 to B; A initiates and records A'=9,000.
    "A sends 1000 to B",
    "trigger at A",
    # B sends 1,000 then 2,000 to A.
    "B sends 1000 to A",
    "B sends 2000 to A",
    # The 1,000 reaches B (B=3,000), then the marker: B records B'=3,000.
    "deliver A->B x2",
]
"""Seed 001 up to the moment the marker has reached B."""

SEED_001_DONE = [*SEED_001, "deliver B->A x3"]
"""Seed 001 to the end: A'=9,000, B'=3,000, A->B=[], B->A=[1,000, 2,000]."""


def bank_marker_at_b() -> absnb.World:
    """Seed 001 after the marker reached B: A records B->A, which holds 1,000 · 2,000 ·
    marker 1."""
    return build(absnb.bank_transfer(), "chandy-lamport", SEED_001)


def word_count_blocked() -> absnb.World:
    """ABS Alg. 1: count[0] has the barrier from source[0] (that channel blocked, two
    words buffered behind it) and waits for the one from source[1]."""
    return build(
        absnb.word_count(),
        "abs",
        [
            "emit source[0]",  # to be or
            "emit source[1]",  # not to be
            "trigger",
            "deliver source[0]->count[0] x3",  # to, be, barrier 1: blocked
            "emit source[0]",  # be quick: both to count[0], buffered
            "deliver count[0]->sink[0]",
        ],
    )


def cyclic_logging() -> absnb.World:
    """ABS Alg. 2: the loop head took its state and logs the back-edge step->head; one
    record is logged, another is in flight behind it."""
    return build(
        absnb.cyclic(),
        "abs-cyclic",
        [
            "emit source",  # 3
            "deliver source->head",
            "deliver head->step",  # (3, 10, 1) on the back-edge
            "emit source",  # 5
            "deliver source->head",
            "deliver head->step",  # (5, 16, 1) on the back-edge
            "trigger",
            "deliver source->head",  # barrier: head copies its state, logs step->head
            "deliver step->head",  # (3, 10, 1) logged
        ],
    )


def word_count_failed() -> absnb.World:
    """count[1] crashed while checkpoint 1 was aligning: FAILED, checkpoint aborted."""
    return build(
        absnb.word_count(),
        "abs",
        [
            "emit source[0]",
            "emit source[1]",
            "trigger",
            "deliver source[0]->count[1] x2",  # or, barrier 1: blocked
            "crash count[1]",
        ],
    )


def word_count_partial_recovery() -> absnb.World:
    """After checkpoint 1 completed, count[1] crashed and recovered partially: it and the
    sources replay what they consumed since the checkpoint."""
    return build(
        absnb.word_count(),
        "abs",
        [
            "trigger",
            "deliver source[0]->count[0]",
            "deliver source[1]->count[0]",
            "deliver source[0]->count[1]",
            "deliver source[1]->count[1]",
            "deliver count[0]->sink[0]",
            "deliver count[1]->sink[1]",  # checkpoint 1 complete
            "emit source[0]",
            "emit source[1]",
            "deliver source[0]->count[1]",
            "crash count[1]",
            "recover partial",
        ],
    )


def synchronous_halted() -> absnb.World:
    """Synchronous: the sources halted at the trigger; count[1] drained one input."""
    return build(
        absnb.word_count(),
        "synchronous",
        ["emit source[0]", "trigger", "deliver source[0]->count[1] x2"],
    )


def bank_long_channel() -> absnb.World:
    """Ten transfers from B in flight on B->A, more than ``max_messages`` shows (B's
    5,000 covers them: no overdraft)."""
    amounts = [50 * (i + 1) for i in range(10)]
    return build(absnb.bank_transfer(), "chandy-lamport", [f"B sends {a} to A" for a in amounts])


SCENARIOS: dict[str, Callable[[], absnb.World]] = {
    "bank_marker_at_b": bank_marker_at_b,
    "word_count_blocked": word_count_blocked,
    "cyclic_logging": cyclic_logging,
    "word_count_failed": word_count_failed,
    "word_count_partial_recovery": word_count_partial_recovery,
    "synchronous_halted": synchronous_halted,
    "bank_long_channel": bank_long_channel,
}
"""Each golden file ``golden/<name>.dot`` is ``to_dot`` of one of these worlds."""
