"""Part b of the Chandy-Lamport lab: seeded random runs of banks, snapshots started at
random accounts, several in progress at once, with and without crashes.

Each run is the ABS lab's (:func:`~absnb.labs.runs.run_one`: after every step no decision
raised and every completed snapshot is a consistent cut whose balances and recorded
transfers add up to the bank's total; the money in the world adds up outside recoveries;
at the end no snapshot is pending and the balances are the failure-free ones), with the
lab's protocol and :class:`AnyInitiatorScheduler`, which starts each periodic snapshot at
an account drawn from the seed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from absnb.jobs.bank_transfer import bank_transfer
from absnb.labs.chandy_lamport.handler import MarkerLabProtocol
from absnb.labs.chandy_lamport.search import initiators
from absnb.labs.report import PartResult
from absnb.labs.runs import Run, run_failed, run_one
from absnb.protocols.base import BarrierHandler
from absnb.sim.actions import Action, RecoveryMode, TriggerCheckpoint
from absnb.sim.schedulers import RandomScheduler, mix
from absnb.sim.world import World

SEEDS = 40
"""Seeds per bank and crash setting."""


MAX_PENDING = 3
"""Snapshots in progress at once, at most, in a run."""


class AnyInitiatorScheduler(RandomScheduler):
    """The seeded random scheduler, starting a snapshot every checkpoint interval while
    transfers remain, whether or not others are in progress (up to :data:`MAX_PENDING`),
    each at an account drawn from the seed and the step: any process may initiate, and
    the snapshots' ids tell them apart."""

    def choose(self, world: World, enabled: Sequence[Action]) -> Action | None:
        interval = world.checkpoint_interval
        if (
            interval is not None
            and world.failed is None
            and world.clock != self.crash_at
            and world.clock - world.coordinator.last_trigger > interval
            and len(world.coordinator.pending) < MAX_PENDING
            and world.can_trigger()
            and world.input_remaining()
        ):
            at = initiators(world.graph)
            return TriggerCheckpoint(at=at[mix(self.seed, -2 - world.clock) % len(at)])
        return super().choose(world, enabled)


def runs() -> Iterator[Run]:
    """Part b's runs: seed 001's two accounts and three accounts linked both ways, with
    random transfers, each over :data:`SEEDS` seeds without a crash and as many with one;
    a snapshot every 2 to 4 steps, so that several are in progress at once."""
    banks = {
        "bank A <-> B, 10 transfers": bank_transfer(transfers=10, seed=1),
        "bank A, B, C (every pair linked), 10 transfers": bank_transfer(
            {"A": 1_000, "B": 500, "C": 300}, transfers=10, seed=2
        ),
    }
    for name, job in banks.items():
        for seed in range(SEEDS):
            yield Run(name, job, seed, 2 + seed % 3, None, "full")
        for seed in range(SEEDS):
            recovery: RecoveryMode = "partial" if seed % 2 else "full"
            yield Run(name, job, seed, 2 + seed % 3, 3 + (5 * seed) % 20, recovery)


def random_runs(handler_class: type[BarrierHandler]) -> PartResult:
    """Part b: every run of :func:`runs`, stopping at the first that fails."""
    part = "b. random runs, with and without crashes"
    count = 0
    for run in runs():
        count += 1
        failure = run_one(run, handler_class, MarkerLabProtocol, AnyInitiatorScheduler)
        if failure is not None:
            return run_failed(part, failure)
    return PartResult(
        part,
        "passed",
        f"{count} runs (banks of two and three accounts, snapshots started at random "
        "accounts, several at once, half with a crash): every snapshot a consistent cut, its "
        "balances and channel states adding up to the total, none left pending, the balances "
        "those of the failure-free run",
    )
