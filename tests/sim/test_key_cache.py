"""A world's key reuses each unchanged task's key (WorldState._tasks_key) and each acknowledged
task snapshot's (absnb.sim.recovery.part_key): it must equal the key computed afresh after
every kind of step, with and without history."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absnb import RandomScheduler, Stepper, World, bank_transfer, word_count


def _fresh(world: World) -> object:
    """``world``'s key computed with no task or part key kept."""
    copy = world.clone()
    copy._task_keys.clear()
    static = copy.static
    kept, static.part_keys = static.part_keys, {}
    try:
        return copy.key()
    finally:
        static.part_keys = kept


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    protocol=st.sampled_from(["abs", "chandy-lamport", "unaligned", "abs-timeout", "synchronous"]),
    crash_at=st.none() | st.integers(1, 40),
    recovery=st.sampled_from(["full", "partial"]),
)
def test_cached_key_equals_fresh_key_at_every_step(
    seed: int, protocol: str, crash_at: int | None, recovery: str
) -> None:
    job = word_count([["to be or", "not to be"], ["to be"]])
    timeout = 2 if protocol == "abs-timeout" else None
    world = World(
        job, "abs" if timeout else protocol, checkpoint_interval=4, alignment_timeout=timeout
    )
    scheduler = RandomScheduler(seed=seed, crash_at=crash_at, recovery=recovery)  # type: ignore[arg-type]
    stepper = Stepper(world, scheduler, history=True)
    while True:
        before = stepper.world.key()  # fills the cache, which the step must then keep true
        if stepper.step() is None:
            break
        assert stepper.world.key() == _fresh(stepper.world)
        stepper.back()
        assert stepper.world.key() == before == _fresh(stepper.world)
        stepper.step()


@pytest.mark.parametrize("seed", [1, 2])
def test_bank_keys_after_transfers(seed: int) -> None:
    stepper = Stepper(
        World(bank_transfer(), "chandy-lamport", checkpoint_interval=5), RandomScheduler(seed=seed)
    )
    for _ in range(60):
        stepper.world.key()
        if stepper.step() is None:
            break
        assert stepper.world.key() == _fresh(stepper.world)
