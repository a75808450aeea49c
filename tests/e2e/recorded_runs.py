"""One execution per notebook: nbval compares the outputs of the browser test's Run All.

The browser test (test_lab.py) runs every notebook with Run All in JupyterLab and records
the notebook as the page holds it afterwards (:func:`record`). nbval's items for that
notebook then compare those outputs with the stored ones exactly as nbval compares the
outputs of its own kernel (:class:`RecordedCell`: nbval's sanitizing, skipped mimetypes,
stream coalescing and cell markers), instead of running every cell again in a kernel of
their own, Spark runs included. Without a recorded run (the browser test not selected,
skipped, or stopped before its Run All finished) a notebook's items run it in nbval's
kernel, as nbval alone does.

This module is a pytest plugin (the repository's conftest.py loads it): its
:func:`pytest_collect_file` makes :class:`RecordedNotebook` nbval's collector. conftest.py
also puts each notebook's browser test before the notebook's cells, in one xdist worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4.rwbase import rejoin_lines
from nbval.plugin import IPyNbCell, IPyNbFile, coalesce_streams

RUNS = pytest.StashKey[dict[str, nbformat.NotebookNode]]()
"""Per notebook (its resolved path): the notebook as the browser's Run All left it."""


def record(config: pytest.Config, notebook: Path, content: dict[str, Any]) -> None:
    """Keep ``content`` (nbformat 4 JSON, as JupyterLab's model holds it) as the run of
    ``notebook`` that nbval's items compare."""
    code = [c for c in content["cells"] if c["cell_type"] == "code"]  # what nbval compares
    node = rejoin_lines(nbformat.from_dict({**content, "cells": code}))  # as nbformat reads
    config.stash.setdefault(RUNS, {})[str(notebook.resolve())] = node


def recorded(config: pytest.Config, notebook: Path) -> nbformat.NotebookNode | None:
    """The recorded run of ``notebook``, if the browser test made one in this process."""
    return config.stash.get(RUNS, {}).get(str(notebook.resolve()))


class RecordedNotebook(IPyNbFile):
    """nbval's notebook collector, comparing the browser's run when there is one."""

    run: nbformat.NotebookNode | None = None

    def setup(self) -> None:
        self.run = recorded(self.config, Path(self.path))
        if self.run is None:
            super().setup()  # nbval's own kernel
        else:
            self.setup_sanitize_files()

    def collect(self):
        for cell in super().collect():
            yield RecordedCell.from_parent(
                self, name=cell.name, cell_num=cell.cell_num, cell=cell.cell, options=cell.options
            )


class RecordedCell(IPyNbCell):
    """nbval's cell item; with a recorded run, the tail of nbval's ``runtest`` (after its
    kernel loop) applied to the outputs the browser's kernel produced."""

    def runtest(self) -> None:
        run = self.parent.run
        if run is None:
            super().runtest()
            return
        if self.options["skip"]:
            pytest.skip()
        code = [c for c in run.cells if c.cell_type == "code"]
        if self.cell_num >= len(code) or code[self.cell_num].source != self.cell.source:
            self.raise_cell_error("the browser's run holds other cells than the notebook")
        executed = code[self.cell_num]
        if executed.execution_count is None:
            self.raise_cell_error(
                "the browser's Run All did not run this cell (it stopped at an earlier one); "
                "see the browser test's failure"
            )
        outs = coalesce_streams([nbformat.from_dict(o) for o in executed.outputs])
        errors = [o for o in outs if o.output_type == "error"]
        if errors and not self.options["check_exception"]:
            self.raise_cell_error(
                "Cell execution caused an exception", "\n" + "\n".join(errors[0].traceback)
            )
        unrun = self.cell.execution_count is None
        if unrun and self.cell.outputs:
            self.raise_cell_error("Unrun reference cell has outputs")
        if (
            self.options["check"]
            and not unrun
            and not self.compare_outputs(outs, coalesce_streams(self.cell.outputs))
        ):
            self.raise_cell_error("Cell outputs differ", "\n".join(self.comparison_traceback))


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    """nbval collects a notebook as :class:`RecordedNotebook`."""
    collected = yield
    return [
        RecordedNotebook.from_parent(parent, path=file_path) if type(c) is IPyNbFile else c
        for c in collected
    ]
