"""absnb in English, Korean and Chinese, from one source.

The English text is the source: the package's strings (buttons, status lines, legends,
verdicts) are marked with :func:`gettext`, the notebooks' prose is cut into paragraphs, and
both are translated in gettext catalogs (``absnb/locales/<locale>/LC_MESSAGES``), one for
the package and one per notebook. :func:`set_language` picks the language every view and
:func:`absnb.views.say` speaks from then on; ``python -m absnb.i18n`` updates the catalogs
and writes the translated notebooks (:mod:`absnb.i18n.notebooks`).

>>> set_language("ko"); gettext("Step"); set_language("en")
'스텝'
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import ParamSpec, TypeVar

from absnb.i18n.catalogs import LANGUAGES, translations

__all__ = [
    "LANGUAGES",
    "N_",
    "get_language",
    "gettext",
    "in_own_language",
    "language",
    "set_language",
    "speaking",
]

R = TypeVar("R")
"""What a method wrapped by :func:`in_own_language` returns."""
P = ParamSpec("P")
"""The parameters of a method wrapped by :func:`in_own_language`."""

_current = "en"


def set_language(lang: str) -> None:
    """Speak ``lang`` from now on: ``"en"``, ``"ko"`` (한국어) or ``"zh"`` (中文).

    Raises:
        ValueError: ``lang`` is not one of them (the message lists them).
    """
    global _current
    _current = checked(lang)


def get_language() -> str:
    """The language set by :func:`set_language` (``"en"`` until one is set)."""
    return _current


def checked(lang: str) -> str:
    """``lang`` if absnb speaks it.

    Raises:
        ValueError: it does not; the message lists the languages it does.
    """
    if lang not in LANGUAGES:
        known = ", ".join(f"{code!r} ({name})" for code, name in LANGUAGES.items())
        raise ValueError(f"absnb does not speak {lang!r}; pick one of {known}")
    return lang


@contextmanager
def language(lang: str) -> Iterator[None]:
    """Speak ``lang`` inside the ``with`` block, and the language before it after."""
    global _current
    before, _current = _current, checked(lang)
    try:
        yield
    finally:
        _current = before


def speaking(lang: str | None) -> AbstractContextManager[None]:
    """:func:`language` ``(lang)``, or nothing when ``lang`` is None (the language set
    stays): what a widget made with ``lang=`` speaks in, whatever the notebook sets."""
    return language(lang) if lang is not None else nullcontext()


def in_own_language(method: Callable[P, R]) -> Callable[P, R]:
    """A method that runs in its object's ``lang`` (None: the language set)."""

    @functools.wraps(method)
    def speaking_method(*args: P.args, **kwargs: P.kwargs) -> R:
        with speaking(getattr(args[0], "lang", None)):  # args[0]: the method's self
            return method(*args, **kwargs)

    return speaking_method


def gettext(message: str, lang: str | None = None) -> str:
    """``message`` in ``lang`` (the current language when None); the English ``message``
    itself where no reviewed translation exists."""
    lang = _current if lang is None else lang
    if lang == "en":
        return message
    return translations(lang).get(message, message)


def N_(message: str) -> str:
    """``message`` itself, marked for the catalogs: a constant translated where it is
    shown, by :func:`gettext`."""
    return message
