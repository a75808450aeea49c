"""Sinks into an in-memory external system, for the simulator and the notebooks.

:class:`TransactionStore` stands for a database outside the job: it survives the crash of
any task, and shows every transaction with its status. :class:`MemorySink` writes to it
with two-phase commit (exactly-once); :class:`AtLeastOnceSink` writes every record at once
(so a replay after a failure writes some records twice).

The store is outside the simulated world, as a real database would be. For
:meth:`Stepper.back <absnb.Stepper.back>` to undo its writes too, it offers
:meth:`TransactionStore.save <absnb.sinks.TransactionStore.save>` and
:meth:`TransactionStore.load <absnb.sinks.TransactionStore.load>`, which the stepper calls.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from absnb.core.errors import AbsnbError
from absnb.core.ids import CheckpointId
from absnb.operators.base import Operator
from absnb.protocols.two_phase_commit import TwoPhaseCommitSink, TxnStatus


class TransactionError(AbsnbError, RuntimeError):
    """A sink asked the external system for something its transactions forbid."""


@dataclass(frozen=True, slots=True)
class Transaction:
    """One transaction in a :class:`TransactionStore`."""

    name: str
    task: str
    status: TxnStatus
    rows: tuple[object, ...] = ()
    checkpoint_id: CheckpointId | None = None


class TransactionSystem(Protocol):
    """What :class:`MemorySink` asks of its external system: :class:`TransactionStore`, or
    :class:`~absnb.sinks.file_store.FileTransactionStore` (the same calls on files, for
    sinks on several processes)."""

    def begin(self, task: str) -> str: ...
    def write(self, name: str, value: object) -> None: ...
    def prepare(self, name: str, checkpoint_id: CheckpointId) -> None: ...
    def commit(self, name: str) -> None: ...
    def abort(self, name: str) -> None: ...
    def unfinished(self, task: str) -> list[str]: ...
    def status(self, name: str) -> TxnStatus | None: ...
    def table(self) -> list[Transaction]: ...
    @property
    def rows(self) -> tuple[object, ...]: ...


class TransactionStore:
    """A simulated external system with transactions, named ``{task}/t{k}``."""

    def __init__(self, name: str = "store") -> None:
        self.name = name
        self.transactions: dict[str, Transaction] = {}
        self.rows: tuple[object, ...] = ()
        """Committed (visible) rows, in commit order."""
        self._next = 1

    # -- what sinks call -------------------------------------------------------------------
    def begin(self, task: str) -> str:
        name = f"{task}/t{self._next}"
        self._next += 1
        self.transactions[name] = Transaction(name, task, "open")
        return name

    def write(self, name: str, value: object) -> None:
        txn = self._get(name, "write to", ("open",))
        self.transactions[name] = Transaction(name, txn.task, "open", (*txn.rows, value))

    def prepare(self, name: str, checkpoint_id: CheckpointId) -> None:
        txn = self._get(name, "pre-commit", ("open",))
        self.transactions[name] = Transaction(
            name, txn.task, "pre-committed", txn.rows, checkpoint_id
        )

    def commit(self, name: str) -> None:
        """Idempotent: committing a committed transaction does nothing."""
        txn = self._get(name, "commit", ("pre-committed", "committed"))
        if txn.status == "committed":
            return
        self.transactions[name] = Transaction(
            name, txn.task, "committed", txn.rows, txn.checkpoint_id
        )
        self.rows += txn.rows

    def abort(self, name: str) -> None:
        """Idempotent: aborting an aborted transaction does nothing."""
        txn = self._get(name, "abort", ("open", "pre-committed", "aborted"))
        self.transactions[name] = Transaction(
            name, txn.task, "aborted", txn.rows, txn.checkpoint_id
        )

    def append(self, value: object) -> None:
        """Write a row outside any transaction: visible at once."""
        self.rows += (value,)

    def unfinished(self, task: str) -> list[str]:
        """Open and pre-committed transactions of ``task``."""
        return [
            t.name
            for t in self.transactions.values()
            if t.task == task and t.status in ("open", "pre-committed")
        ]

    def status(self, name: str) -> TxnStatus | None:
        """Where transaction ``name`` is (None: there is no such one)."""
        txn = self.transactions.get(name)
        return None if txn is None else txn.status

    def _get(self, name: str, what: str, allowed: tuple[str, ...]) -> Transaction:
        txn = self.transactions.get(name)
        if txn is None:
            raise TransactionError(f"cannot {what} transaction {name!r}: there is no such one")
        if txn.status not in allowed:
            raise TransactionError(f"cannot {what} transaction {name!r}: it is {txn.status}")
        return txn

    # -- going back in the stepper -----------------------------------------------------------
    def save(self) -> tuple[dict[str, Transaction], tuple[object, ...], int]:
        """Everything the store holds, as a value."""
        return (dict(self.transactions), self.rows, self._next)

    def load(self, saved: tuple[dict[str, Transaction], tuple[object, ...], int]) -> None:
        """Return to what :meth:`save` returned."""
        transactions, self.rows, self._next = saved
        self.transactions = dict(transactions)

    def table(self) -> list[Transaction]:
        """Every transaction, oldest first (for views)."""
        return list(self.transactions.values())

    def __repr__(self) -> str:
        return f"TransactionStore({self.name!r})"


class MemorySink(TwoPhaseCommitSink[str]):
    """Exactly-once into a :class:`TransactionStore` (or any
    :class:`~absnb.sinks.memory.TransactionSystem`) by two-phase commit."""

    clock = staticmethod(time.time)  # transaction ages (with_transaction_timeout)

    def __init__(self, store: TransactionSystem | None = None) -> None:
        self.store: TransactionSystem = store if store is not None else TransactionStore()

    def check(self) -> None:
        """The store's own check, if it has one (a directory that must be writable)."""
        check = getattr(self.store, "check", None)
        if check is not None:
            check()

    def begin_transaction(self, task: str) -> str:
        return self.store.begin(task)

    def write(self, txn: str, value: object) -> None:
        self.store.write(txn, value)

    def pre_commit(self, txn: str, checkpoint_id: CheckpointId) -> str:
        self.store.prepare(txn, checkpoint_id)
        return txn

    def commit(self, txn: str) -> None:
        self.store.commit(txn)

    def abort(self, txn: str) -> None:
        self.store.abort(txn)

    def leftovers(self, task: str) -> list[str]:
        return self.store.unfinished(task)

    def committed(self) -> list[object]:
        return list(self.store.rows)

    def __repr__(self) -> str:
        return "MemorySink()"


class AtLeastOnceSink(Operator[None]):
    """Writes every record to the store at once, outside any transaction.

    Nothing it wrote is taken back when the job rolls back to a checkpoint, so the records
    replayed after a failure appear twice: at-least-once, for contrast with
    :class:`MemorySink`.
    """

    kind = "sink"
    external = True

    def __init__(self, store: TransactionStore | None = None) -> None:
        self.store = store if store is not None else TransactionStore()

    def process(self, state: None, value: object) -> tuple[None, Sequence[object]]:
        self.store.append(value)
        return state, ()

    def output(self, states: Sequence[None]) -> list[object]:
        return list(self.store.rows)

    def __repr__(self) -> str:
        return "AtLeastOnceSink()"
