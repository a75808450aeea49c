"""Repository-wide pytest configuration: how nbval checks the notebooks.

``python3 -m pytest`` runs ``tests/`` and ``notebooks/`` (pyproject.toml ``testpaths``) with
``--nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg``: every
code cell of every notebook is run in a kernel of this interpreter and its outputs must
equal the outputs stored in the notebook, after sanitizing (memory addresses, UUIDs,
wall-clock times, Spark app ids and UI links, temporary names).

What is compared, as measured with nbval 0.11, ipywidgets 8.1.9, plotly 7.1, graphviz 0.21
and dot 2.43 (two executions of the same notebook):

* graphs (``show_graph``, ``show_transactions``): ``text/html`` holding an ``<img>`` whose
  ``data:`` URL is graphviz's SVG (a fresh ``dot`` each time), byte-identical, compared;
  their ``text/plain`` is one line (``execution graph: word_count abs, step 8``).
* ``application/vnd.plotly.v1+json`` (plotly's default ``plotly_mimetype`` renderer in a
  kernel): identical, compared (nbval does not sanitize it; it is not a string).
* ``text/html`` of pandas tables: identical, compared. ``text/html`` is therefore NOT
  skipped; plotly only produces it with the ``notebook``/``notebook_connected`` renderers,
  whose random div ids the UUID rule sanitizes (keep the default renderer anyway: the
  ``notebook`` one embeds plotly.js, megabytes per notebook, and ``notebook_connected``
  needs a CDN).
* widgets (stepper, compare): stored as their current frame's picture (``text/html``) and
  one line of ``text/plain``; their cells are marked ``NBVAL_IGNORE_OUTPUT`` (a widget
  shown twice gets another CSS class number).
* widget model references (below): random model ids, never comparable, skipped.
* ``image/png`` / ``image/jpeg``: nbval skips them itself unless ``--nbdime`` is given.

A notebook runs once: the browser test's Run All in JupyterLab (tests/e2e/test_lab.py) is
recorded, and nbval's items for the notebook compare its outputs with the stored ones as
nbval compares its own kernel's (tests/e2e/recorded_runs.py, loaded below); they run the
notebook in nbval's kernel only when the browser test did not record a run (not selected,
skipped without a browser, or stopped before its Run All finished).

In parallel (pytest-xdist; ``-n`` in pyproject.toml's addopts), a worker takes a whole file
at a time (:func:`pytest_xdist_make_scheduler`), so a notebook's cells run in order in one
kernel, as nbval needs, and a file's fixtures are made once; the long, independent tests of
:data:`ONE_BY_ONE` are dealt out one by one instead. What was measured slowest starts first
(:data:`SLOW_FIRST`), so that the run does not end with one worker alone on a long test.
``-n auto`` (the default, pyproject.toml's addopts) runs :data:`WORKERS` workers (a file's
tests alone in one process); ``-n 0`` or ``--pdb`` runs everything in one process.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["tests.e2e.recorded_runs"]  # nbval compares the browser test's Run All

# Mimetypes that name a widget model by a random id: the view only says "show model X".
# nbval 0.11 already skips the first; it is listed so that the policy does not depend on
# nbval's defaults. The second appears when a notebook embeds widget state in an output.
SKIP_COMPARE = (
    "application/vnd.jupyter.widget-view+json",
    "application/vnd.jupyter.widget-state+json",
)


BROWSER_TEST = "tests/e2e/test_lab.py::test_notebook_in_the_browser[{}]"
"""The node id of the browser test of a notebook (its file name): the test whose Run All
the notebook's nbval items compare (tests/e2e/recorded_runs.py)."""


SLOW_FIRST = (
    BROWSER_TEST.format("05_two_phase_commit.ipynb"),
    BROWSER_TEST.format("04_failure_and_recovery.ipynb"),
    BROWSER_TEST.format("07_checkpointing_under_backpressure.ipynb"),
    BROWSER_TEST.format("06_performance.ipynb"),
    "tests/runtime/test_cluster.py",
    BROWSER_TEST.format("02_abs_word_count.ipynb"),
    "tests/runtime/test_spark_sinks.py",
    "tests/e2e/test_lab.py",
    "tests/runtime/test_committed_checkpoint.py",
    "tests/runtime/test_session.py",
    "tests/runtime/test_structured_streaming.py",
)
"""Tests (a node id) and files (every test in it) that took longest in a run with
``--durations``, longest first; every other test follows in collection order. A notebook's
nbval items follow its browser test, whose Run All is the notebook's one execution."""

ONE_BY_ONE = (
    "tests/e2e/test_lab.py",
    "tests/runtime/test_committed_checkpoint.py",
    "tests/runtime/test_spark_sinks.py",
)
"""Files whose tests are long and share nothing costly: in parallel, each test is dealt to
a worker of its own accord (a worker that meets the file starts its JupyterLab, Spark
session or PostgreSQL server once). Not tests/runtime/test_cluster.py: two clusters of
JVMs at once overload a two-core machine."""


def _browser_test(nodeid: str) -> str:
    """A notebook's cell stands for its notebook's browser test; any other test for itself."""
    file = nodeid.split("::", 1)[0]
    if file.startswith("notebooks/") and file.endswith(".ipynb"):
        return BROWSER_TEST.format(file.removeprefix("notebooks/"))
    return nodeid


def _rank(nodeid: str) -> tuple[int, bool]:
    """Where :data:`SLOW_FIRST` puts a test; a notebook's cells right after its browser
    test (whose Run All they compare)."""
    stand_in = _browser_test(nodeid)
    file = stand_in.split("::", 1)[0]
    for i, entry in enumerate(SLOW_FIRST):
        if entry in (stand_in, file):
            return i, stand_in != nodeid
    return len(SLOW_FIRST), stand_in != nodeid


SPARK_CELL = "SparkRuntime("
"""What marks a notebook's cell that runs a job on Spark (a ready-made real run)."""


def _translated_spark_cell(item: pytest.Item) -> bool:
    """A cell of a Korean or Chinese notebook that runs a job on Spark."""
    path = Path(str(getattr(item, "path", "")))
    cell = getattr(item, "cell", None)
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    return path.parent.name in ("ko", "zh") and SPARK_CELL in "".join(source)


def pytest_collection_modifyitems(items):
    """Puts :data:`SLOW_FIRST` first and every notebook's cells after its browser test (a
    stable sort: the order inside a file, a notebook's cells included, is kept); skips the
    Spark cells of the Korean and Chinese simulator notebooks (:data:`TRANSLATED_SPARK`
    says why: the same code runs in English, and its output is not compared)."""
    items.sort(key=lambda item: _rank(item.nodeid))
    skip = pytest.mark.skip(reason="the English notebook runs this Spark cell (conftest.py)")
    for item in items:
        if _translated_spark_cell(item):
            item.add_marker(skip)


def _unit(nodeid: str) -> str:
    """What one worker runs together: the test's file, or in :data:`ONE_BY_ONE` the test
    (a notebook's cells go with their browser test, :func:`_browser_test`)."""
    nodeid = _browser_test(nodeid)
    file = nodeid.split("::", 1)[0]
    return nodeid if file in ONE_BY_ONE else file


WORKERS = 3
"""Worker processes of ``-n auto`` (pyproject.toml's addopts): most of a run is waiting (JVMs
starting, paced Spark jobs, kernels, the browser), so three workers overlap the waits of a
two-core machine."""


def _workers(args: list[str], invocation_dir: Path) -> int:
    """Workers for a run of ``args``: none (one process) when they name tests of one file
    that is a single unit (:func:`_unit`), since a worker would run that file alone after
    starting up; else one per file named, at most :data:`WORKERS`."""
    files = set()
    for arg in args:
        path = (invocation_dir / arg.split("::", 1)[0]).resolve()
        if not path.is_file():
            return WORKERS  # a folder (the testpaths), or something pytest will reject
        files.add(path)
    names = {f.relative_to(ROOT).as_posix() for f in files if f.is_relative_to(ROOT)}
    if names & set(ONE_BY_ONE):
        return WORKERS
    return 0 if len(files) <= 1 else min(WORKERS, len(files))


ROOT = Path(__file__).parent


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, called when it is installed
def pytest_xdist_auto_num_workers(config):
    """:func:`_workers` for ``-n auto``, unless PYTEST_XDIST_AUTO_NUM_WORKERS says otherwise
    (then pytest-xdist's own hook reads it). ``--pdb`` makes xdist run one process."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return _workers(list(config.args), Path(config.invocation_params.dir))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, called when it is installed
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's ``loadscope`` scheduling with :func:`_unit` as the scope (xdist's own
    ``loadgroup`` cannot regroup node ids under pytest 9)."""
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    return FileScheduling(config, log)


def pytest_configure(config):
    # addopts gives the sanitize file relative to the repository root; make it work when
    # pytest is started from another directory (``cd tests && pytest``) as well.
    option = config.option
    name = getattr(option, "nbval_sanitize_with", None)
    if name and not Path(name).is_absolute() and not Path(name).exists():
        candidate = Path(config.rootpath) / name
        if candidate.exists():
            option.nbval_sanitize_with = str(candidate)


def pytest_collectstart(collector):
    """nbval's documented hook for extending what it does not compare."""
    path = getattr(collector, "path", None)
    if path is not None and path.suffix == ".ipynb" and hasattr(collector, "skip_compare"):
        collector.skip_compare = tuple(dict.fromkeys((*collector.skip_compare, *SKIP_COMPARE)))


TRANSLATED_SPARK = ("05_", "06_", "07_")
"""The Spark notebooks: in Korean and Chinese (``notebooks/ko/``, ``notebooks/zh/``) their
stored outputs come from their own run, and nbval does not run them again (the suite's time
stands); tests/i18n checks that their code cells are the English ones and their catalogs
current. The simulator notebooks (00-04) run in every language but for their last cell, a
ready-made run on Spark whose output nbval does not compare (``NBVAL_IGNORE_OUTPUT``): the
English notebook runs it, and the Chinese 02 runs it in the browser test."""


def pytest_ignore_collect(collection_path, config):
    """Leaves out the translated Spark notebooks (:data:`TRANSLATED_SPARK`)."""
    path = Path(collection_path)
    translated = path.parent.name in ("ko", "zh") and path.parent.parent.name == "notebooks"
    if path.suffix == ".ipynb" and translated and path.name.startswith(TRANSLATED_SPARK):
        return True
    return None
