"""How fast a browser draws and zooms the space-time diagram (a benchmark that prints a table),
and the static diagram rendered to PNG to look at.

Run: ``python -m absnb.experiments.diagram_render`` (needs the ``playwright`` wheel and
Debian's ``chromium``; no browser is downloaded). For traces of 1,000 and 5,000 word count
events it writes the figure as a self-contained page (plotly.js inlined, nothing from the
network), opens it in headless Chromium, and times ``Plotly.newPlot`` and one zoom
(``Plotly.relayout``) inside the page.

``python -m absnb.experiments.diagram_render --png FOLDER`` instead writes the SVG diagrams
of the teaching runs (seed 001, an inconsistent cut by hand, four accounts, word count with
a crash) as PNG screenshots in browser windows 1280 and 1920 px wide, shown as a notebook
shows them (at their own size, scaled down only if the window is narrower).
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


def svg_to_png(
    svgs: dict[str, str], folder: Path, widths: tuple[int, ...] = (1280, 1920)
) -> list[Path]:
    """Screenshot every SVG document (by name) in headless Chromium windows ``widths``
    pixels wide, shown as an ``<img>`` with ``max-width:100%`` (as in a notebook), as
    ``<name>_<width>.png`` in ``folder``."""
    import base64

    from playwright.sync_api import sync_playwright

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        for width in widths:
            page = browser.new_page(viewport={"width": width, "height": 600})
            for name, svg in svgs.items():
                data = base64.b64encode(svg.encode()).decode()
                page.set_content(
                    "<html><body style='margin:0;background:#fff'>"
                    f"<img id='d' src='data:image/svg+xml;base64,{data}' style='max-width:100%'>"
                    "</body></html>"
                )
                page.wait_for_function("document.getElementById('d').complete")
                path = folder / f"{name}_{width}.png"
                page.locator("#d").screenshot(path=str(path))
                written.append(path)
            page.close()
        browser.close()
    return written


def teaching_svgs() -> dict[str, str]:
    """The static diagrams of the teaching runs, by name."""
    from absnb.core.ids import TaskId
    from absnb.datasets import bank_accounts
    from absnb.jobs import bank_transfer
    from absnb.sim.actions import Action, Deliver, Transfer, TriggerCheckpoint
    from absnb.views.cut import Cut
    from absnb.views.timeline_static import timeline_svg

    job = bank_transfer()
    a, b = job.graph.task("A"), job.graph.task("B")
    ab, ba = job.graph.channel("A->B"), job.graph.channel("B->A")
    seed = Stepper(World(job, "chandy-lamport"))
    script: list[Action] = [
        Transfer(a, b, 1000),
        TriggerCheckpoint(at=a),
        Transfer(b, a, 1000),
        Transfer(b, a, 2000),
        Deliver(ab),
        Deliver(ab),
        Deliver(ba),
    ]
    for action in script:
        seed.step(action)
    out = {"seed_001_step_7": timeline_svg(seed.trace, seed.world, title="Seed 001 at step 7")}
    steps: dict[TaskId, int] = {a: 0, b: 5}
    hand = Cut.before(steps, label="A before step 0, B before step 5")
    out["inconsistent_cut"] = timeline_svg(seed.trace, seed.world, cuts=[hand])
    bank = bank_transfer(accounts=bank_accounts(), transfers=40, seed=1)
    run = Stepper(World(bank, "chandy-lamport", checkpoint_interval=20), RandomScheduler(seed=1))
    run.run()
    out["four_accounts"] = timeline_svg(run.trace, run.world, title="Four accounts")
    wc = Stepper(
        World(word_count(), "abs", checkpoint_interval=5), RandomScheduler(seed=1, crash_at=30)
    )
    wc.run()
    out["word_count_crash"] = timeline_svg(wc.trace, wc.world)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--png", type=Path, help="write the teaching diagrams as PNG here")
    args = parser.parse_args(argv)
    if args.png is not None:
        for path in svg_to_png(teaching_svgs(), args.png):
            print(path)
        return
    rows = []
    for events in (1_000, 5_000):
        draw, zoom = timings(events, args.repeat)
        rows.append((f"{events:,} events: draw", f"{draw:.0f} ms"))
        rows.append((f"{events:,} events: zoom", f"{zoom:.0f} ms"))
    print_table(rows)


if __name__ == "__main__":
    main()
