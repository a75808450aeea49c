"""nbval's items compare a recorded run (recorded_runs.py) exactly as they compare their own
kernel's outputs, and run the notebook themselves when nothing was recorded."""

from __future__ import annotations

import nbformat

from tests.e2e.recorded_runs import record

pytest_plugins = ["pytester"]

PLUGIN = "tests.e2e.recorded_runs"
SOURCE = "print(1)"
"""A kernel prints 1; the stored notebook and the recordings below say otherwise."""


def notebook(printed: str | None, error: bool = False) -> dict:
    """A one-cell notebook whose cell printed ``printed`` (or raised)."""
    cell = nbformat.v4.new_code_cell(SOURCE, execution_count=1)
    if printed is not None:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    if error:
        cell.outputs = [
            nbformat.v4.new_output("error", ename="E", evalue="boom", traceback=["E: boom"])
        ]
    return nbformat.v4.new_notebook(cells=[cell])


class Recorder:
    """Records ``content`` as the run of the notebook ``path``, as the browser test does
    before nbval's items run."""

    def __init__(self, path, content):
        self.path, self.content = path, content

    def pytest_configure(self, config):
        if self.content is not None:
            record(config, self.path, self.content)


def run(pytester, stored: dict, recorded: dict | None):
    path = pytester.path / "one.ipynb"
    nbformat.write(nbformat.from_dict(stored), path)
    return pytester.runpytest_inprocess(
        "--nbval", "--nbval-current-env", "-p", "no:cacheprovider", "-p", PLUGIN, str(path),
        plugins=[Recorder(path, recorded)],
    )  # fmt: skip


def test_a_recorded_run_that_matches_passes_without_a_kernel(pytester):
    # stored and recorded say 2; a kernel would print 1, so passing proves no kernel ran
    run(pytester, notebook("2\n"), notebook("2\n")).assert_outcomes(passed=1)


def test_a_recorded_run_that_differs_fails_as_nbval_does(pytester):
    result = run(pytester, notebook("2\n"), notebook("3\n"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Cell outputs differ*"])


def test_a_recorded_error_fails_the_cell(pytester):
    result = run(pytester, notebook("2\n"), notebook(None, error=True))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Cell execution caused an exception*"])


def test_a_cell_the_run_did_not_reach_fails(pytester):
    unreached = notebook(None)
    unreached["cells"][0]["execution_count"] = None
    result = run(pytester, notebook("2\n"), unreached)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*did not run this cell*"])


def test_without_a_recorded_run_nbval_runs_the_notebook(pytester):
    # no recording: nbval's kernel prints 1, which the stored 2 does not match
    result = run(pytester, notebook("2\n"), None)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Cell outputs differ*"])
    run(pytester, notebook("1\n"), None).assert_outcomes(passed=1)
