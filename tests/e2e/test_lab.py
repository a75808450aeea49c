"""End to end in a real browser: JupyterLab runs a notebook, a click on Step changes the graph.

A module fixture starts JupyterLab on 127.0.0.1 with a token, with HOME and every Jupyter
and IPython directory in a temporary folder (the notebook is copied there, so the
repository is never written to). Playwright drives Debian's chromium (/usr/bin/chromium,
never a browser fetched by `playwright install`): open the notebook, Run All Cells (retried:
right after load the click can be lost), click the first widget button labelled "Step",
and check that the graph changed.

What "the graph" is, in the page:
    the element with id ``absnb-graph`` (put it in the HTML widget that shows the graph);
    failing that, every SVG of the output area: inline ``<svg>`` in an HTML widget (what
    absnb.views' StepperWidget shows), and images, as SVG outputs render as
    ``<img src="data:image/svg+xml...">`` (``.jp-RenderedSVG img``, or inside a widget).

Without chromium, playwright or jupyterlab the test skips, saying what is missing, unless
ABSNB_REQUIRE_BROWSER=1 (set by .ci/run): then it fails, so CI never passes by skipping.

    python3 -m pytest tests/e2e -q            # about 15-45 s
    ABSNB_E2E_NOTEBOOK=notebooks/00_start_here.ipynb python3 -m pytest tests/e2e -q
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

# The notebooks to drive. Switch to REPO / "notebooks" / "00_start_here.ipynb" once it has a
# Step button and a graph; the fixture stands in until then.
FIXTURE = HERE / "fixture_stepper.ipynb"
NOTEBOOKS = [REPO / "notebooks" / "00_start_here.ipynb"]
if os.environ.get("ABSNB_E2E_NOTEBOOK"):  # an ad-hoc run against another notebook
    NOTEBOOKS = [Path(os.environ["ABSNB_E2E_NOTEBOOK"]).resolve()]

CHROMIUM = os.environ.get("ABSNB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
TOKEN = "absnb-e2e-token"
REQUIRE = os.environ.get("ABSNB_REQUIRE_BROWSER", "") not in ("", "0")

# The graph's signature in the page: what must differ after a click on Step.
GRAPH_SIGNATURE_JS = """() => {
    const graph = document.querySelector('#absnb-graph');
    if (graph) return graph.innerHTML;
    const out = '.jp-OutputArea-output ';
    const inline = document.querySelectorAll(out + '.widget-html svg');
    const images = document.querySelectorAll(
        out + '.jp-RenderedSVG img, ' + out + '.widget-html img, ' + out + '.widget-output img');
    return [
        ...Array.from(inline, (svg) => svg.outerHTML),
        ...Array.from(images, (img) => img.getAttribute('src')),
    ].join('\\n');
}"""


def missing_tools() -> list[str]:
    missing = []
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing.append(f"chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    for module, pip_name in (("playwright", "playwright"), ("jupyterlab", "jupyterlab")):
        if importlib.util.find_spec(module) is None:
            missing.append(f"{pip_name} (pip install -e '.[test]')")
    return missing


def skip_or_fail(reason: str) -> None:
    if REQUIRE:
        pytest.fail(f"ABSNB_REQUIRE_BROWSER is set but {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_all_cells(page, ready, timeout_s: float = 180) -> None:
    """Run > Run All Cells until ``ready`` (a locator) appears.

    Retried: a click made while the kernel is still connecting runs nothing, silently, and a
    kernel restarted by JupyterLab at start-up can raise a "Select Kernel" dialog that
    swallows the run (both seen here). The stored prompts ``[n]`` of a notebook saved with
    outputs say nothing about this run, so only what the run itself draws counts.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        dialog = page.locator(".jp-Dialog .jp-mod-accept")
        if dialog.count():
            dialog.first.click()
        try:
            # The dialog can also appear between the check above and these clicks: it then
            # intercepts them, and the next round accepts it.
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click(
                timeout=5_000
            )
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click(
                timeout=5_000
            )
            ready.wait_for(timeout=20_000)
            return
        except Exception:
            if not dialog.count():  # Escape would dismiss a dialog as "No Kernel"
                page.keyboard.press("Escape")
    raise TimeoutError(f"the notebook did not draw its widget within {timeout_s:.0f} s")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server in an isolated folder; yields (base URL, notebook folder)."""
    missing = missing_tools()
    if missing:
        skip_or_fail("the browser test needs " + ", ".join(missing))
    root = tmp_path_factory.mktemp("lab")
    home, config = root / "home", root / "config"
    # The news toast covers the bottom right of the page and would fetch from the web.
    settings = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    (root / "notebooks").mkdir()
    for folder in (home, root / "data", root / "runtime", root / "ipython"):
        folder.mkdir()
    env = dict(
        os.environ,
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_DATA_DIR=str(root / "data"),
        JUPYTER_RUNTIME_DIR=str(root / "runtime"),
        IPYTHONDIR=str(root / "ipython"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    env.setdefault("ABSNB_DATASETS", str(REPO / "datasets"))  # the copies read the samples
    port = free_port()
    log = open(root / "lab.log", "wb")  # noqa: SIM115 (closed after the server stops)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--allow-root",  # CI and this machine run as root; Lab refuses to start otherwise
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        env=env,
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}; see {root / 'lab.log'}")
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer within 90 s; see {root / 'lab.log'}")
                time.sleep(0.25)
        yield base, root / "notebooks"
    finally:
        proc.terminate()  # this server only, by its PID; it shuts its kernels down
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_step_changes_the_graph(lab, notebook, tmp_path):
    from playwright.sync_api import sync_playwright

    base, folder = lab
    if not notebook.is_file():
        pytest.fail(f"no notebook {notebook}")
    shutil.copy(notebook, folder / notebook.name)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        shot = tmp_path / f"{notebook.stem}-failure.png"
        try:
            page.goto(f"{base}/lab/tree/notebooks/{notebook.name}?token={TOKEN}&reset")
            page.wait_for_selector(
                ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000
            )
            step = page.locator(
                ".jp-OutputArea-output .widget-button", has_text=re.compile(r"^\s*Step\s*$")
            ).first
            run_all_cells(page, step)
            page.wait_for_function(f"() => ({GRAPH_SIGNATURE_JS})() !== ''", timeout=30_000)
            before = page.evaluate(GRAPH_SIGNATURE_JS)
            step.click()
            page.wait_for_function(
                f"(before) => ({GRAPH_SIGNATURE_JS})() !== before", arg=before, timeout=30_000
            )
            after = page.evaluate(GRAPH_SIGNATURE_JS)
        except Exception:
            page.screenshot(path=str(shot), full_page=True)
            log = (folder.parent / "lab.log").read_text(errors="replace")[-3000:]
            pytest.fail(
                f"{notebook.name}: see the screenshot {shot}; page errors: {errors[:5]}; "
                f"JupyterLab log tail:\n{log}"
            )
        finally:
            browser.close()
    assert after != before
    if notebook == FIXTURE:
        assert "step 0" in before
        assert "step 1" in after
