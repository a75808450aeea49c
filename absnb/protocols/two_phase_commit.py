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

Transaction timeout (Flink: ``setTransactionTimeout``, ``enableTransactionTimeoutWarnings``
and ``ignoreFailuresAfterTransactionTimeout``): an external system aborts a transaction
that stays open too long (Kafka's ``transaction.timeout.ms``). A sink with a clock records
when each transaction began, timeout or not (Flink's ``TransactionHolder``), so that one
restored with :meth:`TwoPhaseCommitSink.with_transaction_timeout` can age the transactions
of an attempt that had none (``TwoPhaseCommitSinkFunctionTest.
testIgnoreCommitExceptionDuringRecovery``). With a timeout it warns
(:class:`TransactionTimeoutWarning`) when one is committed close to or past the timeout,
and, with ``ignore_failures_after_timeout``, lets recovery go on when committing
a transaction older than the timeout fails ("the transaction timed out, its data is lost,
which the user accepted") instead of failing the job.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, Literal, TypeVar

from absnb.core.errors import AbsnbError
from absnb.core.ids import CheckpointId, TaskId
from absnb.operators.base import Operator

Txn = TypeVar("Txn")
"""A sink's transaction handle: what :meth:`TwoPhaseCommitSink.begin_transaction` returns
and every other hook takes."""


class SinkConfigurationError(AbsnbError, ValueError):
    """A sink cannot write where it was told to (a directory that is not writable, a
    database that refuses the connection or cannot prepare transactions). Raised by
    :meth:`TwoPhaseCommitSink.check <absnb.protocols.two_phase_commit.TwoPhaseCommitSink.check>`
    before the job starts."""


class TransactionLostError(AbsnbError, RuntimeError):
    """A pre-committed transaction that must be committed is gone from the external system
    without having been committed: its records are lost, which two-phase commit forbids."""


class TransactionTimeoutWarning(UserWarning):
    """A transaction was committed (or failed to commit after its timeout, and the failure
    was ignored) close to or past the sink's transaction timeout."""


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
    begun: tuple[tuple[Txn, float], ...] = field(default=(), compare=False, repr=False)
    """When each open or pending transaction began, by the sink's clock, whether or not a
    timeout is set (Flink's ``TransactionHolder.transactionStartTime``): a sink restored
    *with* a timeout ages the transactions of an attempt that had none. Not compared: two
    states that differ only in wall-clock start times are the same state."""

    def __str__(self) -> str:
        parts = [f"open {self.current} ({self.written} records)" if self.current else "no open"]
        parts += [f"{txn} pre-committed for {n}" for n, txn in self.pending]
        return "; ".join(parts)


def pending_for_final(
    state: TwoPhaseCommitState[Txn], checkpoint_id: CheckpointId
) -> TwoPhaseCommitState[Txn]:
    """``state`` with the transaction :meth:`TwoPhaseCommitSink.end_input` pre-committed for
    :data:`END_OF_INPUT` pending for ``checkpoint_id`` instead: the first checkpoint the task
    snapshots after its input ended is its final one (FLIP-147), whose completion commits
    it."""
    if state.pending and state.pending[-1][0] == END_OF_INPUT:
        final = (checkpoint_id, state.pending[-1][1])
        return replace(state, pending=(*state.pending[:-1], final))
    return state


class TwoPhaseCommitSink(Operator, Generic[Txn]):
    """The exactly-once sink template. Subclasses implement the I/O hooks.

    Transactions begin lazily, at the first record after a pre-commit, so a checkpoint
    with no new records pre-commits nothing. Every hook gets the task name, so a sink with
    parallelism > 1 keeps its subtasks' transactions apart.
    """

    kind: ClassVar[str] = "sink"
    external: ClassVar[bool] = True
    transaction_timeout: float | None = None
    warning_ratio: float | None = None
    ignore_failures_after_timeout: bool = False
    clock: Callable[[], float] | None = None
    """The external system's clock for transaction ages; no default here (protocols read no
    clock): the sinks of :mod:`absnb.sinks` use wall time, a simulator passes its own."""

    def with_transaction_timeout(
        self,
        timeout: float,
        *,
        warning_ratio: float | None = 0.9,
        ignore_failures_after_timeout: bool = False,
        clock: Callable[[], float] | None = None,
    ) -> TwoPhaseCommitSink[Txn]:
        """Set the external system's transaction timeout (seconds of ``clock``, by default the
        sink's own clock) and return the sink.

        Args:
            timeout: how long the external system keeps a transaction before aborting it.
            warning_ratio: warn when a transaction is committed after this share of the
                timeout (Flink: ``enableTransactionTimeoutWarnings``); None: never.
            ignore_failures_after_timeout: during recovery, a failed commit of a
                transaction older than the timeout is warned about and skipped (Flink:
                ``ignoreFailuresAfterTransactionTimeout``); otherwise it fails the job.
            clock: the time source (a simulator passes its own, for deterministic runs).

        Raises:
            SinkConfigurationError: a timeout that is not a positive number, a ratio
                outside (0, 1], or no clock (neither given nor the sink's own).
        """
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise SinkConfigurationError(
                f"transaction_timeout must be a number of seconds above 0, not {timeout!r}"
            )
        if warning_ratio is not None and not (
            isinstance(warning_ratio, (int, float)) and 0 < warning_ratio <= 1
        ):
            raise SinkConfigurationError(
                f"warning_ratio must be in (0, 1] (a share of the timeout) or None, "
                f"not {warning_ratio!r}"
            )
        if clock is None and self.clock is None:
            raise SinkConfigurationError(
                f"{type(self).__name__} has no clock to age its transactions by: pass "
                "clock=time.time (or the simulator's clock) to with_transaction_timeout"
            )
        self.transaction_timeout = timeout
        self.warning_ratio = warning_ratio
        self.ignore_failures_after_timeout = ignore_failures_after_timeout
        if clock is not None:
            self.clock = clock
        return self

    def _age(self, state: TwoPhaseCommitState[Txn], txn: Txn) -> float | None:
        for t, began in state.begun:
            if t == txn and self.clock is not None:
                return self.clock() - began
        return None

    def _warn_if_late(self, state: TwoPhaseCommitState[Txn], txn: Txn) -> None:
        timeout, ratio = self.transaction_timeout, self.warning_ratio
        if timeout is None or ratio is None:
            return
        age = self._age(state, txn)
        if age is not None and age >= ratio * timeout:
            warnings.warn(
                TransactionTimeoutWarning(
                    f"transaction {txn} of {state.task} was committed {age:.3g} s after it "
                    f"began, close to or past the transaction timeout of {timeout:g} s: the "
                    "external system may already have aborted it; checkpoint more often or "
                    "raise the timeout"
                ),
                stacklevel=3,
            )

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
            try:
                self.recover_and_commit(txn)
            except Exception as e:
                age = self._age(state, txn)
                timeout = self.transaction_timeout
                if not (
                    self.ignore_failures_after_timeout
                    and timeout is not None
                    and age is not None
                    and age > timeout
                ):
                    raise
                warnings.warn(
                    TransactionTimeoutWarning(
                        f"committing transaction {txn} of {state.task} after recovery failed "
                        f"({e}); it began {age:.3g} s ago, past the transaction timeout of "
                        f"{timeout:g} s, so the failure is ignored as configured "
                        "(ignore_failures_after_timeout): its records may be lost"
                    ),
                    stacklevel=2,
                )
            keep.add(txn)
        for txn in self.leftovers(state.task):
            if txn not in keep:
                self.recover_and_abort(txn)
        return replace(state, current=None, written=0, pending=(), begun=())

    def process(
        self, state: TwoPhaseCommitState[Txn], value: Any
    ) -> tuple[TwoPhaseCommitState[Txn], Sequence[Any]]:
        txn = state.current
        if txn is None:
            txn = self.begin_transaction(state.task)
            if self.clock is not None:  # every transaction's start, timeout or not
                state = replace(state, begun=(*state.begun, (txn, self.clock())))
        self.write(txn, value)
        return replace(state, current=txn, written=state.written + 1), ()

    def snapshot_state(
        self, state: TwoPhaseCommitState[Txn], checkpoint_id: CheckpointId
    ) -> TwoPhaseCommitState[Txn]:
        """Phase one: the snapshot for checkpoint n pre-commits the open transaction and
        keeps it as pending for n (Flink: ``snapshotState`` → ``preCommit``). A transaction
        :meth:`~absnb.protocols.two_phase_commit.TwoPhaseCommitSink.end_input` pre-committed
        for :data:`~absnb.protocols.two_phase_commit.END_OF_INPUT` is pending for n from now
        on: n is the final checkpoint of this task (FLIP-147), taken after its input ended."""
        state = pending_for_final(state, checkpoint_id)
        if state.current is None:
            return state
        old = state.current
        txn = self.pre_commit(old, checkpoint_id)
        begun = state.begun
        if txn != old:  # renamed by the pre-commit: keep its start time under the new name
            begun = tuple((txn if t == old else t, b) for t, b in begun)
        return replace(
            state,
            current=None,
            written=0,
            pending=(*state.pending, (checkpoint_id, txn)),
            begun=begun,
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
            self._warn_if_late(state, txn)
            self.commit(txn)
        return replace(
            state,
            pending=tuple(p for p in state.pending if p[0] > checkpoint_id),
            begun=tuple(b for b in state.begun if b[0] not in done),
        )

    def notify_checkpoint_aborted(
        self, state: TwoPhaseCommitState[Txn], checkpoint_id: CheckpointId
    ) -> TwoPhaseCommitState[Txn]:
        """An aborted checkpoint's transaction stays pending, as in Flink: its records are
        in the sink's state from then on, so the next completed checkpoint commits it. If
        the job rolls back instead, the restore aborts it (``recover_and_abort``)."""
        return state

    def end_input(
        self, state: TwoPhaseCommitState[Txn]
    ) -> tuple[TwoPhaseCommitState[Txn], Sequence[Any]]:
        """The input is consumed: pre-commit the open transaction as pending for
        :data:`END_OF_INPUT`, the final checkpoint (Flink: ``endInput``, then the final
        checkpoint, FLIP-147). The first checkpoint this task snapshots afterwards is its
        final one: :meth:`snapshot_state` keeps the transaction pending for it, and its
        completion commits it. The coordinator triggers that checkpoint once the job's input
        has ended if no other did (:meth:`~absnb.CheckpointCoordinator.final_checkpoint_due`),
        in the simulator and on Spark alike, where the hosts wait for it before they exit.
        A restore from a checkpoint taken before this aborts it."""
        return self.snapshot_state(state, END_OF_INPUT), ()

    def uncommitted(self, state: TwoPhaseCommitState[Txn]) -> int:
        """Transactions not yet visible: the open one and the pending ones."""
        return (state.current is not None) + len(state.pending)

    def output(self, states: Sequence[TwoPhaseCommitState[Txn]]) -> list[Any]:
        """The job's output from this sink: what the external system shows as committed."""
        return self.committed()

    def copy_state(self, state: TwoPhaseCommitState[Txn]) -> TwoPhaseCommitState[Txn]:
        return state  # immutable

    def freeze(self, state: TwoPhaseCommitState[Txn]) -> TwoPhaseCommitState[Txn]:
        return state
