"""The memory a process tree holds, each page counted once: its proportional set size.

A PySpark driver's tree is the driver's Python, the JVM it started and the JVM's Python
workers, forked from one daemon. Summing their resident set sizes (RSS) counts a page once
per process that maps it: the workers' pages still shared with the daemon and each other,
the libraries and jars every process maps. The proportional set size (PSS) divides each
page among the processes that map it, so the tree's PSS counts every page once: what the
machine (or a Binder pod's cgroup) holds for the tree, page cache of mapped files included.

Linux gives a process's PSS in ``/proc/PID/smaps_rollup`` (kernel 4.14 and later, readable
by the process's owner); where it cannot be read (another system, an older kernel, no
permission), :class:`Footprint` has no PSS and :class:`MemorySampler` reports summed RSS,
saying so (:attr:`MemorySampler.method`).

:func:`release_freed` hands the memory a process freed back to the system: a Python worker
that Spark keeps for its next task otherwise holds the heap its last task's state grew to.
:func:`one_arena` lets it reach what the process's threads freed too.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

PROPORTIONAL = "proportional"
""":attr:`MemorySampler.method` where every sample read every process's PSS."""
SUMMED_RSS = "summed RSS"
""":attr:`MemorySampler.method` where some sample could not: RSS summed over processes."""

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter: how many arenas its allocator may create."""

Reader: TypeAlias = "Callable[[int], str | None]"
"""Reads process ``pid``'s ``smaps_rollup`` text; None where it cannot be read."""


def release_freed() -> bool:
    """Collect garbage, then ask the C allocator to return its free pages to the system
    (glibc's ``malloc_trim``): a large dict freed by Python goes back to the allocator,
    which keeps it for reuse unless told otherwise. True if the allocator was asked; False
    where it has no ``malloc_trim`` (not glibc), after collecting all the same."""
    gc.collect()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return False
    trim(0)
    return True


def one_arena() -> bool:
    """Have glibc's allocator serve every thread of this process from its main arena (as
    ``MALLOC_ARENA_MAX=1`` does), so that :func:`release_freed` gives back what threads
    freed as well: ``malloc_trim`` releases the free top of the main arena only, and any
    other arena keeps the top its largest allocations grew it to. A Python worker that
    Spark keeps writes each host's snapshots on threads of their own, and held a few MiB
    more after every run with an arena per thread. Arenas made before the call stay in
    use: call it before the process starts a thread (Python's threads take turns holding
    the GIL, so they hardly wait for the one arena). True if the allocator was told; False
    where it has no ``mallopt`` (not glibc)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    return bool(mallopt(M_ARENA_MAX, 1))


def read_smaps_rollup(pid: int, proc: Path = Path("/proc")) -> str | None:
    """``/proc/PID/smaps_rollup``'s text, or None where it is missing or unreadable; empty
    while the process exits (its address space already released: the kernel answers
    ESRCH, as for a process killed while it tears down a large heap)."""
    try:
        return (proc / str(pid) / "smaps_rollup").read_text()
    except ProcessLookupError:
        return ""
    except OSError:
        return None


def smaps_fields(text: str) -> dict[str, int]:
    """The ``Name:  N kB`` lines of a ``smaps_rollup`` (or ``smaps``) text, in bytes; the
    first line (the address range) and any line without a size in kB are left out."""
    fields = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        value = rest.split()
        if sep and len(value) == 2 and value[1] == "kB" and value[0].isdigit():
            fields[name.strip()] = int(value[0]) * 1024
    return fields


@dataclass(frozen=True)
class Footprint:
    """The memory of a group of processes at one moment, in bytes. ``pss`` and ``pss_anon``
    (its anonymous part: heaps, stacks, the JVM's heap; ``Pss_Anon``, kernel 5.9 and later)
    are None unless every process's ``smaps_rollup`` was read."""

    rss: int = 0
    pss: int | None = None
    pss_anon: int | None = None


def footprint(processes: Iterable[Any], read: Reader = read_smaps_rollup) -> Footprint:
    """The summed RSS and PSS of psutil ``processes``; one that ends meanwhile counts 0."""
    import psutil

    rss, pss, anon = 0, 0, 0
    complete, with_anon = True, True
    for process in processes:
        try:
            resident = process.memory_info().rss
        except psutil.Error:
            continue
        text = read(process.pid)
        fields = smaps_fields(text) if text is not None else {}
        if "Pss" not in fields and (text == "" or _ended(process)):
            # It ended between the two reads, is a zombie, or is exiting (its address
            # space already gone, so its smaps_rollup reads empty): it holds no memory.
            continue
        rss += resident
        complete = complete and "Pss" in fields
        with_anon = with_anon and "Pss_Anon" in fields
        pss += fields.get("Pss", 0)
        anon += fields.get("Pss_Anon", 0)
    return Footprint(
        rss,
        pss if complete else None,
        anon if complete and with_anon else None,
    )


def _ended(process: Any) -> bool:
    """True when psutil ``process`` is gone or a zombie (exited, not yet reaped by its
    parent: it maps nothing, and its ``smaps_rollup`` reads empty)."""
    import psutil

    try:
        return bool(process.status() == psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return True


def process_tree(root: int | None = None) -> list[Any]:
    """psutil's processes: ``root`` (this one by default) and all its descendants."""
    import psutil

    top = psutil.Process(os.getpid() if root is None else root)
    return [top, *top.children(recursive=True)]


def tree_memory(root: int | None = None, read: Reader = read_smaps_rollup) -> Footprint:
    """The :func:`footprint` of process ``root`` (this one by default) and all its
    descendants: for a PySpark driver, the driver's Python, its JVM and the JVM's Python
    workers."""
    import psutil

    try:
        tree = process_tree(root)
    except psutil.Error:
        return Footprint()
    return footprint(tree, read)


def tree_rss(root: int | None = None) -> int:
    """The summed resident set size (bytes) of :func:`tree_memory`'s processes: pages
    shared between them counted once per process that maps them."""
    return tree_memory(root, read=lambda _pid: None).rss


def _largest(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


@dataclass
class MemorySampler:
    """Samples :func:`tree_memory` in a background thread while it is open, keeping the
    largest sample of each figure. Use as a context manager around the runs to measure.

    ``peak`` is the largest proportional set size (every page counted once) where every
    sample could read it, else the largest summed RSS; :attr:`method` says which.
    ``peak_rss`` is the largest summed RSS either way (the figure earlier versions
    reported). Shared processes count too: a JVM and Python workers started before the
    sampler (the SparkSession's) are part of every job it runs.
    """

    interval: float = 0.1
    root: int | None = None
    read: Reader = read_smaps_rollup
    peak_rss: int = 0
    peak_pss: int | None = None
    """None unless every sample read every process's PSS."""
    peak_pss_anon: int | None = None
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def peak(self) -> int:
        """Bytes: the largest proportional set size, or summed RSS where it was missing."""
        return self.peak_rss if self.peak_pss is None else self.peak_pss

    @property
    def method(self) -> str:
        """How :attr:`peak` was counted: :data:`PROPORTIONAL` or :data:`SUMMED_RSS`."""
        return SUMMED_RSS if self.peak_pss is None else PROPORTIONAL

    @staticmethod
    def available() -> bool:
        """True where psutil can read this process's memory."""
        try:
            import psutil

            psutil.Process().memory_info()
        except Exception:
            return False
        return True

    def add(self, sample: Footprint) -> None:
        """Count ``sample``: each peak keeps the larger; a sample without PSS leaves the
        sampler without one for good (a peak over some samples only would be no peak)."""
        first = self.samples == 0
        self.peak_rss = max(self.peak_rss, sample.rss)
        self.peak_pss = sample.pss if first else _largest(self.peak_pss, sample.pss)
        self.peak_pss_anon = (
            sample.pss_anon if first else _largest(self.peak_pss_anon, sample.pss_anon)
        )
        self.samples += 1

    def sample(self) -> Footprint:
        """Take one sample now; returns it."""
        now = tree_memory(self.root, self.read) if self.available() else Footprint()
        self.add(now)
        return now

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> MemorySampler:
        self._stop.clear()
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="absnb-memory", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()
