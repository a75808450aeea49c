"""The book's Korean and Chinese catalogs: ``python docs/i18n.py update`` or ``check``.

``update`` extracts the book's paragraphs (Sphinx's gettext builder) and merges them into
``docs/locales/<ko|zh_CN>/LC_MESSAGES/*.po`` with sphinx-intl: a new paragraph is added
untranslated, a changed one keeps its old translation marked fuzzy until it is reviewed,
and a removed one's translation goes with it (no ``#~`` entries are kept).
``check`` lists every paragraph with no reviewed translation and exits 1 if there is one.
The chapters (the notebooks) have catalogs of their own (``python -m absnb.i18n``), and
the API reference is the docstrings, in English: neither is extracted here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from babel.messages.pofile import read_po

DOCS = Path(__file__).resolve().parent
POT = DOCS / "_build" / "gettext"
LOCALES = DOCS / "locales"
LANGUAGES = ("ko", "zh_CN")
SKIPPED = ("api.pot", "api", "glossary.pot")
"""Templates of pages not translated through these catalogs: the API reference (``api.md``
and the module pages in ``api/``: the docstrings, in English) and the glossary
(written in the three languages)."""
_CODE = re.compile(r"`[^`]*`")
_WORDS = re.compile(r"[A-Za-z]{2}")
COMMAND = "python docs/i18n.py update, translate the entries it names, then check again"


def extract() -> list[Path]:
    """Build the book's message templates; the ones translated here."""
    shutil.rmtree(POT, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "gettext", str(DOCS), str(POT)], check=True
    )
    shutil.rmtree(POT / "notebooks", ignore_errors=True)
    for name in SKIPPED:
        if (POT / name).is_dir():
            shutil.rmtree(POT / name)
        else:
            (POT / name).unlink(missing_ok=True)
    return sorted(POT.rglob("*.pot"))


def update() -> None:
    """Merge the book's paragraphs into every language's catalogs."""
    extract()
    languages = [arg for lang in LANGUAGES for arg in ("-l", lang)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx_intl",
            "update",
            "-p",
            str(POT),
            "-d",
            str(LOCALES),
            "--no-obsolete",
            *languages,
        ],
        check=True,
        cwd=DOCS,
    )


def has_words(message: str) -> bool:
    """Whether ``message`` has words outside its code (`` `absnb.core` `` alone has none:
    the English is shown, as it would be translated)."""
    return _WORDS.search(_CODE.sub("", message)) is not None


def problems() -> list[str]:
    """Every paragraph of the book with no reviewed translation, by language and page."""
    found = []
    for pot in extract():
        page = pot.relative_to(POT).with_suffix("")
        with pot.open("rb") as file:
            template = read_po(file)
        for lang in LANGUAGES:
            po = LOCALES / lang / "LC_MESSAGES" / page.with_suffix(".po")
            catalog = read_po(po.open("rb"), locale=lang) if po.exists() else None
            for message in template:
                if not message.id or not has_words(str(message.id)):
                    continue
                have = catalog.get(message.id) if catalog is not None else None
                words = " ".join(str(message.id).split()[:8])
                if have is None or not have.string:
                    found.append(f"{lang}: docs/{page}.md: no translation of “{words}…”")
                elif have.fuzzy:
                    found.append(f"{lang}: docs/{page}.md: “{words}…” is not reviewed")
    return found


def main(argv: list[str]) -> int:
    """``update`` or ``check``; the exit status."""
    if argv == ["update"]:
        update()
        return 0
    if argv == ["check"]:
        found = problems()
        print("\n".join(found) or "every paragraph of the book is translated")
        if found:
            print(f"{len(found)} problems; to fix them: {COMMAND}", file=sys.stderr)
        return 1 if found else 0
    print("usage: python docs/i18n.py update|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
