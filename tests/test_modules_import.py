"""Every module of the package imports: a name removed from one module and still imported
by another (a benchmark, a command) fails here, not in a user's hands."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import absnb

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(absnb.__path__, "absnb.")
    if not m.name.endswith("__main__")  # runs the command line when imported
)


def test_the_package_has_its_modules() -> None:
    assert {"absnb.views.widgets", "absnb.experiments.widget_speed", "absnb.cli"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_module_imports(name: str) -> None:
    module = importlib.import_module(name)
    for exported in getattr(module, "__all__", ()):
        assert hasattr(module, exported), f"{name}.__all__ names {exported!r}, not defined"
