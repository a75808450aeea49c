"""run_all_cells gives Run All again when a run stops short without an error, and fails
with the run's state when it keeps doing so (a page whose runs are scripted)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e import run_all
from tests.e2e.run_all import (
    DONE_JS,
    FORGET_COUNTS_JS,
    NOTEBOOK_JS,
    RUN_STATE_JS,
    STALLED_JS,
    STARTED_JS,
    run_all_cells,
)

CELLS = 3


class Locator:
    def __init__(self, page: ScriptedPage, label: str) -> None:
        self.page, self.label = page, label

    def count(self) -> int:
        return 0  # no dialog

    def click(self, **options: Any) -> None:
        if "Run All" in self.label:
            self.page.run_all()


class ScriptedPage:
    """A notebook page whose every Run All ends as the next entry of ``outcomes`` says:
    ``"done"`` (every cell ran) or ``"stalled"`` (the first cell ran, the kernel idle)."""

    def __init__(self, outcomes: list[str]) -> None:
        self.outcomes = list(outcomes)
        self.runs = 0
        self.state = {"cells": CELLS, "running": 0, "ran": 0, "errors": 0, "kernel": "idle"}
        self.waited_ms = 0.0
        self.keyboard = self

    def press(self, key: str) -> None:
        pass

    def locator(self, selector: str, has_text: Any = None) -> Locator:
        return Locator(self, has_text.pattern if has_text is not None else selector)

    def run_all(self) -> None:
        self.runs += 1
        outcome = self.outcomes.pop(0)
        self.state.update(ran=CELLS if outcome == "done" else 1, running=0, kernel="idle")

    def _holds(self, script: str) -> bool:
        s = self.state
        if script == STARTED_JS:
            return s["running"] > 0 or s["ran"] > 0
        done = s["running"] == 0 and s["kernel"] == "idle" and s["ran"] == s["cells"]
        stalled = s["running"] == 0 and s["kernel"] == "idle" and 0 < s["ran"] < s["cells"]
        if script == DONE_JS:
            return done
        if script == STALLED_JS:
            return stalled
        assert DONE_JS in script, script
        assert STALLED_JS in script, script
        return done or stalled

    def evaluate(self, script: str) -> Any:
        if script == FORGET_COUNTS_JS:
            self.state["ran"] = 0
            return None
        if script == RUN_STATE_JS:
            return dict(self.state)
        if script == NOTEBOOK_JS:
            return {"ran": self.state["ran"], "runs": self.runs}
        return self._holds(script)

    def wait_for_function(self, script: str, **options: Any) -> None:
        if not self._holds(script):
            raise TimeoutError(script)

    def wait_for_timeout(self, ms: float) -> None:
        self.waited_ms += ms


def test_a_run_that_ends_is_returned_as_it_is() -> None:
    page = ScriptedPage(["done"])
    assert run_all_cells(page, 60) == {"ran": CELLS, "runs": 1}
    assert page.waited_ms == 0  # no pause on the way


def test_a_run_that_stops_short_is_given_again() -> None:
    page = ScriptedPage(["stalled", "stalled", "done"])
    assert run_all_cells(page, 60) == {"ran": CELLS, "runs": 3}
    assert page.waited_ms == 2 * run_all.STALL_S * 1000  # each stall watched before the retry


def test_a_run_that_keeps_stopping_short_fails_with_its_state() -> None:
    page = ScriptedPage(["stalled"] * (run_all.RESTARTS + 1))
    times = run_all.RESTARTS + 1
    with pytest.raises(AssertionError, match=rf"stopped short {times} times: .*'ran': 1"):
        run_all_cells(page, 60)
    assert page.runs == run_all.RESTARTS + 1
