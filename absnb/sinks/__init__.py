"""Sinks that write outside the job: exactly-once by two-phase commit, or at-least-once.

The template is :class:`absnb.protocols.two_phase_commit.TwoPhaseCommitSink`. External
systems: the simulator's in-memory :class:`TransactionStore` (:class:`MemorySink`,
:class:`AtLeastOnceSink`), its calls on files that several processes share
(:class:`FileTransactionStore`, in :mod:`absnb.sinks.file_store`: a :class:`MemorySink` on
Spark), a directory of JSON-lines files (:class:`FileSink`, :class:`FileAtLeastOnceSink`,
in :mod:`absnb.sinks.files`), and PostgreSQL with prepared
transactions (:class:`~absnb.sinks.postgres.PostgresSink`, in :mod:`absnb.sinks.postgres`; imported
on first use, so that psycopg is loaded only when it is used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from absnb.core.errors import AbsnbError
from absnb.operators.base import Operator
from absnb.operators.library import CollectSink
from absnb.protocols.two_phase_commit import SinkConfigurationError, TransactionLostError
from absnb.sinks.file_store import CorruptTransactionError, FileTransactionStore
from absnb.sinks.files import FileAtLeastOnceSink, FileSink
from absnb.sinks.memory import (
    AtLeastOnceSink,
    MemorySink,
    Transaction,
    TransactionError,
    TransactionStore,
)

if TYPE_CHECKING:  # imported on first use (module __getattr__ below)
    from absnb.sinks.pg_server import PostgresServer
    from absnb.sinks.postgres import PostgresSink

SINKS = {
    "collect": CollectSink,
    "two-phase-commit": MemorySink,
    "at-least-once": AtLeastOnceSink,
}
"""Sinks a job builder makes by name (JSON-ready, so traces can rebuild the job)."""


def __getattr__(name: str) -> object:
    # PostgresSink lives in a module of its own, imported on first use.
    if name in ("PostgresSink", "PostgresServer"):
        from absnb.sinks import pg_server, postgres

        return getattr(postgres if name == "PostgresSink" else pg_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UnknownSinkError(AbsnbError, ValueError):
    """A sink name that no sink has."""


def make_sink(sink: str | Operator) -> tuple[Operator, str | None]:
    """The sink operator for ``sink`` (a name in :data:`SINKS`, or an operator), and what
    a job's parameters record of it (the name; None for the default or an object)."""
    if isinstance(sink, Operator):
        if sink.kind != "sink":
            raise UnknownSinkError(f"{sink!r} is a {sink.kind}, not a sink: pass a sink operator")
        return sink, None
    key = str(sink).replace("_", "-")
    if key in ("exactly-once", "2pc"):
        key = "two-phase-commit"
    if key not in SINKS:
        raise UnknownSinkError(
            f"unknown sink {sink!r}: use one of {', '.join(SINKS)}, or pass a sink operator "
            "(e.g. absnb.sinks.files.FileSink(directory))"
        )
    return SINKS[key](), (None if key == "collect" else key)


__all__ = [
    "SINKS",
    "AtLeastOnceSink",
    "CorruptTransactionError",
    "FileAtLeastOnceSink",
    "FileSink",
    "FileTransactionStore",
    "MemorySink",
    "PostgresServer",
    "PostgresSink",
    "SinkConfigurationError",
    "Transaction",
    "TransactionError",
    "TransactionLostError",
    "TransactionStore",
    "UnknownSinkError",
    "make_sink",
]
