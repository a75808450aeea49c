"""Two-phase commit: end-to-end exactly-once into an external system (seed 004).

The checkpoint is the first phase. When a sink takes its snapshot for checkpoint n it
pre-commits its open transaction (the vote: the data is durable but not yet visible) and
keeps its handle in the checkpointed state. When the coordinator says that checkpoint n
is complete, every task has pre-committed, so the sink commits (the second phase). If the
job fails first, it restores the latest completed checkpoint and commits every
transaction named there, and aborts everything else it left behind.

:class:`TwoPhaseCommitSink` is the template (Flink: ``TwoPhaseCommitSinkFunction``): a
subclass supplies the hooks ``begin_transaction``, ``write``, ``pre_commit``, ``commit``,
``abort``, ``leftovers`` and ``committed`` (and ``check``, run before the job starts); the
checkpoint glue here is final. Implementations: :mod:`absnb.sinks.memory` (the simulator's
store), :mod:`absnb.sinks.files`, :mod:`absnb.sinks.postgres`. A transaction handle must be a
small picklable value (a file name, a transaction name), since it is part of the sink's
checkpointed state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, Literal, TypeVar

from absnb.core.errors import AbsnbError
from absnb.core.ids import CheckpointId, TaskId
from absnb.operators.base import Operator

Txn = TypeVar("Txn")


class SinkConfigurationError(AbsnbError, ValueError):
    """A sink cannot write where it was told to (a directory that is not writable, a
    database that refuses the connection or cannot prepare transactions). Raised by
    :meth:`TwoPhaseCommitSink.check` before the job starts."""


class TransactionLostError(AbsnbError, RuntimeError):
    """A pre-committed transaction that must be committed is gone from the external system
    without having been committed: its records are lost, which two-phase commit forbids."""


END_OF_INPUT: CheckpointId = 2**31 - 1
"""The id of the final checkpoint that :meth:`TwoPhaseCommitSink.end_input` pre-commits for:
larger than any real checkpoint id, so that no periodic checkpoint's completion commits it."""

TxnStatus = Literal["open", "pre-committed", "committed", "aborted"]
"""Where a transaction is: written to, voted (durable, invisible), visible, discarded."""


@dataclass(frozen=True, slots=True)
class TwoPhaseCommitState(Generic[Txn]):
    """A sink task's state: what the checkpoint stores.

    Attributes:
        task: the task this sink runs as (names its transactions).
        current: the open transaction, if a record came since the last pre-commit.
        written: records written to ``current``.
        pending: pre-committed transactions waiting for their checkpoint to complete, as
            ``(checkpoint id, transaction)`` oldest first (Flink: ``pendingCommitTransactions``).
    """

    task: str = ""
    current: Txn | None = None
    written: int = 0
    pending: tuple[tuple[CheckpointId, Txn], ...] = ()

    def __str__(self) -> str:
        parts = [f"open {self.current} ({self.written} records)" if self.current else "no open"]
        parts += [f"{txn} pre-committed for {n}" for n, txn in self.pending]
        return "; ".join(parts)


class TwoPhaseCommitSink(Operator, Generic[Txn]):
    """The exactly-once sink template. Subclasses implement the I/O hooks.

    Transactions begin lazily, at the first record after a pre-commit, so a checkpoint
    with no new records pre-commits nothing. Every hook gets the task name, so a sink with
    parallelism > 1 keeps its subtasks' transactions apart.
    """

    kind: ClassVar[str] = "sink"
    external: ClassVar[bool] = True

    # -- hooks a subclass implements -----------------------------------------------------
    def check(self) -> None:
        """Before the job starts (both runtimes call it on the driver): raise
        :class:`SinkConfigurationError` if the external system cannot take this sink's
        transactions, saying what is wrong and how to fix it. Default: nothing to check."""

    def begin_transaction(self, task: str) -> Txn:
        """Start a transaction for ``task`` and return its handle."""
        raise NotImplementedError

    def write(self, txn: Txn, value: Any) -> None:
        """Write one record into the open transaction ``txn``."""
        raise NotImplementedError

    def pre_commit(self, txn: Txn, checkpoint_id: CheckpointId) -> Txn:
        """Make ``txn`` durable but not yet visible (flush, fsync, close; PREPARE
        TRANSACTION). Returns the handle to keep (it may be renamed after the checkpoint)."""
        raise NotImplementedError

    def commit(self, txn: Txn) -> None:
        """Make the pre-committed ``txn`` visible, atomically. Must be idempotent: after a
        failure in the commit phase it is called again for a transaction already
        committed."""
        raise NotImplementedError

    def abort(self, txn: Txn) -> None:
        """Discard ``txn`` (open or pre-committed). Idempotent as well."""
        raise NotImplementedError

    def recover_and_commit(self, txn: Txn) -> None:
        """After a restore: commit a transaction named in the restored checkpoint."""
        self.commit(txn)

    def recover_and_abort(self, txn: Txn) -> None:
        """After a restore: abort a transaction the failed attempt left behind."""
        self.abort(txn)

    def leftovers(self, task: str) -> Iterable[Txn]:
        """Transactions of ``task`` in the external system that are neither committed nor
        aborted (open or pre-committed ones a failed attempt left behind)."""
        return ()

    def committed(self) -> list[Any]:
        """Every committed record, from the external system: the sink's visible output."""
        raise NotImplementedError

    # -- the checkpoint glue (final) -----------------------------------------------------
    def initial_state(self) -> TwoPhaseCommitState[Txn]:
        return TwoPhaseCommitState()

    def initialize_state(
        self, task: TaskId, state: TwoPhaseCommitState[Txn], recovering: bool
    ) -> TwoPhaseCommitState[Txn]:
        """The task starts, or restarts after a failure (``recovering``).

        On a restart, ``state`` is the sink's part of the restored checkpoint, which is
        complete: every transaction it names is committed (``recover_and_commit``; it may
        already be). Then every other transaction of this task still in the external
        system, opened or pre-committed by the failed attempt, is aborted
        (``recover_and_abort``): its records are replayed from the restored offsets.
        """
        state = replace(state, task=str(task))
        if not recovering:
            return state
        keep = set()
        for _, txn in state.pending:
            self.recover_and_commit(txn)
            keep.add(txn)
        for txn in self.leftovers(state.task):
            if txn not in keep:
                self.recover_and_abort(txn)
        return replace(state, current=None, written=0, pending=())

    def process(
        self, state: TwoPhaseCommitState[Txn], value: Any
    ) -> tuple[TwoPhaseCommitState[Txn], Sequence[Any]]:
        txn = state.current
        if txn is None:
            txn = self.begin_transaction(state.task)
        self.write(txn, value)
        return replace(state, current=txn, written=state.written + 1), ()

    def snapshot_state(
        self, state: TwoPhaseCommitState[Txn], checkpoint_id: CheckpointId
    ) -> TwoPhaseCommitState[Txn]:
        """Phase one: the snapshot for checkpoint n pre-commits the open transaction and
        keeps it as pending for n (Flink: ``snapshotState`` → ``preCommit``)."""
        if state.current is None:
            return state
        txn = self.pre_commit(state.current, checkpoint_id)
        return replace(
            state, current=None, written=0, pending=(*state.pending, (checkpoint_id, txn))
        )

    def notify_checkpoint_complete(
        self, state: TwoPhaseCommitState[Txn], checkpoint_id: CheckpointId
    ) -> TwoPhaseCommitState[Txn]:
        """Phase two: commit every pending transaction up to ``checkpoint_id``, in order.

        1. Usually one transaction is pending, the one pre-committed for this checkpoint.
        2. A checkpoint whose notification was skipped (it was subsumed, or the notification
           was lost) leaves earlier transactions pending: they are committed now, before it.
        3. A late notification for an older checkpoint finds its transactions already
           committed and commits nothing.
        """
        done = [txn for n, txn in state.pending if n <= checkpoint_id]
        if not done:
            return state
        for txn in done:
            self.commit(txn)
        return replace(state, pending=tuple(p for p in state.pending if p[0] > checkpoint_id))

    def notify_checkpoint_aborted(
        self, state: TwoPhaseCommitState[Txn], checkpoint_id: CheckpointId
    ) -> TwoPhaseCommitState[Txn]:
        """An aborted checkpoint's transaction stays pending, as in Flink: its records are
        in the sink's state from then on, so the next completed checkpoint commits it. If
        the job rolls back instead, the restore aborts it (``recover_and_abort``)."""
        return state

    def end_input(self, state: TwoPhaseCommitState[Txn]) -> TwoPhaseCommitState[Txn]:
        """The input is consumed and the task stops (a host of the Spark runtime ends):
        pre-commit the open transaction as pending for :data:`END_OF_INPUT`, the final
        checkpoint. It completes when the whole run has succeeded: the runtime then calls
        ``notify_checkpoint_complete(state, END_OF_INPUT)``, which commits everything still
        pending (Flink: ``endInput``, then the final checkpoint). A checkpoint taken after
        this keeps it pending, so a restore from that checkpoint commits it; a restore from
        an earlier one aborts it."""
        return self.snapshot_state(state, END_OF_INPUT)

    def uncommitted(self, state: TwoPhaseCommitState[Txn]) -> int:
        """Transactions not yet visible: the open one and the pending ones."""
        return (state.current is not None) + len(state.pending)

    def output(self, states: Sequence[Any]) -> list[Any]:
        """The job's output from this sink: what the external system shows as committed."""
        return self.committed()

    def copy_state(self, state: Any) -> Any:
        return state

    def freeze(self, state: Any) -> Any:
        return state
