"""The cyclic collector is paused while the simulator runs and explores, and nothing the
simulator makes needs it (absnb.sim.collector)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from absnb import RandomScheduler, Stepper, World, word_count
from absnb.sim.collector import paused_collector
from absnb.sim.explore import explore


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_paused_then_restored_even_on_error() -> None:
    with paused_collector():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError, match="boom"), paused_collector():
        raise ValueError("boom")
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_survivors_leave_the_young_generation_without_a_pass() -> None:
    """After a run with history, its worlds are in the oldest generation: the next young
    collection does not pass over them, and nothing stays frozen."""
    job = word_count([["to be or not to be"] * 20, ["that is the question"] * 20])
    stepper = Stepper(World(job, "abs"), RandomScheduler(seed=2), history=True)
    stepper.run()
    young = gc.get_count()[0]
    assert young < 700
    assert gc.get_freeze_count() == 0
    assert any(w is stepper.history[-1][0] for w in gc.get_objects(generation=2))


@pytest.mark.usefixtures("collector_on")
def test_a_callers_frozen_objects_stay_frozen_and_cycles_are_collected() -> None:
    kept = [object()]  # a container the collector tracks, frozen by the caller below
    gc.collect()
    gc.freeze()
    try:
        with paused_collector():
            cycle: list[object] = []
            cycle.append(cycle)
            del cycle
        # still in the permanent generation, which gc.get_objects() leaves out (the freeze
        # count itself may fall meanwhile: another thread may free frozen objects)
        assert not any(o is kept for o in gc.get_objects())
    finally:
        gc.unfreeze()
    assert gc.collect() >= 1  # the cycle made in the block


@pytest.mark.usefixtures("collector_on")
def test_a_caller_who_disabled_it_keeps_it_disabled() -> None:
    gc.disable()
    with paused_collector():
        pass
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector_on")
@pytest.mark.parametrize("protocol", ["abs", "chandy-lamport", "unaligned", "abs-cyclic"])
def test_runs_and_explorations_make_no_reference_cycles(protocol: str) -> None:
    """Pausing the collector is safe only while the simulator's garbage is freed by
    reference counting: a cycle in a world, a task or an event would pile up here."""
    job = word_count([["to be", "or not"], ["to be"]])
    gc.collect()
    gc.disable()
    try:
        stepper = Stepper(World(job, protocol, checkpoint_interval=3), RandomScheduler(seed=4))
        stepper.run()
        while stepper.back() is not None:
            pass
        small = word_count([["to be", "or"], ["be"]])
        explore(World(small, protocol, max_checkpoints=1), max_states=3_000)
        del stepper
        gc.set_debug(gc.DEBUG_SAVEALL)  # keep what a collection finds, to look at it
        gc.collect()
        # another thread of the test process may leave cycles of its own: only absnb's count
        made = [o for o in gc.garbage if type(o).__module__.startswith("absnb")]
        assert made == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    Stepper(World(job, protocol), RandomScheduler(seed=1)).run()
    assert gc.isenabled()
