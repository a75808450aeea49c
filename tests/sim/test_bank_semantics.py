"""Bank semantics: no overdraft, positive amounts, each account once (issue 12, item 4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import absnb
from absnb.core.errors import GraphError, InvalidTypeError, TransferRefusedError
from absnb.sim.actions import Emit
from absnb.sim.schedulers import RandomScheduler, RoundRobinScheduler
from absnb.sim.stepper import Stepper


@pytest.mark.parametrize(
    ("amount", "words"),
    [
        (5_001, ["account B", "balance of 5,000", "5,001"]),
        (0, ["account B", "0", "positive whole number"]),
        (-100, ["account B", "-100", "positive whole number"]),
        (2.5, ["account B", "2.5", "positive whole number"]),
    ],
)
def test_a_refused_transfer_names_account_balance_and_amount(amount, words) -> None:
    world = absnb.World(absnb.bank_transfer(), "chandy-lamport")
    g = world.graph
    with pytest.raises(TransferRefusedError) as err:
        world.apply(absnb.Transfer(g.task("B"), g.task("A"), amount))
    for word in words:
        assert word in str(err.value)
    assert world.state_of("B") == 5_000  # nothing happened
    world.apply(absnb.Transfer(g.task("B"), g.task("A"), 5_000))  # the whole balance is fine
    assert world.state_of("B") == 0


def test_given_transfers_are_checked_in_order() -> None:
    with pytest.raises(TransferRefusedError, match="transfer 1: account B has a balance of 5,100"):
        absnb.bank_transfer(transfers=[("A", "B", 100), ("B", "A", 5_200)])
    job = absnb.bank_transfer(transfers=[("A", "B", 300), ("B", "A", 5_300)])
    assert job.inputs[job.graph.task("B")] == (("A", 5_300),)


def test_duplicate_account_names_are_refused() -> None:
    with pytest.raises(GraphError, match="'A' is given twice"):
        absnb.bank_transfer([("A", 100), ("B", 200), ("A", 300)])
    assert absnb.bank_transfer([("A", 100), ("B", 200)]).total == 300


@pytest.mark.parametrize(
    ("balance", "error"), [(-1, GraphError), (1.5, InvalidTypeError), ("100", InvalidTypeError)]
)
def test_a_bad_initial_balance_is_refused(balance, error) -> None:
    with pytest.raises(error, match=r"balance .*must be a whole number"):
        absnb.bank_transfer({"A": balance, "B": 100})


def test_a_transfer_waits_for_its_money() -> None:
    job = absnb.bank_transfer({"A": 0, "B": 500}, transfers=[("B", "A", 500), ("A", "B", 500)])
    world = absnb.World(job, "chandy-lamport")
    a = world.graph.task("A")
    assert Emit(a) not in world.enabled_actions()
    with pytest.raises(absnb.ActionNotEnabledError, match="waits: account A has a balance of 0"):
        world.apply(Emit(a))
    world.apply(Emit(world.graph.task("B")))
    world.apply(absnb.Deliver(world.graph.channel("B->A")))
    assert Emit(a) in world.enabled_actions()


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 6),
    transfers=st.integers(1, 80),
    seed=st.integers(0, 2**32),
    interval=st.sampled_from([None, 3, 10]),
    round_robin=st.booleans(),
)
def test_schedulers_never_overdraw_and_always_finish(n, transfers, seed, interval, round_robin):
    """Random logs are feasible; the schedulers pick only enabled emits, so no balance goes
    below zero, every transfer is made, and money is conserved."""
    names = [f"P{i}" for i in range(n)]
    job = absnb.bank_transfer(
        {p: 100 * ((seed >> i) % 20) + 100 for i, p in enumerate(names)},
        transfers=transfers,
        seed=seed,
    )
    scheduler = RoundRobinScheduler() if round_robin else RandomScheduler(seed=seed)
    stepper = Stepper(
        absnb.World(job, "chandy-lamport", checkpoint_interval=interval), scheduler, history=False
    )
    world = stepper.world
    while stepper.step() is not None:
        assert all(world.state_of(p) >= 0 for p in names)
    assert world.is_finished()
    assert all(world.state_of(p) >= 0 for p in names)
    assert sum(world.state_of(p) for p in names) == job.total
    for snap in world.snapshots:
        assert all(balance >= 0 for balance in snap.task_states.values())
