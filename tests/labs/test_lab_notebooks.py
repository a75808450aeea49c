"""Each lab notebook, its skeleton filled in with a correct class: every part passes (the
notebook's own check, run as the student runs it), and the notebook itself ships no
solution (its skeleton raises NotImplementedError in every decision)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

import absnb.labs
from tests.labs import cyclic_handlers, handlers, marker_handlers, sink_handlers

LABS = Path(__file__).parents[2] / "notebooks" / "labs"

FILLED = [
    # (notebook, the skeleton class, how many decisions it leaves, a correct class, report)
    ("abs_lab.ipynb", "MyAbs", 2, handlers.SnapshotsBeforeBroadcasting, "my_report"),
    ("abs_lab.ipynb", "MyCyclicAbs", 3, cyclic_handlers.Algorithm2, "my_cyclic_report"),
    (
        "chandy_lamport_lab.ipynb",
        "MyChandyLamport",
        2,
        marker_handlers.MarkersBeforeTheState,
        "my_report",
    ),
    ("two_phase_commit_lab.ipynb", "MySink", 4, sink_handlers.Correct, "my_report"),
]


@pytest.mark.parametrize(("notebook", "name", "decisions", "correct", "report"), FILLED)
def test_a_lab_filled_in_passes_every_part_and_ships_no_solution(
    monkeypatch: pytest.MonkeyPatch,
    notebook: str,
    name: str,
    decisions: int,
    correct: type,
    report: str,
) -> None:
    cells = json.loads((LABS / notebook).read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    (skeleton,) = [c for c in code if c.startswith(f"class {name}(")]
    assert skeleton.count("raise NotImplementedError") == decisions
    _, after = skeleton.split("\n\n\n", 1)  # the class, then the cell's own check
    # part d (Spark) is part d's own tests' business; the check here is parts a to c
    monkeypatch.setattr(absnb.labs, "check", functools.partial(absnb.labs.check, spark=False))
    scope: dict[str, object] = {"Correct": correct}
    for cell in code:
        if cell is skeleton:
            cell = f"class {name}(Correct):\n    pass\n\n\n{after}"
        if "stepper()" in cell:
            continue
        exec(compile(cell, str(LABS / notebook), "exec"), scope)
    found = scope[report]
    assert found.passed, str(found)
    assert [p.status for p in found.parts][:3] == ["passed"] * 3
    assert f"{name} passes the" in str(found)
