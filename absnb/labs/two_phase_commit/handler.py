"""The two-phase-commit lab's base class: the checkpoint glue of an exactly-once sink,
left to write.

A student writes the four decisions of Flink's ``TwoPhaseCommitSinkFunction`` (seed 004)
at one sink task, each taking the sink's state
(:class:`~absnb.protocols.two_phase_commit.TwoPhaseCommitState`, immutable) and returning
the new one:

- :meth:`TransactionalSink.invoke`: a record arrives (begin a transaction if none is open,
  write the record into it);
- :meth:`TransactionalSink.snapshot`: the snapshot of checkpoint n (pre-commit the open
  transaction, keep its handle in the checkpointed state);
- :meth:`TransactionalSink.checkpoint_complete`: checkpoint n completed (commit everything
  pre-committed up to n, in order);
- :meth:`TransactionalSink.restore`: the task restarts from a checkpoint (commit the
  transactions it names, abort everything else the failed attempt left behind).

The transaction hooks on the external system are the simulator's memory store's
(:class:`~absnb.sinks.MemorySink`): ``begin_transaction``, ``write``, ``pre_commit``,
``commit``, ``abort``, ``leftovers``, and for recovery ``recover_and_commit`` and
``recover_and_abort``. Here, as in PostgreSQL (``COMMIT PREPARED``) or Kafka, committing a
transaction already committed fails: only ``recover_and_commit`` accepts one (Flink's
``recoverAndCommit``), since a restore may find the transactions it names committed before
the failure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

from absnb.core.ids import CheckpointId, TaskId
from absnb.labs.handler import LabError, located, raised_text
from absnb.protocols.two_phase_commit import TwoPhaseCommitState, pending_for_final
from absnb.sinks.memory import MemorySink, TransactionError, TransactionSystem

State = TwoPhaseCommitState[str]
"""A lab sink's state: ``current`` (the open transaction or None), ``written`` (records in
it), ``pending`` (``(checkpoint id, transaction)`` pre-committed, oldest first)."""


@dataclass(frozen=True, slots=True)
class Faulted(TwoPhaseCommitState[str]):
    """The state a decision that raised leaves, under the lab's checks: the state it was
    given, with what it raised (the task goes on with it; the checks stop there)."""

    fault: str = ""


def fault_of(state: object) -> str | None:
    """What a decision raised, if ``state`` is what it left (None: nothing)."""
    return state.fault if isinstance(state, Faulted) else None


class TransactionalSink(MemorySink):
    """An exactly-once sink into a :class:`~absnb.sinks.TransactionStore` (or, on Spark, a
    :class:`~absnb.sinks.file_store.FileTransactionStore`), with the checkpoint glue left to
    a subclass.

    A subclass implements :meth:`invoke`, :meth:`snapshot`, :meth:`checkpoint_complete`
    and :meth:`restore`. Each returns the sink's new state, made with
    ``dataclasses.replace(state, ...)`` (the state is immutable): ``current``, the open
    transaction's handle; ``written``, the records written to it; ``pending``, the
    pre-committed transactions as ``(checkpoint id, handle)``, oldest first. ``state.task``
    names the task (``begin_transaction`` and ``leftovers`` take it).

    Args:
        store: the external system (a new one by default).
    """

    catches: ClassVar[bool] = False
    """Whether an exception raised by a decision is kept in the state it returns (the task
    then goes on with the state it had) rather than raised: the lab's checks set it, so
    that the explorer finds the shortest run that reaches it."""

    made: str | None = None
    """Why the lab could not make the sink with its store (None: it could)."""

    def __init__(self, store: TransactionSystem | None = None) -> None:
        super().__init__(store)

    # -- what a student writes -------------------------------------------------------------
    def invoke(self, state: State, value: Any) -> State:
        """A record ``value`` arrives: write it into the open transaction (Flink:
        ``invoke``). Return the new state."""
        raise NotImplementedError(
            f"{type(self).__name__}.invoke(state, value) is not written yet: begin a "
            "transaction if none is open (self.begin_transaction(state.task)), write value "
            "into it (self.write(txn, value)) and return the new state"
        )

    def snapshot(self, state: State, n: CheckpointId) -> State:
        """The sink's snapshot for checkpoint ``n``: phase one (Flink: ``snapshotState`` →
        ``preCommit``). Return the new state, which is the sink's part of checkpoint ``n``."""
        raise NotImplementedError(
            f"{type(self).__name__}.snapshot(state, n) is not written yet: pre-commit the "
            "open transaction, if any (self.pre_commit(txn, n)), and keep its handle in the "
            "state's pending transactions for checkpoint n"
        )

    def checkpoint_complete(self, state: State, n: CheckpointId) -> State:
        """The coordinator says that checkpoint ``n`` is complete: phase two (Flink:
        ``notifyCheckpointComplete``). Return the new state."""
        raise NotImplementedError(
            f"{type(self).__name__}.checkpoint_complete(state, n) is not written yet: commit "
            "every pending transaction pre-committed for a checkpoint up to n, oldest first "
            "(self.commit(txn)), and keep only the later ones pending"
        )

    def restore(self, state: State) -> State:
        """The task restarts after a failure; ``state`` is its part of the latest completed
        checkpoint (Flink: ``initializeState`` with restored state). Return the new state."""
        raise NotImplementedError(
            f"{type(self).__name__}.restore(state) is not written yet: commit every "
            "transaction pending in the restored state (self.recover_and_commit(txn)), abort "
            "every other unfinished one of the task (self.leftovers(state.task), "
            "self.recover_and_abort(txn)) and return a state with nothing open or pending"
        )

    # -- the external system's hooks -------------------------------------------------------
    def commit(self, txn: str) -> None:
        """Make the pre-committed ``txn`` visible.

        Raises:
            TransactionError: ``txn`` is not pre-committed (committed already, say).
        """
        if self.store.status(txn) == "committed":
            raise TransactionError(
                f"cannot commit transaction {txn!r}: it is committed already (the external "
                "system, like PostgreSQL's COMMIT PREPARED, refuses a second commit; a "
                "restore calls recover_and_commit, which accepts one committed before the "
                "failure)"
            )
        self.store.commit(txn)

    def recover_and_commit(self, txn: str) -> None:
        """After a restore: commit ``txn``, which may have been committed before the failure
        (then nothing is done)."""
        self.store.commit(txn)

    # -- the glue around the decisions -----------------------------------------------------
    def initialize_state(self, task: TaskId, state: State, recovering: bool) -> State:
        state = replace(state, task=str(task))
        if not recovering:
            return state
        return self._asked("restore", "(state)", state, lambda: self.restore(state))

    def process(self, state: State, value: Any) -> tuple[State, Sequence[object]]:
        new = self._asked("invoke", f"(state, {value!r})", state, lambda: self.invoke(state, value))
        return new, ()

    def snapshot_state(self, state: State, checkpoint_id: CheckpointId) -> State:
        # the glue: the transaction pre-committed at the end of input is pending for this
        # checkpoint, the task's final one (FLIP-147), before the student's snapshot
        state = pending_for_final(state, checkpoint_id)
        return self._asked(
            "snapshot",
            f"(state, {checkpoint_id})",
            state,
            lambda: self.snapshot(state, checkpoint_id),
        )

    def notify_checkpoint_complete(self, state: State, checkpoint_id: CheckpointId) -> State:
        return self._asked(
            "checkpoint_complete",
            f"(state, {checkpoint_id})",
            state,
            lambda: self.checkpoint_complete(state, checkpoint_id),
        )

    def _asked(self, hook: str, args: str, state: State, asked: Callable[[], object]) -> State:
        """The state the student's decision ``hook`` (called as ``asked()``) returns,
        checked; what it raised is kept in a :class:`Faulted` state when the class
        :attr:`catches`."""
        if fault_of(state) is not None:
            return state  # the first fault stands
        try:
            if self.made is not None:
                raise LabError(self.made)
            return self._checked(hook, state, asked())
        except Exception as e:
            if not self.catches:
                located(e, state.task, f"{hook}{args}")
                raise
            given = {f.name: getattr(state, f.name) for f in fields(TwoPhaseCommitState)}
            said = raised_text(f"{hook}{args}", e)
            return Faulted(**given, fault=said)

    def _checked(self, hook: str, given: State, result: object) -> State:
        """``result`` of the student's ``hook``: a sink state of the same task."""
        name = f"{type(self).__name__}.{hook}"
        if not isinstance(result, TwoPhaseCommitState):
            raise LabError(
                f"{name} returned {result!r:.60}, not the sink's state: return the new state, "
                "e.g. dataclasses.replace(state, current=txn) (the state is immutable)"
            )
        if result.task != given.task:
            raise LabError(
                f"{name} returned a state of task {result.task!r}, not {given.task!r}: make "
                "the new state with dataclasses.replace(state, ...), which keeps the task"
            )
        pending = result.pending
        if not isinstance(pending, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], int) for p in pending
        ):
            raise LabError(
                f"{name} returned pending={pending!r:.60}: pending is a tuple of (checkpoint "
                "id, transaction) pairs, oldest first, e.g. (*state.pending, (n, txn))"
            )
        return result

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def catching(sink_class: type[MemorySink]) -> type[MemorySink]:
    """``sink_class``, keeping what its decisions raise in the state (a lab sink), or
    itself (the package's own). A lab sink whose ``__init__`` does not take the store is
    made anyway, and its every decision then says so."""
    if not issubclass(sink_class, TransactionalSink) or sink_class.catches:
        return sink_class
    name = sink_class.__name__

    def __init__(self: TransactionalSink, store: TransactionSystem | None = None) -> None:
        try:
            sink_class.__init__(self, store)
        except Exception as e:
            TransactionalSink.__init__(self, store)
            self.made = (
                f"{name}(store) raised {type(e).__name__}: {e}: the lab makes a sink with "
                "the store it writes to; keep __init__(self, store=None) and call "
                "super().__init__(store)"
            )

    caught = type(name, (sink_class,), {"catches": True, "__init__": __init__})
    caught.__qualname__ = sink_class.__qualname__
    return caught
