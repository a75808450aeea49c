"""A package's public names imported from its modules on first use (PEP 562), so that
importing the package stays light: ``absnb.runtime`` starts no Java, ``absnb.views`` loads
neither pandas, plotly nor ipywidgets until a name that needs them is used."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` (its ``__name__``, already being
    imported), whose names in ``homes`` live in its modules: ``homes`` maps each name to the
    module, relative to ``package``, that defines it. A name is imported on first use and
    then kept in the package's namespace.

    Raises:
        KeyError: ``package`` is not being imported (pass the package's ``__name__``).
    """
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
