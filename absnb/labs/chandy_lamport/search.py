"""Part c of the Chandy-Lamport lab: every interleaving of small banks, with snapshots
started at any account, several at once.

The explorer's worlds start a snapshot only at the graph's initiators; here
:class:`AnyInitiator` lets the coordinator start each snapshot at any account that reaches
every other (Chandy-Lamport's "any process may initiate"), so breadth-first search meets
two snapshots started at the same account, or at two, in progress together. The checks are
the ABS lab's (:class:`~absnb.labs.search.Search`): no decision raised, every completed
snapshot a consistent cut whose balances and recorded transfers add up to the bank's
total, no snapshot left pending, the balances those of the failure-free run.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from absnb.core.graph import ExecutionGraph
from absnb.core.ids import TaskId
from absnb.core.job import Job
from absnb.jobs.bank_transfer import bank_transfer
from absnb.labs.chandy_lamport.handler import MarkerLabProtocol
from absnb.labs.chandy_lamport.story import marker_words
from absnb.labs.search import Search
from absnb.sim.actions import Action, TriggerCheckpoint
from absnb.sim.world import World


@cache
def initiators(graph: ExecutionGraph) -> tuple[TaskId, ...]:
    """The processes a snapshot may start at: those whose markers reach every process."""
    every = frozenset(graph.tasks)
    return tuple(t for t in graph.tasks if graph.downstream(t) == every)


class AnyInitiator(World):
    """A world whose coordinator may start the next snapshot at any of the
    :func:`initiators` (one :class:`~absnb.sim.actions.TriggerCheckpoint` each), not only
    at the graph's first process."""

    def enabled_actions(self, *, crashes: bool = False, ends: bool = False) -> list[Action]:
        acts = World.enabled_actions(self, crashes=crashes, ends=ends)
        if not any(type(a) is TriggerCheckpoint for a in acts):
            return acts
        out: list[Action] = []
        for a in acts:
            if type(a) is TriggerCheckpoint:
                out.extend(TriggerCheckpoint(at=t) for t in initiators(self.graph))
            else:
                out.append(a)
        return out


@cache
def two_accounts() -> Job:
    """Seed 001's two accounts, linked both ways, and two transfers: A sends 100 to B, B
    sends 200 to A."""
    return bank_transfer({"A": 1_000, "B": 500}, transfers=[("A", "B", 100), ("B", "A", 200)])


@cache
def three_accounts() -> Job:
    """Three accounts, every pair linked both ways (each process has two inputs), and two
    transfers: A sends 100 to B, B sends 200 to C."""
    return bank_transfer(
        {"A": 1_000, "B": 500, "C": 300}, transfers=[("A", "B", 100), ("B", "C", 200)]
    )


def _search(
    title: str,
    job: Callable[[], Job],
    max_checkpoints: int = 1,
    crashes: bool = False,
    max_depth: int | None = None,
) -> Search:
    return Search(
        title,
        job,
        max_checkpoints=max_checkpoints,
        crashes=crashes,
        max_depth=max_depth,
        protocol=MarkerLabProtocol,
        world_class=AnyInitiator,
        words=marker_words,
        snapshot="snapshot",
        started=" (each started at any account)",
    )


@cache
def ring() -> Job:
    """Three accounts in a ring, A -> B -> C -> A, and three transfers along it."""
    return bank_transfer(
        {"A": 1_000, "B": 500, "C": 300},
        links=[("A", "B"), ("B", "C"), ("C", "A")],
        transfers=[("A", "B", 100), ("B", "C", 200), ("C", "A", 300)],
    )


SEARCHES = (
    _search("bank A <-> B, 2 transfers", two_accounts, max_checkpoints=2),
    _search("bank A, B, C (every pair linked), 2 transfers", three_accounts),
    _search("bank A -> B -> C -> A, 3 transfers", ring, max_checkpoints=2),
    _search("bank A <-> B, 2 transfers", two_accounts, crashes=True, max_depth=8),
)
"""Part c's explorations, smallest first; the first violation stops the part."""
