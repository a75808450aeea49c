"""Run All in JupyterLab, waiting on the notebook's model rather than on the clock.

JupyterLab is started with ``--LabApp.expose_app_in_browser=True``, so the page's
``window.jupyterapp`` reaches the open notebook's model: which code cells ran in this
session, which are still queued or running, the kernel's status, and the notebook's JSON,
which :func:`run_all_cells` returns for nbval to compare (tests/e2e/recorded_runs.py).
"""

from __future__ import annotations

import re
import time
from typing import Any

PANEL = "window.jupyterapp.shell.currentWidget"

# Every code cell's execution count forgotten: a count then means "ran in this session"
# (the stored counts of a notebook saved with outputs say nothing about this run).
FORGET_COUNTS_JS = f"""() => {{
    for (const cell of {PANEL}.content.widgets) {{
        if (cell.model.type === 'code') cell.model.executionCount = null;
    }}
}}"""

# How far the run is: code cells (with code), queued or running, run, with an error, and
# the kernel's status.
RUN_STATE_JS = f"""() => {{
    const panel = {PANEL};
    const code = panel.content.widgets.filter((c) => c.model.type === 'code'
        && c.model.sharedModel.getSource().trim() !== '');
    const errors = code.filter((c) => {{
        const outputs = c.model.outputs;
        for (let i = 0; i < outputs.length; i++) {{
            if (outputs.get(i).type === 'error') return true;
        }}
        return false;
    }});
    const kernel = panel.sessionContext.session?.kernel;
    return {{
        cells: code.length,
        running: code.filter((c) => c.model.executionState === 'running').length,
        ran: code.filter((c) => c.model.executionCount !== null).length,
        errors: errors.length,
        kernel: kernel ? kernel.status : 'none',
    }};
}}"""

DONE_JS = f"""() => {{
    const s = ({RUN_STATE_JS})();
    return s.running === 0 && s.kernel === 'idle' && (s.ran === s.cells || s.errors > 0);
}}"""
"""Run All has finished: nothing queued or running, the kernel idle, and every code cell
run (or one stopped the run with an error)."""

STARTED_JS = f"""() => {{
    const s = ({RUN_STATE_JS})();
    return s.running > 0 || s.ran > 0;
}}"""

NOTEBOOK_JS = f"() => {PANEL}.context.model.toJSON()"

POLL_MS = 100
"""How often a long wait looks at the page (the default, every animation frame, keeps a
core busy for as long as the notebook runs): a look reads each cell's state and its
outputs' types, not their contents, so ten a second cost the kernel next to nothing and
a wait ends at most 0.1 s after what it waits for."""


STALLED_JS = f"""() => {{
    const s = ({RUN_STATE_JS})();
    return s.running === 0 && s.kernel === 'idle' && s.errors === 0 && s.ran < s.cells;
}}"""
"""Run All stopped short without an error: nothing queued or running, the kernel idle, and
code cells not run. Seen once: JupyterLab replaced the kernel as the run began (its
"Select Kernel" dialog accepted), the first cell ran, the others were never run, and the
test waited out its whole timeout."""

STALL_S = 10.0
"""How long a stalled run must stay so before Run All is given again: a run in progress
shows its queued cells as running, so this is no pause between two cells."""

RESTARTS = 2
"""How many times a stalled Run All is given again before the test fails."""


def run_all_cells(page, timeout_s: float) -> dict[str, Any]:
    """Run > Run All Cells, wait until the run is over (within ``timeout_s``), and return
    the notebook's JSON as the page holds it.

    The click is retried until a cell is queued: a click made while the kernel is still
    connecting runs nothing, silently, and a kernel restarted by JupyterLab at start-up can
    raise a "Select Kernel" dialog that swallows the run (both seen here). A run that
    stops short without an error (:data:`STALLED_JS`) is started again, from the top.
    """
    deadline = time.monotonic() + timeout_s
    restarts = 0
    _start(page)
    while True:
        left = max(deadline - time.monotonic(), 1.0)
        page.wait_for_function(
            f"() => ({DONE_JS})() || ({STALLED_JS})()", timeout=left * 1000, polling=POLL_MS
        )
        if page.evaluate(DONE_JS):
            break
        page.wait_for_timeout(STALL_S * 1000)
        if page.evaluate(DONE_JS):
            break
        if not page.evaluate(STALLED_JS):
            continue  # it was moving after all
        state = page.evaluate(RUN_STATE_JS)
        assert restarts < RESTARTS, f"Run All stopped short {restarts + 1} times: {state}"
        restarts += 1
        print(f"Run All stopped short ({state}): running it again")
        _start(page)
    content: dict[str, Any] = page.evaluate(NOTEBOOK_JS)
    return content


def _start(page) -> None:
    """Forget the cells' execution counts, then Run > Run All Cells until a cell is queued
    (accepting a "Select Kernel" dialog in the way)."""
    page.evaluate(FORGET_COUNTS_JS)
    deadline = time.monotonic() + 180
    while not page.evaluate(STARTED_JS):
        if time.monotonic() > deadline:
            raise TimeoutError("Run All did not start a cell within 180 s")
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
            page.wait_for_function(STARTED_JS, timeout=20_000, polling=POLL_MS)
        except Exception:
            if not dialog.count():  # Escape would dismiss a dialog as "No Kernel"
                page.keyboard.press("Escape")


def check_all_ran(page, name: str) -> None:
    """Every code cell ran (Run All stops at the first cell that raises)."""
    state = page.evaluate(RUN_STATE_JS)
    assert state["ran"] == state["cells"], f"{name}: Run All stopped early: {state}"
