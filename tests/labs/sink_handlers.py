"""Sinks a student of the two-phase-commit lab might write: one correct (written as a
student would, not the reference: the known-good sink of the tests is the package's own
MemorySink), each typical bug, and some that break the lab's rules."""

from __future__ import annotations

from dataclasses import replace

from absnb.labs import TransactionalSink


class Correct(TransactionalSink):
    """Flink's TwoPhaseCommitSinkFunction, as a student writes it."""

    def invoke(self, state, value):
        txn = state.current or self.begin_transaction(state.task)
        self.write(txn, value)
        return replace(state, current=txn, written=state.written + 1)

    def snapshot(self, state, n):
        if state.current is None:
            return state
        txn = self.pre_commit(state.current, n)
        return replace(state, current=None, written=0, pending=(*state.pending, (n, txn)))

    def checkpoint_complete(self, state, n):
        for m, txn in state.pending:
            if m <= n:
                self.commit(txn)
        return replace(state, pending=tuple(p for p in state.pending if p[0] > n))

    def restore(self, state):
        named = set()
        for _, txn in state.pending:
            self.recover_and_commit(txn)
            named.add(txn)
        for txn in self.leftovers(state.task):
            if txn not in named:
                self.recover_and_abort(txn)
        return replace(state, current=None, written=0, pending=())


class CommitsAtTheSnapshot(Correct):
    """Pre-commits and commits at once, at the snapshot: the records are visible before
    the checkpoint completes."""

    def snapshot(self, state, n):
        state = super().snapshot(state, n)
        for _, txn in state.pending:
            self.commit(txn)
        return replace(state, pending=())

    def checkpoint_complete(self, state, n):
        return state


class ForgetsTheRestoredTransactions(Correct):
    """On a restore, aborts every leftover but commits nothing: the transactions of the
    completed checkpoint whose notification the failure came before are lost."""

    def restore(self, state):
        for txn in self.leftovers(state.task):
            self.recover_and_abort(txn)
        return replace(state, current=None, written=0, pending=())


class CommitsTwice(Correct):
    """Commits the restored transactions with commit, not recover_and_commit: a
    transaction committed before the failure is committed a second time."""

    def restore(self, state):
        named = set()
        for _, txn in state.pending:
            self.commit(txn)
            named.add(txn)
        for txn in self.leftovers(state.task):
            if txn not in named:
                self.recover_and_abort(txn)
        return replace(state, current=None, written=0, pending=())


class LeavesTheLeftovers(Correct):
    """On a restore, commits the restored transactions but aborts nothing: what the
    failed attempt left open or pre-committed stays behind."""

    def restore(self, state):
        for _, txn in state.pending:
            self.recover_and_commit(txn)
        return replace(state, current=None, written=0, pending=())


class CommitsOnlyTheLatest(Correct):
    """On a notification, commits only the latest pending transaction up to n."""

    def checkpoint_complete(self, state, n):
        done = [txn for m, txn in state.pending if m <= n]
        if done:
            self.commit(done[-1])
        return replace(state, pending=tuple(p for p in state.pending if p[0] > n))


class ReturnsNothing(Correct):
    """Forgets to return the state from invoke."""

    def invoke(self, state, value):
        super().invoke(state, value)


class ChangesTheState(Correct):
    """Changes the state in place (it is immutable)."""

    def invoke(self, state, value):
        txn = state.current or self.begin_transaction(state.task)
        self.write(txn, value)
        state.current = txn
        return state


class ReturnsAList(Correct):
    """Returns the pending transactions instead of the state."""

    def snapshot(self, state, n):
        return list(super().snapshot(state, n).pending)


class TakesNoStore(Correct):
    """Overrides __init__ without the store."""

    def __init__(self):
        super().__init__()
        self.seen = 0
