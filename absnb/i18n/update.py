"""Keep the catalogs and the translated notebooks in step with the English source.

``python -m absnb.i18n update`` extracts the messages (the package's strings marked with
``gettext``/``_``, each notebook's paragraphs and sentences) and merges them into every
catalog: a new message is added untranslated, a changed one keeps its old translation
marked fuzzy (to be reviewed), a removed one is dropped. ``python -m absnb.i18n build``
writes ``notebooks/<lang>/`` from the catalogs; ``python -m absnb.i18n check`` lists what is
missing, unreviewed or stale, and fails if anything is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import write_po

from absnb.i18n.catalogs import LANGUAGES, LOCALES, locale_of, read_catalog
from absnb.i18n.notebooks import (
    notebook_messages,
    read_notebook,
    source,
    translated_notebook,
    write_notebook,
)

__all__ = ["COMMAND", "build", "problems", "translated_path", "update"]

PACKAGE = LOCALES.parent
NOTEBOOKS = PACKAGE.parent / "notebooks"
COMMAND = (
    "python -m absnb.i18n update, translate the entries it names, then python -m absnb.i18n build"
)
"""What brings the catalogs and translated notebooks up to date (named by every problem)."""

SENTENCE = "a say() template: its translation keeps every {field}"
"""The comment that marks a code cell's sentence in a catalog (Markdown has no fields)."""
TRANSLATED = tuple(code for code in LANGUAGES if code != "en")
LABS = "labs"
"""The labs' folder under notebooks/ and under each ``notebooks/<lang>/``."""
_FIELD = re.compile(r"\{(\w*)[^{}]*\}")


def english_notebooks() -> list[Path]:
    """The English notebooks, the source of the translated ones: the course's chapters at
    the top of notebooks/, then every lab in notebooks/labs/ (a new lab is included)."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted(NOTEBOOKS.glob(f"{LABS}/*.ipynb"))


def relative(english: Path) -> Path:
    """``english``'s place under notebooks/ (``02_abs_word_count.ipynb``,
    ``labs/abs_lab.ipynb``): the translation's place under ``notebooks/<lang>/`` too."""
    return english.relative_to(NOTEBOOKS)


def catalog_name(english: Path) -> str:
    """The name of ``english``'s catalog, relative to ``LC_MESSAGES``
    (``notebooks/labs/abs_lab.po`` for a lab)."""
    return f"notebooks/{relative(english).with_suffix('.po').as_posix()}"


def translated_path(lang: str, english: Path) -> Path:
    """Where ``english`` in ``lang`` is: ``notebooks/<lang>/`` and its place under
    notebooks/ (a lab's in ``notebooks/<lang>/labs/``)."""
    return NOTEBOOKS / lang / relative(english)


def _catalog(lang: str | None = None) -> Catalog:
    return Catalog(
        locale=locale_of(lang) if lang else None,
        project="absnb",
        version="",
        msgid_bugs_address="",
        copyright_holder="",
        fuzzy=False,
    )


def package_template() -> Catalog:
    """The package's strings: every literal passed to ``gettext``, ``_`` or ``N_`` (marked,
    translated where shown) in ``absnb/``."""
    template = _catalog()
    keywords: dict[str, None] = {"_": None, "gettext": None, "N_": None}
    for file, line, message, comments, _context in extract_from_dir(
        PACKAGE, [("**.py", "python")], keywords=keywords
    ):
        if isinstance(message, str):
            template.add(message, locations=[(f"absnb/{file}", line)], auto_comments=comments)
    return template


def notebook_template(path: Path) -> Catalog:
    """One notebook's messages, each located by the notebook and its cell's index and id."""
    template = _catalog()
    for block in notebook_messages(read_notebook(path)):
        template.add(
            block.text,
            locations=[(relative(path).as_posix(), block.cell)],
            auto_comments=[f"cell {block.cell}, id {block.cell_id}"]
            + ([SENTENCE] if block.sentence else []),
        )
    return template


def templates() -> Iterator[tuple[str, Catalog]]:
    """Each catalog's name (relative to ``LC_MESSAGES``) and its template."""
    yield "absnb.po", package_template()
    for path in english_notebooks():
        yield catalog_name(path), notebook_template(path)


def catalog_path(lang: str, name: str) -> Path:
    """Where the catalog ``name`` of ``lang`` is."""
    return LOCALES / locale_of(lang) / "LC_MESSAGES" / name


def update(langs: tuple[str, ...] = TRANSLATED, only: tuple[str, ...] = ()) -> list[Path]:
    """Merge the English messages into every catalog of ``langs`` (``only``: the catalogs of
    those names, such as ``absnb.po``); the catalogs written."""
    written = []
    for name, template in templates():
        if only and name not in only and Path(name).stem not in only:
            continue
        for lang in langs:
            path = catalog_path(lang, name)
            catalog = read_catalog(path, lang) if path.exists() else _catalog(lang)
            catalog.update(template, update_creation_date=False)
            catalog.obsolete.clear()
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("wb") as file:
                write_po(file, catalog, width=88, omit_header=False, sort_output=False)
            written.append(path)
    return written


def reviewed(lang: str, name: str) -> dict[str, str]:
    """The reviewed translations in the catalog ``name`` of ``lang``."""
    path = catalog_path(lang, name)
    if not path.exists():
        return {}
    return {
        str(m.id): str(m.string)
        for m in read_catalog(path, lang)
        if m.id and m.string and not m.fuzzy
    }


def build(langs: tuple[str, ...] = TRANSLATED) -> list[Path]:
    """Write ``notebooks/<lang>/`` from the catalogs; the notebooks written."""
    written = []
    for path in english_notebooks():
        for lang in langs:
            out = translated_path(lang, path)
            before = read_notebook(out) if out.exists() else None
            table = reviewed(lang, catalog_name(path))
            notebook = translated_notebook(read_notebook(path), lang, table, before)
            out.parent.mkdir(parents=True, exist_ok=True)
            write_notebook(notebook, out)
            written.append(out)
    return written


def problems(lang: str) -> list[str]:
    """Everything that keeps ``lang`` from being current: messages with no translation or
    an unreviewed (fuzzy) one, translations whose format fields differ from the English,
    and translated notebooks that differ from what :func:`build` would write."""
    found = []
    for name, template in templates():
        found += catalog_problems(lang, name, template)
    for path in english_notebooks():
        found += notebook_problems(lang, path)
    return found


def catalog_problems(lang: str, name: str, template: Catalog) -> list[str]:
    """What the catalog ``name`` of ``lang`` lacks against its English ``template``."""
    path = catalog_path(lang, name)
    catalog = read_catalog(path, lang) if path.exists() else _catalog(lang)
    found = []
    for message in template:
        if not message.id:
            continue
        places = message.locations
        where = ", ".join(
            f"{file}:{line}" if name == "absnb.po" else f"{file} cell {line}"
            for file, line in places
        )
        words = " ".join(str(message.id).split()[:8])
        have = catalog.get(message.id)
        if have is None or not have.string:
            found.append(f"{lang}: {where}: no translation of “{words}…”")
        elif have.fuzzy:
            found.append(f"{lang}: {where}: the translation of “{words}…” is not reviewed")
        elif formatted(name, message) and fields(str(message.id)) != fields(str(have.string)):
            found.append(f"{lang}: {where}: the translation of “{words}…” has other fields")
    return found


def formatted(name: str, message: Message) -> bool:
    """Whether ``message`` of the catalog ``name`` is formatted with ``str.format``: every
    string of the package's catalog, and a notebook's ``say()`` templates (not Markdown)."""
    return name == "absnb.po" or SENTENCE in message.auto_comments


def fields(text: str) -> list[str]:
    """The ``str.format`` fields ``text`` names, sorted, each once (a translation must name
    the same, each as often as its sentence needs)."""
    return sorted(set(_FIELD.findall(text)))


def notebook_problems(lang: str, english: Path) -> list[str]:
    """How ``notebooks/<lang>/`` differs from what :func:`build` would write for ``english``."""
    out = translated_path(lang, english)
    shown = out.relative_to(NOTEBOOKS.parent)
    if not out.exists():
        return [f"{lang}: {shown} is missing"]
    table = reviewed(lang, catalog_name(english))
    stored = read_notebook(out)
    fresh = translated_notebook(read_notebook(english), lang, table, stored)
    found = [
        f"{lang}: {shown} cell {index} differs from its English source and catalog"
        for index, (a, b) in enumerate(zip(stored["cells"], fresh["cells"], strict=False))
        if source(a) != source(b) or a["cell_type"] != b["cell_type"]
    ]
    if len(stored["cells"]) != len(fresh["cells"]):
        found.append(f"{lang}: {shown} has other cells than its English source")
    return found
