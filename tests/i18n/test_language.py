"""One switch for the language: every view and sentence speaks it, and English is the
default and the fallback."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import absnb
from absnb.i18n import get_language, gettext, language
from absnb.i18n.catalogs import translations
from absnb.views import counted, say

ROOT = Path(__file__).resolve().parents[2]


def test_set_language_refuses_an_unknown_language_and_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"'ko' \(한국어\), 'zh' \(中文\)"):
        absnb.set_language("fr")
    assert get_language() == "en"


def test_the_language_set_is_spoken_and_restored() -> None:
    with language("ko"):
        assert gettext("Step ▶") == translations("ko")["Step ▶"] != "Step ▶"
        with language("zh"):
            assert gettext("Step ▶") == translations("zh")["Step ▶"]
        assert get_language() == "ko"
    assert get_language() == "en"
    assert gettext("Step ▶") == "Step ▶"


def test_a_message_with_no_translation_is_shown_in_english() -> None:
    with language("zh"):
        assert gettext("a sentence no catalog holds") == "a sentence no catalog holds"


def test_say_formats_the_translation_of_its_template() -> None:
    template = "checkpoint {n} triggered at step {triggered} and completed at step {completed}"
    with language("ko"):
        text = say(template, n=1, triggered=5, completed=24)
    assert text == translations("ko")[template].format(n=1, triggered=5, completed=24)
    assert "24" in text
    assert "checkpoint" in text


@given(st.integers(min_value=0, max_value=10**6))
def test_counted_has_no_plural_in_korean_and_chinese(n: int) -> None:
    with language("ko"):
        assert counted(n, "checkpoint") == f"checkpoint {n:,}개"
    with language("zh"):
        assert counted(n, "checkpoint") == f"{n:,} 个检查点"


def _assigns_underscore(tree: ast.AST) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id == "_" and isinstance(node.ctx, ast.Store)
    ]


def test_no_module_that_translates_with_underscore_also_assigns_it() -> None:
    """``x, _ = …`` in a function that calls ``_("…")`` makes ``_`` a float there."""
    found = []
    for path in sorted((ROOT / "absnb").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "gettext as _" in text:
            found += [f"{path.relative_to(ROOT)}:{n}" for n in _assigns_underscore(ast.parse(text))]
    assert found == []
