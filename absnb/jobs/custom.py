"""A user's own job builder, named ``package.module:function`` (as ``absnb run --job`` and a
trace header name it), imported and called like the built-in builders.

Naming a builder imports its module and runs its code, as ``python -m`` would: replay only
traces whose job module you trust.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from types import ModuleType
from typing import cast

from absnb.core.errors import UnknownJobError
from absnb.core.job import Job

EXAMPLE = "mypackage.jobs:my_job (a function that returns an absnb Job)"


def is_custom(name: str) -> bool:
    """True for a ``package.module:function`` name rather than a built-in job's."""
    return ":" in name


def load_builder(spec: str) -> Callable[..., Job]:
    """The function ``spec`` names; the current directory is searched too, as ``python -m``
    searches it.

    Raises:
        UnknownJobError: ``spec`` is not ``module:function``, the module cannot be imported
            or has no such function (the message names which).
    """
    module, _, name = spec.partition(":")
    if not module or not name or ":" in name:
        raise UnknownJobError(f"{spec!r} is not a job builder's name: write {EXAMPLE}")
    try:
        mod = _import(module)
    except ImportError as e:
        raise UnknownJobError(
            f"cannot import module {module!r} of job {spec!r} ({e}): run from the folder "
            "that holds it, or install it"
        ) from None
    fn: object = mod
    for part in name.split("."):
        fn = getattr(fn, part, None)
    if not callable(fn):
        raise UnknownJobError(
            f"module {module!r} has no function {name!r} (job {spec!r}): write {EXAMPLE}"
        )
    return cast("Callable[..., Job]", fn)  # a user's callable; its result is checked


def _import(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        here = os.getcwd()
        if e.name != module.split(".")[0] or here in sys.path or "" in sys.path:
            raise
        sys.path.append(here)
        return importlib.import_module(module)


def build_custom(spec: str, **params: object) -> Job:
    """Call the builder ``spec`` names with ``params``; the job records ``spec`` as its
    builder (and ``params``), so a trace of its run can build it again.

    Raises:
        UnknownJobError: see :func:`load_builder`, or the builder did not return a Job.
    """
    job = load_builder(spec)(**params)
    if not isinstance(job, Job):
        raise UnknownJobError(
            f"job builder {spec!r} returned {job!r:.60} ({type(job).__name__}), not an "
            "absnb Job: return Job(...) or one of absnb's builders' results"
        )
    return replace(job, builder=spec, params=dict(params))
