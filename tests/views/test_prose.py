"""Sentences formatted from computed values: shown as Markdown, compared as text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.views import counted, say


def test_a_sentence_is_its_own_markdown_and_its_own_plain_text() -> None:
    sentence = say("**{n:,}** records", n=12_345)
    assert sentence._repr_markdown_() == repr(sentence) == str(sentence) == "**12,345** records"


def test_a_missing_value_fails_instead_of_showing_a_sentence() -> None:
    with pytest.raises(KeyError, match="steps"):
        say("{steps} steps")


def test_a_value_the_template_never_uses_is_refused() -> None:
    with pytest.raises(ValueError, match="never uses done"):
        say("{steps} steps", steps=3, done=1)


@given(st.integers(min_value=0, max_value=10**7))
def test_counted_is_singular_for_one_only(n: int) -> None:
    text = counted(n, "checkpoint")
    assert text.startswith(f"{n:,} ")
    assert text.endswith("checkpoint" if n == 1 else "checkpoints")
    assert counted(n, "copy", "copies").endswith("copy" if n == 1 else "copies")
