"""Part c of the two-phase-commit lab: every interleaving of a small word count whose sink
is the student's, and the shortest counterexample.

Each :class:`SinkSearch` explores, breadth first, a word count whose sink writes to its own
:class:`~absnb.sinks.TransactionStore` (a :class:`~absnb.labs.two_phase_commit.world.StoreWorld`
carries the store, so every branch has its own). After every step it checks the rules of
two-phase commit (seed 004) on the store: no decision raised; nothing is visible before its
checkpoint completes; a notification of checkpoint n leaves nothing pre-committed up to n;
a restore commits the transactions of the restored checkpoint and aborts every other one
the failed attempt left. At every end: no checkpoint stuck, no transaction left open or
pre-committed, and the committed output that of the failure-free run (exactly once).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from absnb.core.job import Job
from absnb.jobs.word_count import word_count
from absnb.labs.search import Search, _reference, no_stuck_checkpoint
from absnb.labs.two_phase_commit.handler import catching, fault_of
from absnb.labs.two_phase_commit.story import sink_words
from absnb.labs.two_phase_commit.world import SkippingWorld, stores_of
from absnb.operators.base import Operator
from absnb.sim.actions import Notify
from absnb.sim.events import Event
from absnb.sim.explore import Exploration, Goal, Invariant, explore
from absnb.sim.world import World
from absnb.sinks.memory import Transaction, TransactionStore


def _sink_tasks(world: World) -> list[Any]:
    return [t for t in world.graph.tasks if world.graph.kind(t) == "sink"]


def _transactions(world: World) -> list[Transaction]:
    return [t for store in stores_of(world.job) for t in store.table()]


def _rows(txn: Transaction) -> str:
    return ", ".join(map(repr, txn.rows)) or "no records"


def sink_faults(world: World, event: Event) -> str | None:
    """Invariant: no decision of the student's sink raised (the lab catches it)."""
    for t in _sink_tasks(world):
        fault = fault_of(world.tasks[t].state)
        if fault:
            return f"{t}: {fault}"
    return None


def nothing_visible_early(world: World, event: Event) -> str | None:
    """Invariant: every committed transaction was pre-committed for a checkpoint that a
    completed one covers (phase two comes after the checkpoint completes; an aborted
    checkpoint's transaction waits for the next one)."""
    latest = max((s.checkpoint_id for s in world.snapshots), default=0)
    for txn in _transactions(world):
        if txn.status == "committed" and (txn.checkpoint_id or 0) > latest:
            return (
                f"{txn.name} ({_rows(txn)}) is committed, but checkpoint {txn.checkpoint_id}, "
                "for which it was pre-committed, has not completed: its records are visible "
                "before the checkpoint that covers them"
            )
    return None


def notification_commits_up_to_n(world: World, event: Event) -> str | None:
    """Invariant: after the notification of checkpoint n reaches a sink task, none of its
    transactions is still pre-committed for a checkpoint up to n."""
    action = event.action
    if type(action) is not Notify or world.graph.kind(action.task) != "sink":
        return None
    n, task = action.checkpoint_id, str(action.task)
    for txn in _transactions(world):
        if txn.task == task and txn.status == "pre-committed" and (txn.checkpoint_id or 0) <= n:
            return (
                f"{task} heard that checkpoint {n} completed, but {txn.name} ({_rows(txn)}), "
                f"pre-committed for checkpoint {txn.checkpoint_id}, is still not committed"
            )
    return None


def restore_finishes_transactions(world: World, event: Event) -> str | None:
    """Invariant: a restore of checkpoint n leaves each restarted sink task's transactions
    named in n committed, and every other one committed or aborted."""
    if event.restored is None:
        return None
    n, restarted = event.restored
    snap = next((s for s in world.snapshots if s.checkpoint_id == n), None)
    for t in restarted:
        if world.graph.kind(t) != "sink":
            continue
        named = set()
        if snap is not None:
            named = {txn for _, txn in getattr(snap.tasks[t].state, "pending", ())}
        for txn in _transactions(world):
            if txn.task != str(t):
                continue
            if txn.name in named and txn.status != "committed":
                return (
                    f"{t} was restored from checkpoint {n}, whose state names {txn.name} "
                    f"({_rows(txn)}) as pre-committed, and {txn.name} is {txn.status} after the "
                    "restore, not committed"
                )
            if txn.name not in named and txn.status in ("open", "pre-committed"):
                return (
                    f"{t} was restored from checkpoint {n}, which does not name {txn.name} "
                    f"({_rows(txn)}), and {txn.name} is still {txn.status} after the restore, "
                    "not aborted"
                )
    return None


def nothing_pre_committed(world: World) -> str | None:
    """Terminal check: no transaction is left pre-committed (each is committed or
    aborted; an open one waits for the final checkpoint, beyond the search's bound)."""
    for txn in _transactions(world):
        if txn.status == "pre-committed":
            return f"the run ended with {txn.name} ({_rows(txn)}) still pre-committed"
    return None


def exactly_once(reference: object) -> Goal:
    """Terminal check: the committed records, with those in the open transactions (which
    the final checkpoint, beyond the search's bound, would commit), are the failure-free
    output, each once."""
    expected = sorted(map(repr, reference)) if isinstance(reference, list) else reference

    def check(world: World) -> str | None:
        world.output()  # loads the world's store
        txns = _transactions(world)
        committed = [r for t in txns if t.status == "committed" for r in t.rows]
        still_open = [r for t in txns if t.status == "open" for r in t.rows]
        if sorted(map(repr, committed + still_open)) == expected:
            return None
        return (
            f"the sink committed {committed!r}"
            + (f" and holds {still_open!r} in its open transaction" if still_open else "")
            + f", not the failure-free output {reference!r} once each"
        )

    return check


def one_line_job(sink: str | Operator = "collect") -> Job:
    """One source (the line ``a b``) -> one counter -> one sink writing to ``sink``."""
    return word_count([["a b"]], sources=1, counters=1, sinks=1, sink=sink)


def two_sinks_job(sink: str | Operator = "collect") -> Job:
    """One source (the line ``a b``) -> two counters -> two sinks writing to ``sink``."""
    return word_count([["a b"]], sources=1, counters=2, sinks=2, sink=sink)


def two_lines_job(sink: str | Operator = "collect") -> Job:
    """One source (the lines ``a`` and ``b``) -> one counter -> one sink writing to
    ``sink``: a checkpoint can fall between the lines."""
    return word_count([["a", "b"]], sources=1, counters=1, sinks=1, sink=sink)


@cache
def one_line() -> Job:
    """:func:`one_line_job` with the default sink (its title and failure-free output)."""
    return one_line_job()


@cache
def two_sinks() -> Job:
    """:func:`two_sinks_job` with the default sink."""
    return two_sinks_job()


@cache
def two_lines() -> Job:
    """:func:`two_lines_job` with the default sink."""
    return two_lines_job()


@dataclass(frozen=True)
class SinkSearch(Search):
    """One exploration of a word count whose sink is the class under check.

    Attributes:
        build: makes the job with a given sink (``job`` makes it with the default sink:
            its title and failure-free output).
    """

    build: Callable[[Operator], Job] = one_line_job
    words: Callable[..., list[str]] | None = sink_words

    def world(self, handler_class: type[Any]) -> World:
        sink = catching(handler_class)(TransactionStore())
        return SkippingWorld(self.build(sink), "abs", max_checkpoints=self.max_checkpoints)

    def checks(self) -> tuple[list[Invariant], list[Goal]]:
        invariants: list[Invariant] = [
            sink_faults,
            nothing_visible_early,
            notification_commits_up_to_n,
            restore_finishes_transactions,
        ]
        goals: list[Goal] = [
            no_stuck_checkpoint,
            nothing_pre_committed,
            exactly_once(_reference(self.job)),
        ]
        return invariants, goals

    def run(self, handler_class: type[Any]) -> Exploration:
        invariants, goals = self.checks()
        return explore(
            self.world(handler_class),
            invariants,
            goals,
            max_states=self.max_states,
            max_depth=self.max_depth,
            crashes=self.crashes,
        )


def _search(
    title: str, job: Callable[[], Job], build: Callable[[Operator], Job], **bounds: Any
) -> SinkSearch:
    return SinkSearch(title, job, build=build, **bounds)


ONE_LINE = "word count, 1 source (a b) -> 1 counter -> 1 sink"
TWO_SINKS = "word count, 1 source (a b) -> 2 counters -> 2 sinks"
TWO_LINES = "word count, 1 source (a, then b) -> 1 counter -> 1 sink"

SEARCHES = (
    _search(ONE_LINE, one_line, one_line_job),
    _search(TWO_SINKS, two_sinks, two_sinks_job),
    _search(TWO_LINES, two_lines, two_lines_job, max_checkpoints=2),
    _search(ONE_LINE, one_line, one_line_job, crashes=True, max_depth=12),
    _search(TWO_SINKS, two_sinks, two_sinks_job, crashes=True, max_depth=8),
)
"""Part c's explorations, smallest first; the first violation stops the part."""
