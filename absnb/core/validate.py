"""Checks of the values a user passes, made at the call that receives them.

Each check raises :class:`~absnb.core.errors.InvalidTypeError` or
:class:`~absnb.core.errors.InvalidValueError` with a message that names the argument, the
value given and what is allowed, so a mistake surfaces where it was made rather than as an
``IndexError`` or an ``OSError`` deep inside a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeGuard

from absnb.core.errors import InvalidTypeError, InvalidValueError, OperatorOutputError


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def whole(name: str, value: object, *, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` as a whole number of at least ``minimum`` (and at most ``maximum``: a size
    so large that the run would not finish is refused, not started)."""
    if not _is_int(value):
        raise InvalidTypeError(
            f"{name} must be a whole number of at least {minimum}, not {value!r} "
            f"({type(value).__name__})"
        )
    if value < minimum:
        raise InvalidValueError(
            f"{name} must be a whole number of at least {minimum}, not {value!r}"
        )
    if maximum is not None and value > maximum:
        raise InvalidValueError(
            f"{name} must be at most {maximum:,}, not {value:,}: a run of that size would not "
            "finish; use a smaller one"
        )
    return int(value)


def optional_whole(name: str, value: object, *, minimum: int = 0) -> int | None:
    """None, or a whole number of at least ``minimum``."""
    return None if value is None else whole(f"{name} (or None)", value, minimum=minimum)


def interval(name: str, value: object) -> float | None:
    """A checkpoint interval: None (no periodic checkpoints) or a number above 0."""
    if value is None:
        return None
    if not _is_number(value):
        raise InvalidTypeError(
            f"{name} must be a number above 0, or None for no periodic checkpoints, not "
            f"{value!r} ({type(value).__name__})"
        )
    if not value > 0 or value == float("inf"):
        raise InvalidValueError(
            f"{name} must be a finite number above 0, or None for no periodic checkpoints, "
            f"not {value!r}"
        )
    return value


def positive(name: str, value: object, *, optional: bool = False) -> float | None:
    """A finite number above 0 (or None when ``optional``)."""
    if value is None and optional:
        return None
    allowed = "a number above 0" + (" or None" if optional else "")
    if not _is_number(value):
        raise InvalidTypeError(f"{name} must be {allowed}, not {value!r} ({type(value).__name__})")
    if not value > 0 or value == float("inf"):
        raise InvalidValueError(f"{name} must be {allowed}, not {value!r}")
    return value


def nonnegative(name: str, value: object) -> float:
    """A finite number, 0 or above."""
    if not _is_number(value):
        raise InvalidTypeError(
            f"{name} must be a number, 0 or above, not {value!r} ({type(value).__name__})"
        )
    if not value >= 0 or value == float("inf"):
        raise InvalidValueError(f"{name} must be a finite number, 0 or above, not {value!r}")
    return value


def flag(name: str, value: object) -> bool:
    """True or False (not 0, 1 or "yes")."""
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{name} must be True or False, not {value!r}")
    return value


def choice(name: str, value: object, allowed: Iterable[str]) -> str:
    """One of the names ``allowed``."""
    names = tuple(allowed)
    if not isinstance(value, str) or value not in names:
        raise InvalidValueError(f"{name} must be one of {', '.join(names)}; not {value!r}")
    return value


def text(name: str, value: object) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidTypeError(f"{name} must be a non-empty string, not {value!r}")
    return value


def lines_per_source(name: str, value: object) -> list[list[str]]:
    """One list of lines (strings) per source, e.g. ``[["to be"], ["or not"]]``.

    A flat list of strings is refused: each string would be taken as one source's lines,
    and its characters counted as words.
    """
    example = "e.g. [['to be or', 'not to be'], ['be quick']]"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        raise InvalidTypeError(
            f"{name} must be a non-empty list with one list of lines per source ({example}), "
            f"not {value!r}"
        )
    parts: list[list[str]] = []
    for i, part in enumerate(value):
        if isinstance(part, str | bytes) or not isinstance(part, Sequence):
            raise InvalidTypeError(
                f"{name}[{i}] is {part!r}, but each source needs a list of lines ({example}); "
                f"for one source write {name}=[{list(value)!r}]"
            )
        for line in part:
            if not isinstance(line, str):
                raise InvalidTypeError(
                    f"{name}[{i}] holds {line!r} ({type(line).__name__}): every line must be "
                    "a string"
                )
        parts.append(list(part))
    return parts


def operator_result(fn: Any, method: str, result: Any) -> tuple[Any, Sequence[Any]]:
    """What ``fn.method`` returned, checked: a pair (state, outputs) whose outputs are a list,
    a tuple or another iterable of records, never None, a string (it would be sent character
    by character) or a dict."""
    if type(result) is not tuple or len(result) != 2:
        raise OperatorOutputError(
            f"{type(fn).__name__}.{method} returned {_short(result)}, but it must return a "
            "pair (new state, outputs), e.g. return state, [record]"
        )
    outs = result[1]
    if type(outs) is list or type(outs) is tuple:
        return result
    if outs is None or isinstance(outs, str | bytes | dict) or not isinstance(outs, Iterable):
        raise OperatorOutputError(
            f"{type(fn).__name__}.{method} returned outputs {_short(outs)} "
            f"({type(outs).__name__}), but the outputs must be a list or tuple of records, "
            "e.g. return state, [record] (or [] for none)"
        )
    return result[0], list(outs)


def _short(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
