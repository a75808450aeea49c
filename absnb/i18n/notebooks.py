"""The notebooks' prose as gettext messages, and the translated notebooks built from them.

A markdown cell is cut into blocks at its blank lines (a fenced code block stays whole);
each block with words in it is one message, located by the notebook, the cell's index and
its id. A code cell's sentences are the literal templates it passes to
:func:`absnb.views.say` and the nouns it passes to :func:`absnb.views.counted`: the code
stays English and the sentence is translated when the cell runs.

A translated notebook (``notebooks/ko/…``, ``notebooks/zh/…``) is the English one with its
markdown translated, a first code cell that sets the language (under the title), the
English code cells, and the outputs of its own last run wherever the code cell is
unchanged.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from absnb.i18n.catalogs import locale_of

__all__ = [
    "Block",
    "blocks",
    "code_messages",
    "language_cell",
    "lines",
    "notebook_messages",
    "read_notebook",
    "translated_notebook",
    "write_notebook",
]

_WORDS = re.compile(r"[A-Za-z]{2}")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKUP = re.compile(r"<[^>]*>|`[^`]*`")


@dataclass(frozen=True, slots=True)
class Block:
    """One message of a notebook: its English text and where it is."""

    text: str
    cell: int
    cell_id: str
    sentence: bool = False
    """A code cell's template for ``say`` (its ``{fields}`` are formatted), not Markdown."""


def read_notebook(path: Path) -> dict[str, Any]:
    """The notebook at ``path`` as nbformat's JSON."""
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


def write_notebook(notebook: dict[str, Any], path: Path) -> None:
    """Write ``notebook`` as nbformat writes it (so that Jupyter's next save is no diff)."""
    text = json.dumps(notebook, sort_keys=True, indent=1, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def source(cell: dict[str, Any]) -> str:
    """A cell's source as one string."""
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def lines(text: str) -> list[str]:
    """``text`` as nbformat stores a cell's source: its lines, each with its newline."""
    return text.splitlines(keepends=True)


def blocks(markdown: str) -> list[str]:
    """``markdown`` cut at its blank lines, a fenced code block kept whole."""
    out: list[list[str]] = [[]]
    fenced = False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        if not line.strip() and not fenced:
            if out[-1]:
                out.append([])
            continue
        out[-1].append(line)
    return ["\n".join(lines) for lines in out if lines]


def translatable(block: str) -> bool:
    """Whether ``block`` has words to translate: a fenced code block has none, and neither
    has a block of HTML tags and inline code only (``</details>``, or ``absnb.core`` in
    backticks)."""
    if _FENCE.match(block):
        return False
    return _WORDS.search(_MARKUP.sub("", block)) is not None


def _strings(node: ast.expr) -> list[str]:
    """The literal strings ``node`` can be: a constant, or either branch of ``a if c else b``."""
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    return [node.value] if isinstance(node, ast.Constant) and isinstance(node.value, str) else []


SENTENCE_CALLS = ("say(", "counted(", "charts_html(")
"""The calls whose literal texts a code cell's catalog holds (see :func:`code_messages`)."""


def code_messages(code: str) -> Iterator[str]:
    """The literal templates ``code`` passes to ``say``, the literal nouns it passes to
    ``counted`` and the literal alt text of a ``charts_html`` picture, in order."""
    lines = [line for line in code.split("\n") if not line.lstrip().startswith(("%", "!"))]
    calls = [node for node in ast.walk(ast.parse("\n".join(lines))) if isinstance(node, ast.Call)]
    for node in sorted(calls, key=lambda call: (call.lineno, call.col_offset)):
        name = getattr(node.func, "id", getattr(node.func, "attr", None))
        if name == "say" and node.args:
            yield from _strings(node.args[0])
        elif name == "counted":
            yield from (text for arg in node.args[1:3] for text in _strings(arg))
        elif name == "charts_html" and len(node.args) >= 3:  # a picture's alt text
            yield from _strings(node.args[2])


def notebook_messages(notebook: dict[str, Any]) -> list[Block]:
    """Every message of ``notebook``: markdown blocks and code cells' sentences, in order."""
    found: list[Block] = []
    for index, cell in enumerate(notebook["cells"]):
        text, cell_id = source(cell), cell.get("id", "")
        if cell["cell_type"] == "markdown":
            found += [Block(b, index, cell_id) for b in blocks(text) if translatable(b)]
        elif cell["cell_type"] == "code" and any(f in text for f in SENTENCE_CALLS):
            found += [Block(m, index, cell_id, sentence=True) for m in code_messages(text)]
    return found


def language_cell(lang: str) -> dict[str, Any]:
    """The first cell of a notebook in ``lang``: it sets absnb's language."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": f"language-{locale_of(lang)}",
        "metadata": {},
        "outputs": [],
        "source": lines(f'import absnb\n\nabsnb.set_language("{lang}")'),
    }


def _translate_markdown(text: str, table: dict[str, str]) -> str:
    parts = [table.get(b, b) if translatable(b) else b for b in blocks(text)]
    return "\n\n".join(parts)


def translated_notebook(
    english: dict[str, Any],
    lang: str,
    table: dict[str, str],
    before: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``english`` in ``lang``: markdown translated with ``table`` (English block → its
    translation), the language set in a first code cell, code cells as in English. Each code
    cell keeps the outputs it has in ``before`` (the translated notebook's last version)
    where its source is unchanged; otherwise its outputs are empty until the notebook runs.
    """
    kept = {
        cell.get("id"): cell
        for cell in (before or {"cells": []})["cells"]
        if cell["cell_type"] == "code"
    }
    cells: list[dict[str, Any]] = []
    for cell in english["cells"]:
        if cell["cell_type"] == "code" and not any(c["cell_type"] == "code" for c in cells):
            cells.append(_with_outputs(language_cell(lang), kept))
        if cell["cell_type"] == "markdown":
            cells.append({**cell, "source": lines(_translate_markdown(source(cell), table))})
        elif cell["cell_type"] == "code":
            cells.append(_with_outputs(cell, kept))
        else:
            cells.append(cell)
    # the notebook's metadata (its widgets' state among it) is its own run's, like outputs
    metadata = before["metadata"] if before is not None else english["metadata"]
    return {**english, "metadata": metadata, "cells": cells}


def _with_outputs(cell: dict[str, Any], kept: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    old = kept.get(cell.get("id"))
    if old is not None and source(old) == source(cell):
        return {
            **cell,
            "outputs": old["outputs"],
            "execution_count": old["execution_count"],
            "metadata": old.get("metadata", {}),
        }
    return {**cell, "outputs": [], "execution_count": None}
