"""How fast a browser draws and zooms the space-time diagram (a benchmark that prints a table).

Run: ``python -m absnb.experiments.diagram_render`` (needs the ``playwright`` wheel and
Debian's ``chromium``; no browser is downloaded). For traces of 1,000 and 5,000 word count
events it writes the figure as a self-contained page (plotly.js inlined, nothing from the
network), opens it in headless Chromium, and times ``Plotly.newPlot`` and one zoom
(``Plotly.relayout``) inside the page.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from absnb.experiments.report import print_table
from absnb.jobs import word_count
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.views.plotlyjs import plotly_js
from absnb.views.timeline import space_time

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
    "--disable-dev-shm-usage",
]  # fmt: skip


def page_for(events: int) -> str:
    """A self-contained page drawing the space-time diagram of a word count trace of
    ``events`` steps, timing ``Plotly.newPlot`` into ``window.t0`` / ``window.t1``."""
    lines = [" ".join(["to be or not"] * 3)] * (events // 20 + 1)
    stepper = Stepper(
        World(word_count([lines, lines]), "abs", checkpoint_interval=25),
        RandomScheduler(seed=1, crash_at=events // 2),
        history=False,
    )
    stepper.run(events)
    fig = space_time(stepper.trace, stepper.world)
    return (
        f"<html><body><script>{plotly_js()}</script>"
        "<div id='fig' style='width:1400px;height:800px'></div>"
        f"<script>const FIGURE = {fig.to_json()};\n"
        "window.t0 = performance.now();\n"
        "Plotly.newPlot('fig', FIGURE.data, FIGURE.layout)"
        ".then(() => { window.t1 = performance.now(); });</script></body></html>"
    )


def timings(events: int, repeat: int) -> tuple[float, float]:
    """Median milliseconds to draw, and to zoom, in headless Chromium."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "diagram.html"
        page_path.write_text(page_for(events))
        draws, zooms = [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            for _ in range(repeat):
                page = browser.new_page(viewport={"width": 1500, "height": 900})
                page.goto(page_path.as_uri())
                page.wait_for_function("window.t1 !== undefined", timeout=120_000)
                draws.append(page.evaluate("window.t1 - window.t0"))
                zooms.append(
                    page.evaluate(
                        "async () => { const s = performance.now();"
                        " await Plotly.relayout('fig', {'xaxis.range': [10, 200]});"
                        " return performance.now() - s; }"
                    )
                )
                page.close()
            browser.close()
    return statistics.median(draws), statistics.median(zooms)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    for events in (1_000, 5_000):
        draw, zoom = timings(events, args.repeat)
        rows.append((f"{events:,} events: draw", f"{draw:.0f} ms"))
        rows.append((f"{events:,} events: zoom", f"{zoom:.0f} ms"))
    print_table(rows)


if __name__ == "__main__":
    main()
