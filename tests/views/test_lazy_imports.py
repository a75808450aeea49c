"""``absnb.views`` re-exports its names lazily: a DOT rendering costs no pandas or widgets."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import absnb
import absnb.views

HEAVY = ["pandas", "plotly", "ipywidgets", "graphviz", "pyspark"]

PROBE = f"""
import json, sys
import absnb, absnb.views
dot = absnb.views.to_dot(absnb.World(absnb.word_count(), "abs"))
print(json.dumps({{"heavy": [m for m in {HEAVY!r} if m in sys.modules],
                   "dot": dot.splitlines()[0], "file": absnb.__file__}}))
"""


def test_a_dot_rendering_imports_no_heavy_package() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    result = json.loads(out.stdout)
    assert result["file"] == absnb.__file__  # the package under test
    assert result["dot"].startswith("digraph")
    assert result["heavy"] == []


@pytest.mark.parametrize("name", absnb.views.__all__)
def test_each_name_is_its_modules_object(name: str) -> None:
    value = getattr(absnb.views, name)
    home = importlib.import_module(value.__module__)
    assert home.__name__.startswith("absnb.views.")
    assert getattr(home, name) is value
    assert name in dir(absnb.views)


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="no_such_view"):
        _ = absnb.views.no_such_view  # type: ignore[attr-defined]  # the point of the test


def test_star_import_gives_all() -> None:
    namespace: dict[str, object] = {}
    exec("from absnb.views import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(absnb.views.__all__)
