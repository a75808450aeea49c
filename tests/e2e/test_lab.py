"""End to end in a real browser: every notebook as a class meets it, at 1280x720 and 1920x1080.

A session fixture starts JupyterLab on 127.0.0.1 with a token, with HOME and every Jupyter
and IPython directory in a temporary folder; each notebook is copied there (a fresh clone:
never trusted, never run), so the repository is never written to. Playwright drives
Debian's chromium (/usr/bin/chromium, never a browser fetched by `playwright install`).

For every notebook in notebooks/ and notebooks/labs/ (globs: a new notebook is included):

1. **Untrusted**, at 1280x720 and at 1920x1080: every stored output that matters (a graph,
   a widget, an SVG) shows a picture (an ``<img>`` or ``<svg>``), and no
   output shows the text of a Python object instead (``VBox(``, ``<GraphView``). JupyterLab
   shows neither raw SVG nor plotly nor widgets untrusted: a stored output needs a PNG or
   an ``<img>`` in ``text/html`` (:mod:`absnb.views.pictures`).
2. **Run All**, every notebook (Spark's included): every code cell runs, no error output,
   every widget renders. This run is the notebook's one execution in the suite: nbval's
   items for the notebook compare its outputs with the stored ones instead of running the
   notebook again (:mod:`tests.e2e.recorded_runs`; conftest.py runs them after this test).
3. **Drive every widget** at both sizes: Step (the button and the → key), Back, the go-to
   slider, Crash (which must say what comes next) and Recover; compare's panes step
   together. At 1280x720 every node of every widget's graph is on screen at once, uncovered
   (a compare view's side-by-side panes with its Step button). After each action, from the
   DOM: every graph node lies inside its cell's output and the viewport's width, and node
   labels are at least :data:`MIN_LABEL_PX` high. No stored output has stderr.

Screenshots go to tests/e2e/screenshots/ (ignored by git; the path is printed), with stable
names: ``<notebook>-<width>x<height>-<phase>.png``, phases ``untrusted``, ``run`` (the first
widget after Run All, else the first picture) and, for a notebook with widgets, ``driven``
(after the last action on them) and ``scrolled`` (the bottom of the first widget's graph
scrolled into view: its Step and Back stay on screen above it).

With ``-s`` each test prints how long each of its phases took (starting the browser,
opening the notebook, the untrusted checks at each size, Run All, driving the widgets at
each size, closing) and its screenshots in all: where a slow test spends its time.

Without chromium, playwright or jupyterlab the test skips, saying what is missing, unless
ABSNB_REQUIRE_BROWSER=1 (set by .ci/run): then it fails, so CI never passes by skipping.

    python3 -m pytest tests/e2e notebooks -q -s    # the notebooks' nbval items included
    ABSNB_E2E_NOTEBOOK=notebooks/00_start_here.ipynb python3 -m pytest tests/e2e -q -s
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from absnb.i18n import gettext
from tests.e2e.page_scripts import (
    CONTROLS_STAY_JS,
    GEOMETRY_JS,
    GRAPHS_JS,
    LABELS_JS,
    OUTPUTS_JS,
    VISIBLE_JS,
)
from tests.e2e.recorded_runs import record
from tests.e2e.run_all import PANEL, POLL_MS, check_all_ran, run_all_cells
from tests.e2e.stored_outputs import expected_pictures, expected_widgets

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCREENSHOTS = HERE / "screenshots"

TRANSLATED = (
    REPO / "notebooks" / "ko" / "00_start_here.ipynb",
    REPO / "notebooks" / "zh" / "02_abs_word_count.ipynb",
    REPO / "notebooks" / "zh" / "labs" / "abs_lab.ipynb",
)
"""One Korean and one Chinese notebook, each with a stepper, and a Chinese lab with the
stepper of its counterexample: their buttons, graphs and legends in the notebook's
language, drawn whole (:func:`check_labels`)."""
LABS = sorted((REPO / "notebooks" / "labs").glob("*.ipynb"))
"""The labs (notebooks/labs/): a checker's report and a stepper opened at its counterexample."""
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + list(TRANSLATED) + LABS
if os.environ.get("ABSNB_E2E_NOTEBOOK"):  # an ad-hoc run against another notebook
    NOTEBOOKS = [Path(os.environ["ABSNB_E2E_NOTEBOOK"]).resolve()]
RUN_ALL_TIMEOUT_S = 600.0
"""The longest a notebook's Run All may take: a wait on the notebook's model, so a quick
notebook does not wait for it. The slowest browser test, 07's, took 2 minutes in all in
three workers on two cores; 10 minutes leaves a stuck run room to fail within CI's 30."""
VIEWPORTS = ((1280, 720), (1920, 1080))
MIN_LABEL_PX = 18.0
FORBIDDEN = ("VBox(", "HBox(", "<GraphView", "<TransactionsView", "Error displaying widget")
"""Text that means an output shows a Python object or a dead widget, not a picture."""

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


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A JupyterLab server in an isolated folder; yields (base URL, notebook folder). One for
    the run: a notebook's nbval items run between two browser tests (conftest.py), which
    would end a module's server and start another."""
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
    # Every cell in the page (no windowing), so every output can be measured.
    notebook_settings = config / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    notebook_settings.mkdir(parents=True)
    (notebook_settings / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"})
    )
    (root / "notebooks").mkdir()
    # The notebooks read ../datasets (01's replay of a trace) as they do in the repository.
    (root / "datasets").symlink_to(REPO / "datasets", target_is_directory=True)
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
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: tests/e2e/run_all.py
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
                time.sleep(0.1)
        yield base, root / "notebooks"
    finally:
        proc.terminate()  # this server only, by its PID; it shuts its kernels down
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


# -- what the page shows: the scripts run in the page are in page_scripts.py ------------


def check_outputs(page, notebook: Path, where: str, expected: list[int] | None) -> None:
    """No Python object's text, no error; with ``expected`` (the stored outputs, untrusted):
    the pictures expected, and no stderr at all (log lines of the JVM, Spark or anything
    else belong in a log file, not in front of a class)."""
    cells = page.evaluate(OUTPUTS_JS)
    problems = []
    for i, cell in enumerate(cells):
        if expected is not None and cell["stderr"].strip():
            problems.append(f"code cell {i} stores stderr: {cell['stderr'][:200]!r}")
        for bad in FORBIDDEN:
            if bad in cell["text"]:
                problems.append(f"code cell {i} shows {bad!r}: {cell['text'][:120]!r}")
        if cell["errors"]:
            problems.append(f"code cell {i} shows an error: {cell['text'][:300]!r}")
        if expected is not None and i < len(expected) and cell["pictures"] < expected[i]:
            problems.append(
                f"code cell {i} shows {cell['pictures']} pictures, expected {expected[i]}"
            )
    assert not problems, f"{notebook.name} {where}:\n" + "\n".join(problems)


def language_of(notebook: Path) -> str:
    """The language a notebook speaks: its folder's (``notebooks/ko``, ``notebooks/ko/labs``)
    or English."""
    under = shown_name(notebook).split("/")
    return under[0] if under[0] in ("ko", "zh") else "en"


def shown_name(notebook: Path) -> str:
    """A notebook's path under notebooks/ (``00_start_here.ipynb``, ``ko/00_start_here.ipynb``,
    ``labs/abs_lab.ipynb``, ``ko/labs/abs_lab.ipynb``): its test's id, and where its copy is."""
    path, notebooks = notebook.resolve(), REPO / "notebooks"
    return path.relative_to(notebooks).as_posix() if path.is_relative_to(notebooks) else path.name


def check_labels(page, root, where: str) -> None:
    """Every text of the widget's graphs lies inside its node's box and the picture, and no
    Korean or Chinese character is drawn as a missing glyph's empty box."""
    found = page.evaluate(LABELS_JS, root)
    assert found["texts"], f"{where}: the graphs show no text"
    assert not found["overflow"], f"{where}: labels overflow their boxes: {found['overflow'][:5]}"
    assert not found["missing"], f"{where}: glyphs drawn as empty boxes: {found['missing'][:20]}"
    print(f"{where}: {found['texts']} labels inside their boxes, {found['wide']} wide characters")


def check_geometry(page, root, where: str) -> int:
    nodes = page.evaluate(GEOMETRY_JS, root)
    bad = [
        n
        for n in nodes
        if n["left"] < n["cellLeft"] - 1
        or n["right"] > n["cellRight"] + 1
        or n["right"] > n["viewport"]
        or n["font"] < min_label(n) - 0.5
    ]
    assert not bad, f"{where}: graph nodes cut off or too small: {bad[:4]}"
    if nodes:
        print(f"{where}: {len(nodes)} nodes, smallest label {min(n['font'] for n in nodes):.1f} px")
    return len(nodes)


COMPARE_MIN_LABEL_PX = 12.0
"""At 1280x720, with JupyterLab's file browser open, the compare view's three panes share
a cell about 800 pixels wide; their compact graphs (short labels, ``to_dot(short=True)``)
are drawn at least this high there; at 1920x1080 they are :data:`MIN_LABEL_PX` like every
other graph's."""


def check_visible(page, root, where: str) -> dict:
    """At 1280x720: every node of the widget's graphs (every pane's, for compare) is on
    screen at once, uncovered, and so is Step when the view is a compare view."""
    found = page.evaluate(VISIBLE_JS, root)
    assert not found["hidden"], f"{where}: graph nodes off screen or covered: {found}"
    if found["compare"]:
        assert found["stepInView"], f"{where}: Step is not in view with the panes: {found}"
    print(f"{where}: every node in view, smallest label {found['font']:.1f} px")
    return found


def min_label(node: dict) -> float:
    """:data:`MIN_LABEL_PX`, or :data:`COMPARE_MIN_LABEL_PX` for a compare pane's node
    in a window narrower than 1920 pixels."""
    if node["compare"] and node["viewport"] < 1920:
        return COMPARE_MIN_LABEL_PX
    return MIN_LABEL_PX


class Phases:
    """How long each phase of a browser test took, printed as it ends (``-s`` shows it):
    where a slow test spends its time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.start = self.last = time.monotonic()

    def done(self, phase: str) -> None:
        now = time.monotonic()
        took, total = now - self.last, now - self.start
        print(f"{self.name}: {phase} took {took:.1f} s ({total:.1f} s in all)")
        self.last = now


SHOTS = {"count": 0, "seconds": 0.0}
"""The screenshots taken in this process, and how long they took in all."""


def shoot(page, name: str) -> None:
    start = time.monotonic()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
    SHOTS["count"] += 1
    SHOTS["seconds"] += time.monotonic() - start


STEP_JS = """(r) => {
    const out = r.querySelector('.absnb-controls .widget-readout');
    return out ? out.textContent.trim() : '';
}"""
"""The go-to slider's readout: the number of steps the widget (every pane) has taken."""

ACTION_POLL_MS = 50
"""How often the page is looked at while a widget redraws (not at every animation frame:
the kernel computing the step shares two cores with the browser)."""

KERNEL_IDLE_JS = f"() => {PANEL}.sessionContext.session?.kernel?.status === 'idle'"
"""The notebook's kernel is idle: it has sent every message of the actions it was given.
A widget's action runs in the kernel (a comm message) between its busy and idle status
messages, which reach the page on the channel of its redraws, in order: once a redraw of
the action has been seen, an idle kernel has sent all of them."""

SETTLED_MS = 100
"""How long the graphs must stay unchanged, the kernel idle, before an action counts as
drawn: the page applies a redraw's messages asynchronously (a compare view's panes come
one message at a time), and an idle kernel has sent them all."""


def wait_changed(page, root, before: str, step: int | None = None) -> str:
    """Wait until the widget's graphs differ from ``before`` (and, given ``step``, the
    step counter reads ``step``) and the kernel is idle, then until they stop changing;
    return them. Waiting for the counter keeps one action's late redraw from passing for
    the next one's."""
    page.wait_for_function(
        f"([r, b, n]) => ({GRAPHS_JS})(r) !== b && (n === null || ({STEP_JS})(r) === n)"
        f" && ({KERNEL_IDLE_JS})()",
        arg=[root, before, None if step is None else str(step)],
        timeout=30_000,
        polling=ACTION_POLL_MS,
    )
    return settled(page, root)


SETTLED_JS = f"(r) => [({GRAPHS_JS})(r), ({KERNEL_IDLE_JS})()]"


def settled(page, root) -> str:
    """The widget's graphs once the kernel is idle and they have not changed for
    ``SETTLED_MS``."""
    graphs, _ = page.evaluate(SETTLED_JS, root)
    while True:
        page.wait_for_timeout(SETTLED_MS)
        now, idle = page.evaluate(SETTLED_JS, root)
        if now == graphs and idle:
            return now
        graphs = now


def steps_taken(page, root) -> int:
    return int(page.evaluate(STEP_JS, root))


def click(root, label: str, lang: str = "en") -> None:
    """Click the widget's button that reads ``label`` in ``lang``."""
    text = gettext(label, lang)
    root.query_selector(f"xpath=.//button[normalize-space(.)='{text}']").click()


STICKY_ROW_PX = 60
"""The most of the graph the sticky row of controls may hide: one row of buttons."""


def check_controls_stay(page, root, name: str) -> None:
    """Scrolled as a reader does to see the bottom of the graph, Step and Back are still on
    screen and uncovered (their row sticks to the notebook's view), the row is one row
    high, and the graph's bottom row of nodes is not hidden under it."""
    found = page.evaluate(CONTROLS_STAY_JS, root)
    where = f"{name}, scrolled to the graph's bottom: {found}"
    assert found["graphBottom"] <= found["viewBottom"] + 1, f"graph bottom not in view: {where}"
    assert found["rowHeight"] <= STICKY_ROW_PX, f"the sticky row is too tall: {where}"
    assert not found["hidden"], f"bottom nodes hidden under the controls: {where}"
    for b in found["buttons"]:
        assert b["top"] >= found["viewTop"] - 1, f"{b['cls']} scrolled away above: {where}"
        assert b["bottom"] <= found["viewBottom"], f"{b['cls']} below the view: {where}"
        assert b["onTop"], f"{b['cls']} covered: {where}"


def drive(page, root, name: str, lang: str = "en") -> None:
    """Step, the → key, Back, Crash and Recover, the slider on one widget (its buttons read
    in ``lang``); geometry and labels after each."""
    root.scroll_into_view_if_needed()
    graphs = page.evaluate(GRAPHS_JS, root)
    assert graphs, f"{name}: the widget shows no graph"
    check_geometry(page, root, f"{name} before stepping")
    check_labels(page, root, f"{name} before stepping")
    n = steps_taken(page, root)
    click(root, "Step ▶", lang)
    graphs = wait_changed(page, root, graphs, n + 1)
    check_geometry(page, root, f"{name} after Step")
    root.query_selector(".absnb-step").focus()
    page.keyboard.press("ArrowRight")
    graphs = wait_changed(page, root, graphs, n + 2)
    click(root, "◀ Back", lang)
    graphs = wait_changed(page, root, graphs, n + 1)
    check_geometry(page, root, f"{name} after Back")
    crash_label = gettext("Crash", lang)
    crash = root.query_selector(f"xpath=.//button[normalize-space(.)='{crash_label}']")
    if crash is not None and crash.is_enabled():
        crash.click()
        # what comes next, in words (in English, checked word for word)
        says = "Step does not recover" if lang == "en" else ""
        page.wait_for_function(
            "([r, says]) => { const c = r.querySelector('.absnb-crash');"
            " return !!c && c.innerText.includes(says) && c.innerText.length > 40; }",
            arg=[root, says],
            timeout=30_000,
            polling=ACTION_POLL_MS,
        )
        # The crash's text can show before its redraw lands (a loaded machine): the graphs
        # Recover must change are the crash's, once drawn.
        graphs = settled(page, root)
        check_labels(page, root, f"{name} after Crash")
        click(root, "Recover (full)", lang)
        graphs = wait_changed(page, root, graphs, n + 3)
        check_geometry(page, root, f"{name} after Crash and Recover")
    slider = root.query_selector(".widget-slider .noUi-target, .widget-slider .slider")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.9, box["y"] + box["height"] / 2)
    graphs = wait_changed(page, root, graphs)
    check_geometry(page, root, f"{name} after the slider")
    check_labels(page, root, f"{name} after the slider")


def open_notebook(page, base: str, notebook: Path, code_cells: int) -> None:
    """Open the copy of ``notebook`` and wait until all its code cells are in the page."""
    page.goto(f"{base}/lab/tree/notebooks/{shown_name(notebook)}?token={TOKEN}&reset")
    page.wait_for_function(
        "(n) => document.querySelectorAll('.jp-Notebook .jp-CodeCell').length === n",
        arg=code_cells,
        timeout=90_000,
        polling=POLL_MS,
    )
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)


def show_first_picture(page) -> None:
    """Scroll the first stored picture (a widget's, else any) to the top, for a screenshot."""
    page.evaluate(
        """() => {
        const all = document.querySelectorAll('.jp-OutputArea-output img.absnb-picture, '
            + '.jp-OutputArea-output .absnb-stepper, .jp-OutputArea-output img');
        const widget = Array.from(all).find((e) => /stepper widget|side-by-side/.test(e.alt || '')
            || e.classList.contains('absnb-stepper'));
        const first = widget || all[0];
        if (first) first.closest('.jp-Cell').scrollIntoView({block: 'start'});
    }"""
    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=shown_name)
def test_notebook_in_the_browser(lab, notebook, request):
    from playwright.sync_api import sync_playwright

    base, folder = lab
    lang = language_of(notebook)
    (folder / shown_name(notebook)).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(notebook, folder / shown_name(notebook))
    expected = expected_pictures(notebook)
    stem = notebook.stem if lang == "en" else f"{lang}-{notebook.stem}"
    print(f"\nscreenshots: {SCREENSHOTS}")
    phases = Phases(shown_name(notebook))
    shots = dict(SHOTS)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        width, height = VIEWPORTS[0]
        page = browser.new_page(viewport={"width": width, "height": height})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            phases.done("starting the browser")
            open_notebook(page, base, notebook, len(expected))
            phases.done("opening the notebook")
            for width, height in VIEWPORTS:
                page.set_viewport_size({"width": width, "height": height})
                check_outputs(page, notebook, f"untrusted at {width}x{height}", expected)
                show_first_picture(page)
                shoot(page, f"{stem}-{width}x{height}-untrusted")
                phases.done(f"untrusted at {width}x{height}")
            # nbval compares this run's outputs with the stored ones (recorded_runs.py)
            record(request.config, notebook, run_all_cells(page, RUN_ALL_TIMEOUT_S))
            phases.done("Run All")
            check_outputs(page, notebook, "after Run All", None)
            check_all_ran(page, notebook.name)
            page.wait_for_function(
                "(n) => document.querySelectorAll("
                "'.jp-OutputArea-output .absnb-stepper').length >= n",
                arg=expected_widgets(notebook),
                timeout=60_000,
                polling=POLL_MS,
            )
            roots = page.query_selector_all(".jp-OutputArea-output .absnb-stepper")
            assert len(roots) == expected_widgets(notebook), (
                f"{notebook.name}: {len(roots)} widgets rendered, "
                f"{expected_widgets(notebook)} expected"
            )
            phases.done("checks after Run All")
            for width, height in reversed(VIEWPORTS):
                page.set_viewport_size({"width": width, "height": height})
                size = f"{width}x{height}"
                if not roots:  # the first picture or chart, as Run All drew it
                    show_first_picture(page)
                    shoot(page, f"{stem}-{size}-run")
                    phases.done(f"run at {size}")
                    continue
                roots[0].scroll_into_view_if_needed()
                check_geometry(page, None, f"{notebook.name} at {size}")
                shoot(page, f"{stem}-{size}-run")
                for i, root in enumerate(roots):
                    if (width, height) == VIEWPORTS[0]:
                        check_visible(page, root, f"{notebook.name} widget {i} at {size}")
                        shoot(page, f"{stem}-{size}-visible-{i}")
                    if notebook.parent.name == "labs" and steps_taken(page, root):
                        # a lab's counterexample (in any language) is a short run of a
                        # tiny job: each size drives it from its start
                        before = page.evaluate(GRAPHS_JS, root)  # read before the click
                        click(root, "Reset", lang)
                        wait_changed(page, root, before, 0)
                    drive(page, root, f"{shown_name(notebook)} widget {i} at {size}", lang)
                check_controls_stay(page, roots[0], f"{notebook.name} at {size}")
                shoot(page, f"{stem}-{size}-scrolled")
                roots[0].evaluate("(r) => r.scrollIntoView({block: 'start'})")
                shoot(page, f"{stem}-{size}-driven")
                phases.done(f"driving {len(roots)} widgets at {size}")
        except Exception:
            shoot(page, f"{stem}-failure")
            log = (folder.parent / "lab.log").read_text(errors="replace")[-2000:]
            print(f"page errors: {errors[:5]}; JupyterLab log tail:\n{log}")
            raise
        finally:
            browser.close()
            shut_down_kernels(base)
            phases.done("closing the browser and the kernel")
            count, seconds = SHOTS["count"] - shots["count"], SHOTS["seconds"] - shots["seconds"]
            print(f"{phases.name}: {count} screenshots took {seconds:.1f} s of it")


def shut_down_kernels(base: str) -> None:
    """Stop the kernels this notebook started, so that the next one has the machine."""
    url = f"{base}/api/kernels?token={TOKEN}"
    with urllib.request.urlopen(url, timeout=10) as response:
        kernels = json.loads(response.read())
    for kernel in kernels:
        request = urllib.request.Request(
            f"{base}/api/kernels/{kernel['id']}?token={TOKEN}", method="DELETE"
        )
        urllib.request.urlopen(request, timeout=30).close()
