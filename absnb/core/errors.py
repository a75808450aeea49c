"""Exceptions a user can cause. Each message says what was wrong and what to do."""

from __future__ import annotations


class AbsnbError(Exception):
    """Base class of every error absnb raises on purpose."""


class GraphError(AbsnbError, ValueError):
    """A job graph is malformed (dangling edge, duplicate name, zero parallelism, ...)."""


class UnknownProtocolError(AbsnbError, ValueError):
    """A protocol name that absnb does not know."""


class UnknownJobError(AbsnbError, ValueError):
    """A job name that absnb does not know."""


class CyclicGraphError(AbsnbError, ValueError):
    """ABS Algorithm 1 was asked to run on a graph with cycles, where it deadlocks."""


class ActionNotEnabledError(AbsnbError, ValueError):
    """An action was applied that is not enabled in the current world."""


class TransferRefusedError(ActionNotEnabledError):
    """A bank transfer of more than the account's balance, or of an amount that is not a
    positive whole number."""


class SnapshotMismatchError(AbsnbError, ValueError):
    """A snapshot was restored into a job other than the one that took it."""


class TraceFormatError(AbsnbError, ValueError):
    """A trace file (JSON lines) could not be read."""


class ProtocolError(AbsnbError, RuntimeError):
    """A protocol received an input it cannot handle in its current state."""


class DatasetNotFoundError(AbsnbError, FileNotFoundError):
    """A shipped sample under ``datasets/`` is missing; the message says how to regenerate it."""


class ProtocolSettingError(AbsnbError, ValueError):
    """A protocol or coordinator setting (a timeout, a pause, a limit) is not allowed."""


class InvalidValueError(AbsnbError, ValueError):
    """An argument has the right type but a value that is not allowed (the message names
    the value and what is allowed)."""


class InvalidTypeError(AbsnbError, TypeError):
    """An argument has a type that is not allowed (the message names the value and the
    types that are)."""


class OperatorOutputError(AbsnbError, TypeError):
    """A user operator returned something other than ``(state, outputs)`` with the outputs a
    list or tuple."""


class JavaNotFoundError(AbsnbError, RuntimeError):
    """Spark needs Java and none was found; Jupyter shows the message alone, on one line."""

    def _render_traceback_(self) -> list[str]:
        """IPython's hook: the message, not a page of traceback."""
        return [f"{type(self).__name__}: {self}"]


class FailureNotFiredWarning(UserWarning):
    """A crash or failure asked for did not happen: the run ended before it was due, or its
    task never reached the point it waited for. The run's result says which."""
