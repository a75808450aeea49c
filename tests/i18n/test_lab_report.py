"""A lab's report speaks the notebook's language: its verdict, parts, statuses and the
counterexample's sentences come from the catalogs (the translated labs show them), and in
English they are what the check always printed."""

from __future__ import annotations

import dataclasses
import re

import pytest

from absnb.i18n import gettext, language
from absnb.labs import check
from absnb.labs.grade import on_spark
from absnb.labs.registry import lab_for
from tests.labs.cyclic_handlers import AcknowledgesAtTheCopy
from tests.labs.handlers import ForgetsToBlock
from tests.labs.marker_handlers import NoChannelState
from tests.labs.sink_handlers import CommitsAtTheSnapshot

SCRIPTS = {"ko": re.compile(r"[\uac00-\ud7a3]"), "zh": re.compile(r"[\u4e00-\u9fff]")}


@pytest.mark.parametrize("lang", ["ko", "zh"])
@pytest.mark.parametrize(
    "handler", [ForgetsToBlock, NoChannelState, AcknowledgesAtTheCopy, CommitsAtTheSnapshot]
)
def test_a_failing_check_is_reported_in_the_language_set(lang: str, handler: type) -> None:
    with language(lang):
        report = check(handler, spark=False)
        text = str(report)
        html = report._repr_html_()
        verdict = report.verdict()
    assert report.failed_part is not None
    assert report.failed_part.part.startswith("a.")  # the data stays English
    counterexample = report.counterexample
    assert counterexample is not None
    # the verdict, the part's name and status, and every sentence of the counterexample
    assert SCRIPTS[lang].search(verdict)
    assert verdict in text
    assert gettext("a. scripted cases at one task", lang) in text
    assert gettext("failed", lang) in text
    assert gettext("The steps:", lang) in text
    # the consistency check's finding (the first line) is in English; the story after it is not
    _finding, *story = counterexample.words
    assert story
    assert all(SCRIPTS[lang].search(w) for w in story)
    assert gettext("a. scripted cases at one task", lang) in html
    assert "Shortest run that shows it" not in text


@pytest.mark.parametrize("handler", [ForgetsToBlock, NoChannelState])
def test_in_english_the_report_is_unchanged(handler: type) -> None:
    text = str(check(handler))
    assert f"{handler.__name__} fails part a. scripted cases at one task." in text
    assert "Shortest run that shows it: " in text
    assert "  The steps:" in text
    assert re.search(r"(Record|Transfer) \S+, the 1st on ", text)


@pytest.mark.parametrize("lang", ["ko", "zh"])
def test_part_d_not_run_is_said_in_the_language_set(lang: str) -> None:
    abs_lab = lab_for(ForgetsToBlock, None)
    sink_lab = dataclasses.replace(lab_for(CommitsAtTheSnapshot, None), spark=None)  # as if none
    with language(lang):
        asked = on_spark(abs_lab, ForgetsToBlock, spark=False, failed=False).lines()[0]
        none = on_spark(sink_lab, CommitsAtTheSnapshot, spark=True, failed=False).lines()[0]
    assert asked.endswith(gettext("skipped by spark=False (--no-spark)", lang))
    assert SCRIPTS[lang].search(none)
    assert "two-phase-commit" in none
    assert gettext("not run", lang) in asked
    assert gettext("not run", lang) in none
