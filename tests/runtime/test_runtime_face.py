"""The curated face of :mod:`absnb.runtime`: what users import, lazily."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import absnb.runtime


def test_every_name_of_the_face_is_the_object_of_its_module() -> None:
    for name in absnb.runtime.__all__:
        where = importlib.import_module(f"absnb.runtime.{absnb.runtime._WHERE[name]}")
        assert getattr(absnb.runtime, name) is getattr(where, name), name
    assert sorted(absnb.runtime.__all__) == sorted(absnb.runtime._WHERE)


def test_an_unknown_name_says_so() -> None:
    with pytest.raises(AttributeError, match="no attribute 'SparkRuntme'"):
        _ = absnb.runtime.SparkRuntme


def test_importing_the_face_loads_neither_spark_nor_pyspark() -> None:
    code = (
        "import sys, absnb.runtime\n"
        "print('absnb.runtime.spark' in sys.modules, 'pyspark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_no_module_of_the_runtime_re_exports_a_name_with_an_alias() -> None:
    # users import from the face (or from where a name lives), never through a neighbour
    root = Path(absnb.runtime.__file__).parent
    aliases = [
        f"{path.relative_to(root)}: {m.group(0)}"
        for path in sorted(root.rglob("*.py"))
        for m in re.finditer(r"import (\w+) as \1\b", path.read_text())
    ]
    assert aliases == []
