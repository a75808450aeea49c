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
        assert gc.collect() == 0
    finally:
        gc.enable()
    Stepper(World(job, protocol), RandomScheduler(seed=1)).run()
    assert gc.isenabled()
