"""The translations are current: every English message has a reviewed translation with the
same fields, and every translated notebook is what its English source and catalog make."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.i18n import update as i18n
from absnb.i18n.notebooks import (
    blocks,
    code_messages,
    read_notebook,
    source,
    translatable,
    write_notebook,
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {"ko": re.compile(r"[\uac00-\ud7a3]"), "zh": re.compile(r"[\u4e00-\u9fff]")}


@pytest.mark.parametrize("lang", i18n.TRANSLATED)
def test_every_translation_is_current(lang: str) -> None:
    problems = i18n.problems(lang)
    assert problems == [], f"{len(problems)} problems; to fix them: {i18n.COMMAND}\n" + "\n".join(
        problems
    )


@pytest.fixture
def copy_of_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The notebooks and catalogs copied to ``tmp_path``, and absnb.i18n pointed at them."""
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    shutil.copytree(i18n.LOCALES, tmp_path / "locales")
    monkeypatch.setattr(i18n, "NOTEBOOKS", tmp_path / "notebooks")
    monkeypatch.setattr(i18n, "LOCALES", tmp_path / "locales")
    return tmp_path


def test_a_changed_english_sentence_is_named_with_its_cell_and_the_fix(
    copy_of_the_sources: Path,
) -> None:
    path = copy_of_the_sources / "notebooks" / "03_cyclic_dataflows.ipynb"
    notebook = read_notebook(path)
    index, cell = next(
        (i, c) for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "markdown"
    )
    cell["source"] = source(cell).replace(" ", "  ", 1) + "\n\nA new paragraph."
    write_notebook(notebook, path)
    for lang in i18n.TRANSLATED:
        found = i18n.problems(lang)
        assert (
            f"{lang}: 03_cyclic_dataflows.ipynb cell {index}: no translation of “A new paragraph.…”"
            in found
        )
        # the translated notebook no longer matches its source either (the edited cell is
        # the first, above the language cell)
        assert any(f"{lang}/03_cyclic_dataflows.ipynb cell {index} differs" in p for p in found)
    # updating keeps the old translation of the edited paragraph, marked for review
    i18n.update()
    stale = [p for p in i18n.problems("ko") if "is not reviewed" in p]
    assert stale
    assert all(f"03_cyclic_dataflows.ipynb cell {index}" in p for p in stale)


def test_an_unreviewed_translation_is_not_shipped(copy_of_the_sources: Path) -> None:
    po = (
        copy_of_the_sources / "locales" / "zh_CN" / "LC_MESSAGES" / "notebooks" / "00_start_here.po"
    )
    text = po.read_text(encoding="utf-8")
    first = text.index("\n#: 00_start_here.ipynb")
    po.write_text(text[:first] + "\n#, fuzzy" + text[first:], encoding="utf-8")
    assert any("is not reviewed" in p for p in i18n.problems("zh"))
    built = read_notebook(i18n.build(("zh",))[0])
    title = source(built["cells"][0]).split("\n")[0]
    assert title == "# Start here: distributed snapshots you can step through"


@pytest.mark.parametrize("lang", i18n.TRANSLATED)
def test_no_english_prose_is_left_in_a_translated_notebook(lang: str) -> None:
    """Every block with words in it has the language's script (code, names and quoted
    output excepted: they are inside a block that also has translated words)."""
    english_only = []
    for path in sorted((ROOT / "notebooks" / lang).rglob("*.ipynb")):
        for index, cell in enumerate(read_notebook(path)["cells"]):
            if cell["cell_type"] != "markdown":
                continue
            for block in blocks(source(cell)):
                if translatable(block) and not SCRIPTS[lang].search(block):
                    english_only.append(f"{path.name} cell {index}: {block[:60]!r}")
    assert english_only == []


def test_the_translated_notebooks_run_the_english_code() -> None:
    for english in i18n.english_notebooks():
        code = [source(c) for c in read_notebook(english)["cells"] if c["cell_type"] == "code"]
        for lang in i18n.TRANSLATED:
            cells = read_notebook(i18n.translated_path(lang, english))["cells"]
            theirs = [source(c) for c in cells if c["cell_type"] == "code"]
            assert theirs[0] == f'import absnb\n\nabsnb.set_language("{lang}")'
            assert theirs[1:] == code


def test_every_code_cell_of_a_translated_notebook_has_its_run_s_outputs() -> None:
    """A translated notebook is shipped executed: a code cell with outputs in English has
    outputs in the translation too (from its own run, in its language)."""
    missing = []
    for english in i18n.english_notebooks():
        ours = [c for c in read_notebook(english)["cells"] if c["cell_type"] == "code"]
        for lang in i18n.TRANSLATED:
            cells = read_notebook(i18n.translated_path(lang, english))["cells"]
            theirs = [c for c in cells if c["cell_type"] == "code"][1:]
            missing += [
                f"{lang}/{i18n.relative(english)}: {source(a)[:40]!r}"
                for a, b in zip(ours, theirs, strict=True)
                if a["outputs"] and not b["outputs"]
            ]
    assert missing == []


@given(
    st.lists(st.text(alphabet=st.sampled_from("ab `#-*\n"), min_size=1, max_size=30), max_size=6)
)
def test_blocks_keep_every_line_but_the_blank_ones(parts: list[str]) -> None:
    markdown = "\n\n".join(parts)
    kept = [line for b in blocks(markdown) for line in b.split("\n")]
    fenced = [line for line in markdown.split("\n") if line.strip() or "```" in markdown]
    assert [line for line in kept if line.strip()] == [line for line in fenced if line.strip()]


def test_a_fenced_block_is_one_block_and_not_translated() -> None:
    markdown = "Run this:\n\n```python\nx = 1\n\ny = 2\n```\n\nThen that."
    assert blocks(markdown) == ["Run this:", "```python\nx = 1\n\ny = 2\n```", "Then that."]
    assert [translatable(b) for b in blocks(markdown)] == [True, False, True]


def test_every_lab_is_translated_beside_the_chapters() -> None:
    """Each lab of notebooks/labs/ (a new one included) has its catalog and its notebook in
    every language, in ``labs/`` beside the language's chapters, where notebook 00 links it."""
    labs = sorted((ROOT / "notebooks" / "labs").glob("*.ipynb"))
    assert labs
    assert set(labs) <= set(i18n.english_notebooks())
    for lab in labs:
        for lang in i18n.TRANSLATED:
            assert i18n.translated_path(lang, lab) == ROOT / "notebooks" / lang / "labs" / lab.name
            assert i18n.translated_path(lang, lab).exists()
            assert i18n.catalog_path(lang, f"notebooks/labs/{lab.stem}.po").exists()
            start = source_of(ROOT / "notebooks" / lang / "00_start_here.ipynb")
            assert f"](labs/{lab.name})" in start
            assert "](../labs/" not in start


def source_of(notebook: Path) -> str:
    """Every markdown cell of ``notebook``, as one text."""
    cells = read_notebook(notebook)["cells"]
    return "\n".join(source(c) for c in cells if c["cell_type"] == "markdown")


def test_sentences_are_say_templates_counted_nouns_and_pictures_alt_texts() -> None:
    code = (
        'say("a {x}" if c else "b {x}", x=counted(2, "copy", "copies"))\n'
        "%time say(template)\n"
        'views.say("c")\n'
        'HTML(charts_html(table, PANELS, "a picture"))'
    )
    assert list(code_messages(code)) == ["a {x}", "b {x}", "copy", "copies", "c", "a picture"]


def test_no_catalog_keeps_the_translation_of_a_paragraph_that_is_gone() -> None:
    """Obsolete (``#~``) entries translate text no longer in the book or a notebook (old
    tables of measurements, among them): the updates drop them (``python docs/i18n.py
    update`` passes sphinx-intl ``--no-obsolete``)."""
    from babel.messages.pofile import read_po

    catalogs = sorted((ROOT / "docs" / "locales").rglob("*.po")) + sorted(
        i18n.LOCALES.rglob("*.po")
    )
    assert len(catalogs) > 20
    kept = []
    for path in catalogs:
        with path.open("rb") as file:
            if read_po(file).obsolete:
                kept.append(str(path.relative_to(ROOT)))
    assert kept == []
