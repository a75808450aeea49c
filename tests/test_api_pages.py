"""Every module of absnb has its place in the book's API reference: a docstring's reference
to a module no page documents would not resolve, and the book is built with -n."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import absnb

DOCS = Path(__file__).resolve().parent.parent / "docs"


def documented() -> set[str]:
    pages = [DOCS / "api.md", *sorted((DOCS / "api").glob("*.md"))]
    return {m for page in pages for m in re.findall(r"automodule:: (\S+)", page.read_text())}


def test_every_module_is_on_a_page_of_the_api_reference() -> None:
    modules = {"absnb"} | {
        m.name
        for m in pkgutil.walk_packages(absnb.__path__, "absnb.")
        if not m.name.endswith("__main__")
    }
    missing = sorted(modules - documented())
    assert missing == [], (
        f"no page of docs/api/ documents {', '.join(missing)}: add an automodule section for "
        "each to its package's page (docs/api/<package>.md), as the others have"
    )
    stale = sorted(documented() - modules)
    assert stale == [], f"docs/api/ documents modules that do not exist: {', '.join(stale)}"
