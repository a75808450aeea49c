"""What a notebook's stored outputs hold: what the browser test expects to see of them."""

from __future__ import annotations

import json
from pathlib import Path


def expected_pictures(notebook: Path) -> list[int]:
    """Per code cell: how many stored outputs must show a picture (graphs, widgets, SVG)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    counts = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        n = 0
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html = "".join(data.get("text/html", ""))
            if (
                "application/vnd.jupyter.widget-view+json" in data
                or "image/svg+xml" in data
                or "image/png" in data
                or "absnb-picture" in html
            ):
                n += 1
        counts.append(n)
    return counts


def expected_widgets(notebook: Path) -> int:
    """How many widget outputs the notebook stores (each must render after Run All)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    widget_text = ("stepper widget:", "side-by-side panes")
    return sum(
        "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        or "".join(o.get("data", {}).get("text/plain", "")).startswith(widget_text)
        for c in cells
        for o in c.get("outputs", [])
    )
