"""Pausing Python's cyclic garbage collector while the simulator runs or explores.

A run with history keeps a world per step and an exploration a world per state: millions
of long-lived containers and none of them garbage. CPython's generational collector passes
over such young survivors again and again (every 700 allocations, and every tenth pass over
the older ones too), which took two thirds of a run with history and a third of an
exploration (``python -m absnb.experiments.sim_speed``). The simulator makes no reference
cycles of its own (its worlds, tasks and events free by reference counting), so the
collector is paused for the run and restored after; cycles an operator makes are collected
then.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collector() -> Iterator[None]:
    """Disable the cyclic collector for the ``with`` block, then enable it again if it was
    enabled (a caller's own ``gc.disable()`` is kept)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
