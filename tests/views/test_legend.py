"""The in-graph legend names what the protocol can draw, and nothing it cannot."""

from __future__ import annotations

import re

import pytest

import absnb
from absnb.views.legend import legend

WORDS = ("aligning", "state taken", "halted", "blocked", "recorded", "barrier", "marker")

EXPECTED = {
    "abs": {"aligning", "state taken", "blocked", "barrier"},
    "abs-cyclic": {"aligning", "state taken", "blocked", "recorded", "barrier"},
    "abs-timeout": {"aligning", "state taken", "blocked", "recorded", "barrier"},
    "at-least-once": {"aligning", "state taken", "barrier"},
    "unaligned": {"state taken", "recorded", "barrier"},
    "chandy-lamport": {"state taken", "recorded", "marker"},
    "synchronous": {"aligning", "halted", "blocked", "recorded", "barrier"},
    "none": set(),
}


@pytest.mark.parametrize(("protocol", "words"), sorted(EXPECTED.items()))
def test_legend_shows_what_the_protocol_draws(protocol: str, words: set[str]) -> None:
    text = re.sub(r"<[^>]+>", " ", legend(absnb.World(absnb.word_count(), protocol)))
    shown = {w for w in WORDS if re.search(rf"\b{w}\b", text)}
    assert shown == words
    assert "not in a snapshot" in text
    assert "failed" in text
