"""A bounded job ends with a final checkpoint (FLIP-147), so a two-phase-commit sink commits
its last transaction: the committed output is complete and exactly once in every mode."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import absnb
from absnb.sim.checks import reference_output
from tests.sim.crashes import run_with_crash

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
MODES = ["abs", "unaligned", "abs-timeout", "at-least-once", "abs-cyclic", "chandy-lamport"]


@pytest.mark.parametrize("protocol", MODES)
def test_the_last_transaction_is_committed_by_a_final_checkpoint(protocol):
    job = absnb.word_count(sink="two-phase-commit")
    world = absnb.World(job, protocol, checkpoint_interval=1_000)  # no periodic checkpoint
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=3), history=False)
    stepper.run()
    world = stepper.world
    triggers = [e for e in stepper.trace if isinstance(e.action, absnb.TriggerCheckpoint)]
    assert len(triggers) == 1  # the final one: every source had consumed its input
    assert world.uncommitted() == 0
    assert world.output() == reference_output(job)


@settings(max_examples=120, **SETTINGS)
@given(
    st.sampled_from(MODES[:3]),
    st.integers(0, 10_000),
    st.integers(1, 12),
    st.integers(0, 80) | st.none(),
)
def test_bounded_output_is_complete_and_exactly_once_after_a_crash(protocol, seed, every, crash):
    job = absnb.word_count(sink="two-phase-commit")
    stepper = run_with_crash(
        lambda: absnb.World(
            absnb.word_count(sink="two-phase-commit"), protocol, checkpoint_interval=every
        ),
        lambda at: absnb.RandomScheduler(seed=seed, crash_at=at),
        crash,
    )
    world = stepper.world
    assert world.is_finished()
    assert world.uncommitted() == 0
    assert world.output() == reference_output(job)
