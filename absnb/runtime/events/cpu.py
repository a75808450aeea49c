"""This machine's CPUs during a run: how busy they were, and the CPU time a run's process
tree spent (:class:`CpuMeter`)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from absnb.runtime.events.memory import process_tree


@dataclass
class CpuMeter:
    """How busy this machine's CPUs were while it was open: ``busy`` is the share of CPU
    time (all cores, every process) not idle and not waiting for I/O, from 0 to 1, or None
    where psutil cannot read the machine's CPU times. Use as a context manager around a run.

    It says whether a halt left the CPUs idle: on a machine whose cores are all busy (close
    to 1 without snapshots), halting the sources frees no CPU unless the halt leaves every
    task with nothing to do.

    ``seconds`` is the CPU time (user and system) this process and its descendants spent
    while it was open: for a PySpark driver, the driver's Python, the JVM and the JVM's
    Python workers, so a whole local run. It moves far less with other processes' load
    than the wall clock does (a run's work, not its share of the cores), so an overhead
    can be read from it on a busy machine. A process that ends while the meter is open
    loses its share (Spark's workers are reused, and outlive a run).
    """

    busy: float | None = None
    seconds: float | None = None
    _start: tuple[float, float] | None = field(default=None, repr=False)
    _tree: dict[int, float] | None = field(default=None, repr=False)

    @staticmethod
    def _times() -> tuple[float, float] | None:
        try:
            import psutil

            t = psutil.cpu_times()
        except Exception:
            return None
        idle = t.idle + getattr(t, "iowait", 0.0)
        # Linux counts guest time inside user time already
        return sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0), idle

    @staticmethod
    def _tree_times() -> dict[int, float] | None:
        """CPU seconds so far of this process and each of its descendants, by pid."""
        try:
            import psutil

            tree = process_tree()
        except Exception:
            return None
        out = {}
        for process in tree:
            with contextlib.suppress(psutil.Error):
                t = process.cpu_times()
                out[process.pid] = t.user + t.system
        return out

    def __enter__(self) -> CpuMeter:
        self._start = self._times()
        self._tree = self._tree_times()
        return self

    def __exit__(self, *exc: object) -> None:
        tree = self._tree_times()
        if self._tree is not None and tree is not None:
            before = self._tree
            self.seconds = sum(max(0.0, t - before.get(pid, 0.0)) for pid, t in tree.items())
        end = self._times()
        if self._start is None or end is None or end[0] <= self._start[0]:
            self.busy = None
            return
        total, idle = end[0] - self._start[0], end[1] - self._start[1]
        self.busy = min(1.0, max(0.0, 1.0 - idle / total))
