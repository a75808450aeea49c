"""How a parallel run is dealt out (the repository's conftest.py): what runs together on one
worker, and how many workers ``-n auto`` starts for what was asked."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def root_conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_notebooks_cells_go_with_the_browser_test_that_ran_them(root_conftest) -> None:
    browser = "tests/e2e/test_lab.py::test_notebook_in_the_browser[02_abs_word_count.ipynb]"
    cell = "notebooks/02_abs_word_count.ipynb::Cell 3"
    assert root_conftest._unit(cell) == root_conftest._unit(browser) == browser
    assert root_conftest._rank(browser)[0] == root_conftest._rank(cell)[0]
    assert root_conftest._rank(browser) < root_conftest._rank(cell)


def test_a_file_is_one_unit_but_for_the_files_dealt_one_by_one(root_conftest) -> None:
    unit = root_conftest._unit
    assert unit("tests/core/test_graph.py::test_a") == unit("tests/core/test_graph.py::test_b")
    assert unit("tests/core/test_graph.py::test_a") == "tests/core/test_graph.py"
    for file in root_conftest.ONE_BY_ONE:
        assert unit(f"{file}::test_a") != unit(f"{file}::test_b")


@pytest.mark.parametrize(
    ("args", "workers"),
    [
        (["tests/core/test_graph.py"], 0),
        (["tests/core/test_graph.py::test_x", "tests/core/test_graph.py"], 0),
        (["tests/core/test_graph.py", "tests/core/test_events.py"], 2),
        (["tests/core"], 3),
        (["tests", "notebooks"], 3),
        (["tests/e2e/test_lab.py"], 3),
        (["tests/no_such_file.py"], 3),
    ],
)
def test_auto_starts_no_worker_for_one_file(root_conftest, args, workers) -> None:
    """A file is one unit: a worker would run it alone after its start-up."""
    assert root_conftest.WORKERS == 3
    assert root_conftest._workers(args, ROOT) == workers
    assert root_conftest._workers([f"../{ROOT.name}/{a}" for a in args], ROOT) == workers


def test_only_the_spark_cells_of_translated_notebooks_are_skipped(root_conftest) -> None:
    import json
    from types import SimpleNamespace

    def cells(path: Path) -> list:
        code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        return [SimpleNamespace(path=path, cell=c) for c in code]

    skipped = root_conftest._translated_spark_cell
    for lang in ("ko", "zh"):
        for name in ("02_abs_word_count.ipynb", "04_failure_and_recovery.ipynb"):
            items = cells(ROOT / "notebooks" / lang / name)
            assert [skipped(i) for i in items] == [False] * (len(items) - 1) + [True]
            english = cells(ROOT / "notebooks" / name)
            assert items[-1].cell["source"] == english[-1].cell["source"]  # runs in English
            assert not any(skipped(i) for i in english)
