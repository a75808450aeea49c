"""How fast the widget redraws (a benchmark that prints a table).

Run: ``python -m absnb.experiments.widget_speed [--steps N] [--no-browser]``.

Measures one click of Step on the stepper widget, word count with a checkpoint every 4
steps: the step plus a full redraw (graph SVG through Graphviz, snapshot tables, trace
log and space-time diagram).

* **In the browser** (the figure that counts, issue 11): JupyterLab in a temporary folder,
  Debian's chromium driven by Playwright at 1280x720. Time from the click to the last
  change the click makes in the widget's part of the page (a MutationObserver notes every
  change; the redraw is over when nothing has changed for :data:`QUIET_MS`).
* **In Python**: the click handler alone, no browser (what the kernel spends).
* The space-time diagram alone for long traces.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from absnb.experiments.report import print_table
from absnb.jobs import word_count
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.views.widgets import diagram_svg, stepper_widget

CHROMIUM = os.environ.get("ABSNB_CHROMIUM", "/usr/bin/chromium")
QUIET_MS = 400
"""Milliseconds without a change in the widget after which a redraw is over."""
TOKEN = "absnb-bench"
CELL = (
    "import absnb\n"
    "from absnb.views import stepper_widget\n"
    "widget = stepper_widget(absnb.word_count(), 'abs', seed=2, checkpoint_interval=4, "
    "timeline={timeline})\n"
    "widget"
)

# Click Step, then resolve with the time of the last change in the widget once the page has
# been quiet for QUIET_MS.
CLICK_JS = """([quiet]) => new Promise((resolve) => {
    const root = document.querySelector('.absnb-stepper');
    const button = root.querySelector('.absnb-step');
    let last = 0;
    const observer = new MutationObserver(() => { last = performance.now(); });
    observer.observe(root, {subtree: true, childList: true, characterData: true, attributes: true});
    const start = performance.now();
    button.click();
    const check = () => {
        if (last > 0 && performance.now() - last > quiet) {
            observer.disconnect();
            resolve(last - start);
        } else {
            setTimeout(check, 25);
        }
    };
    setTimeout(check, 25);
})"""


def click_times(steps: int) -> list[float]:
    """Seconds per Step click in Python, on the default word count, checkpoint every 4."""
    widget = stepper_widget(word_count(), "abs", seed=2, checkpoint_interval=4)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        widget.controls.step.click()
        times.append(time.perf_counter() - start)
        if widget.world.is_finished():
            widget.controls.reset.click()
    return times


def diagram_seconds(events: int) -> float:
    """Seconds to build the space-time diagram of a word count trace of ``events`` steps."""
    lines = [" ".join(["to be or not"] * 3)] * (events // 20 + 1)
    job = word_count([lines, lines])
    stepper = Stepper(
        World(job, "abs", checkpoint_interval=25),
        RandomScheduler(seed=1, crash_at=events // 2),
        history=False,
    )
    stepper.run(events)
    start = time.perf_counter()
    diagram_svg(stepper.trace, stepper.world)
    return time.perf_counter() - start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def browser_click_times(steps: int, *, timeline: bool = True) -> list[float]:
    """Seconds from a click on Step to the end of the redraw in chromium (see the module
    docstring). Raises RuntimeError when chromium, playwright or jupyterlab is missing."""
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(f"no chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="absnb-widget-speed-"))
    try:
        notebook = {
            "cells": [
                {"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {},
                 "outputs": [], "source": CELL.format(timeline=timeline)}
            ],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }  # fmt: skip
        (root / "speed.ipynb").write_text(json.dumps(notebook))
        env = dict(
            os.environ,
            HOME=str(root),
            JUPYTER_CONFIG_DIR=str(root / "config"),
            JUPYTER_DATA_DIR=str(root / "data"),
            JUPYTER_RUNTIME_DIR=str(root / "runtime"),
            IPYTHONDIR=str(root / "ipython"),
        )
        port = _free_port()
        with open(root / "lab.log", "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                 f"--port={port}", f"--IdentityProvider.token={TOKEN}",
                 f"--ServerApp.root_dir={root}", "--allow-root", "--LabApp.news_url=None"],
                env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                return _drive(proc, port, steps, sync_playwright)
            finally:
                proc.terminate()
                proc.wait(20)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _drive(
    proc: subprocess.Popen[bytes], port: int, steps: int, sync_playwright: Any
) -> list[float]:
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("JupyterLab did not start") from None
            time.sleep(0.25)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(f"{base}/lab/tree/speed.ipynb?token={TOKEN}&reset")
            page.wait_for_selector(
                ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000
            )
            for _ in range(20):  # the first run can be lost while the kernel connects
                page.locator(".jp-Notebook .jp-CodeCell").first.click()
                page.keyboard.press("Shift+Enter")
                try:
                    page.wait_for_selector(".absnb-stepper .absnb-step", timeout=15_000)
                    break
                except Exception:
                    continue
            page.wait_for_timeout(1_000)
            page.evaluate(CLICK_JS, [QUIET_MS])  # warm up
            return [page.evaluate(CLICK_JS, [QUIET_MS]) / 1e3 for _ in range(steps)]
        finally:
            browser.close()


def _percentile(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * q))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--no-browser", action="store_true", help="skip the browser figure")
    args = parser.parse_args(argv)
    rows = []
    if not args.no_browser:
        for timeline, what in ((True, "with"), (False, "without")):
            label = f"Step + full redraw in the browser, {what} the diagram"
            try:
                times = browser_click_times(args.steps, timeline=timeline)
            except (RuntimeError, ImportError) as e:
                rows.append((label, f"not measured: {e}"))
                continue
            rows.append((f"{label}, median", f"{statistics.median(times) * 1e3:.0f} ms"))
            rows.append(("  90th percentile", f"{_percentile(times, 0.9) * 1e3:.0f} ms"))
    times = click_times(args.steps)
    rows.append(
        (
            "Step + redraw in Python (kernel side), median",
            f"{statistics.median(times) * 1e3:.0f} ms",
        )
    )
    for events in (1_000, 5_000, 20_000):
        secs = statistics.median(diagram_seconds(events) for _ in range(3))
        rows.append((f"space-time diagram of {events:,} events", f"{secs * 1e3:.0f} ms"))
    print_table(rows)


if __name__ == "__main__":
    main()
