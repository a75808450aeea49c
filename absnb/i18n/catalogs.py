"""The gettext catalogs: where they are and what a language's translations are.

``absnb/locales/<locale>/LC_MESSAGES/absnb.po`` holds the package's strings, and
``…/notebooks/<notebook>.po`` each notebook's paragraphs and sentences (a lab's in
``…/notebooks/labs/<lab>.po``). A translation
marked fuzzy (its English changed since it was written, or it is not yet reviewed) is
never used: the English shows instead, and the catalog check fails until it is updated.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

__all__ = ["LANGUAGES", "LOCALES", "catalog_paths", "locale_of", "read_catalog", "translations"]

LANGUAGES = {"en": "English", "ko": "한국어", "zh": "中文"}
"""The languages absnb speaks, by the code :func:`absnb.set_language` takes."""

LOCALES = Path(__file__).resolve().parent.parent / "locales"
"""The catalogs' folder, inside the package so that a wheel carries them."""

_LOCALE = {"ko": "ko", "zh": "zh_CN"}


def locale_of(lang: str) -> str:
    """The gettext locale of a translated language: ``"ko"`` or ``"zh_CN"``."""
    return _LOCALE[lang]


def catalog_paths(lang: str) -> list[Path]:
    """Every catalog of ``lang``: the package's first, then the notebooks' by name (the
    labs' in ``notebooks/labs/`` after the chapters')."""
    folder = LOCALES / locale_of(lang) / "LC_MESSAGES"
    notebooks = folder / "notebooks"
    return [folder / "absnb.po", *sorted(notebooks.glob("*.po")), *sorted(notebooks.glob("*/*.po"))]


def read_catalog(path: Path, lang: str) -> Catalog:
    """The catalog at ``path`` (a translation into ``lang``)."""
    with path.open("rb") as file:
        return read_po(file, locale=locale_of(lang), abort_invalid=True)


@cache
def translations(lang: str) -> dict[str, str]:
    """English message → its reviewed translation into ``lang``, from all its catalogs
    (fuzzy and empty entries left out)."""
    found: dict[str, str] = {}
    for path in catalog_paths(lang):
        if path.exists():
            for message in read_catalog(path, lang):
                if message.id and message.string and not message.fuzzy:
                    found[str(message.id)] = str(message.string)
    return found
