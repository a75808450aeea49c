"""A process tree's memory, each page counted once (PSS), with summed RSS beside it."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.runtime.events.memory import (
    PROPORTIONAL,
    SUMMED_RSS,
    Footprint,
    MemorySampler,
    footprint,
    read_smaps_rollup,
    release_freed,
    smaps_fields,
    tree_memory,
    tree_rss,
)

ROLLUP = """\
56245d082000-7fff5d35e000 ---p 00000000 00:00 0                          [rollup]
Rss:                1616 kB
Pss:                 178 kB
Pss_Anon:            112 kB
Pss_File:             66 kB
Anonymous:           112 kB
"""
OLD_KERNEL = "Rss:  400 kB\nPss:  300 kB\nAnonymous:  200 kB\n"  # before 5.9: no Pss_Anon


def test_smaps_fields_reads_the_sizes_in_bytes() -> None:
    fields = smaps_fields(ROLLUP)
    assert fields["Rss"] == 1616 * 1024
    assert fields["Pss"] == 178 * 1024
    assert fields["Pss_Anon"] == 112 * 1024
    assert not any("rollup" in name or "-" in name for name in fields)  # the address line


@pytest.mark.parametrize("text", ["", "Pss:\n", "Pss: many kB\n", "Pss: 12 MB\n", "garbage"])
def test_smaps_fields_leaves_out_lines_without_a_size(text: str) -> None:
    assert "Pss" not in smaps_fields(text)


@dataclass
class FakeProcess:
    pid: int
    rss: int
    running: bool = True
    gone: bool = False
    zombie: bool = False

    def memory_info(self) -> SimpleNamespace:
        if self.gone:
            raise psutil.NoSuchProcess(self.pid)
        return SimpleNamespace(rss=self.rss)

    def status(self) -> str:
        if not self.running:
            raise psutil.NoSuchProcess(self.pid)
        return psutil.STATUS_ZOMBIE if self.zombie else psutil.STATUS_SLEEPING


def test_footprint_sums_every_process_of_the_tree() -> None:
    texts = {1: ROLLUP, 2: "Pss: 1000 kB\nPss_Anon: 10 kB\n"}
    got = footprint([FakeProcess(1, 5 << 20), FakeProcess(2, 7 << 20)], texts.get)
    assert got == Footprint(rss=12 << 20, pss=1178 * 1024, pss_anon=122 * 1024)


def test_footprint_skips_processes_that_ended() -> None:
    processes = [
        FakeProcess(1, 1 << 20),
        FakeProcess(2, 9 << 20, gone=True),  # ended before its RSS was read
        FakeProcess(3, 9 << 20, running=False),  # ended before its smaps_rollup was read
        FakeProcess(4, 0, zombie=True),  # exited, not yet reaped: its smaps_rollup is empty
    ]
    assert footprint(processes, {1: ROLLUP}.get) == Footprint(1 << 20, 178 * 1024, 112 * 1024)
    # Exiting, not yet a zombie: its address space is gone and its smaps_rollup reads
    # empty (one such sample in a bench once made its whole peak summed RSS).
    exiting = [FakeProcess(1, 1 << 20), FakeProcess(5, 3 << 20)]
    assert footprint(exiting, {1: ROLLUP, 5: ""}.get) == Footprint(1 << 20, 178 * 1024, 112 * 1024)


def test_footprint_without_a_readable_rollup_has_no_pss() -> None:
    # one running process whose smaps_rollup cannot be read: a PSS of the others alone
    # would undercount, so there is none
    processes = [FakeProcess(1, 1 << 20), FakeProcess(2, 2 << 20)]
    assert footprint(processes, {1: ROLLUP}.get) == Footprint(3 << 20, None, None)
    # an older kernel: PSS, but no Pss_Anon
    assert footprint(processes, {1: ROLLUP, 2: OLD_KERNEL}.get) == Footprint(
        3 << 20, 478 * 1024, None
    )


sizes = st.integers(min_value=0, max_value=1 << 40)


@given(st.lists(st.tuples(sizes, st.none() | sizes), min_size=1, max_size=20))
def test_the_sampler_keeps_the_largest_of_each_figure(samples) -> None:
    sampler = MemorySampler()
    for rss, pss in samples:
        sampler.add(Footprint(rss, pss, pss))
    assert sampler.samples == len(samples)
    assert sampler.peak_rss == max(rss for rss, _ in samples)
    if all(pss is not None for _, pss in samples):
        assert sampler.peak_pss == max(pss for _, pss in samples)
        assert (sampler.peak, sampler.method) == (sampler.peak_pss, PROPORTIONAL)
    else:  # one sample without PSS: the peak is summed RSS, and says so
        assert sampler.peak_pss is None
        assert (sampler.peak, sampler.method) == (sampler.peak_rss, SUMMED_RSS)


def test_the_sampler_falls_back_to_summed_rss_where_pss_cannot_be_read() -> None:
    if not MemorySampler.available():
        pytest.skip("needs psutil's process memory")
    with MemorySampler(interval=0.01, read=lambda _pid: None) as sampler:
        time.sleep(0.03)
    assert sampler.method == SUMMED_RSS
    assert sampler.peak == sampler.peak_rss > 0


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs smaps_rollup")
def test_a_zombie_child_leaves_the_tree_its_pss() -> None:
    # a child that has exited and is not yet reaped stays in the tree, with nothing mapped
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.01)
        assert read_smaps_rollup(child.pid) in (None, "")
        got = tree_memory(psutil.Process().pid, read=read_smaps_rollup)
        assert got.pss is not None
        assert 0 < got.pss <= got.rss
    finally:
        child.wait()


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs smaps_rollup")
def test_a_killed_child_tearing_down_its_heap_leaves_the_tree_its_pss() -> None:
    # Killed with a large heap (a Python worker in a bench's recovery run), a process
    # answers ESRCH to a read of its smaps_rollup until it is a zombie: a bench's whole
    # peak once came out as summed RSS for it.
    code = "x = bytearray(512 << 20); print('ready', flush=True); import time; time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        child.kill()
        deadline = time.monotonic() + 30
        samples = [tree_memory(psutil.Process().pid, read=read_smaps_rollup)]  # at least one
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the killed child did not exit"
            samples.append(tree_memory(psutil.Process().pid, read=read_smaps_rollup))
        assert all(s.pss is not None for s in samples)
    finally:
        child.wait()


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs smaps_rollup")
def test_this_process_pss_is_at_most_its_rss() -> None:
    mine = tree_memory(psutil.Process().pid, read=read_smaps_rollup)
    fields = smaps_fields(read_smaps_rollup(psutil.Process().pid) or "")
    assert fields["Pss"] <= fields["Rss"]
    assert mine.pss is not None
    assert 0 < mine.pss <= mine.rss


def test_tree_memory_counts_a_child_process() -> None:
    if not MemorySampler.available():
        pytest.skip("needs psutil's process memory")
    code = "import sys, time; x = bytearray(80 << 20); print('ready', flush=True); time.sleep(60)"
    import psutil

    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        with MemorySampler(interval=0.01) as sampler:
            time.sleep(0.05)
        # the rest of the tree, measured just after: a test worker's other children (a
        # Spark JVM, its Python workers) grow and shrink on their own, so a figure taken
        # before the child started is no baseline
        others = tree_rss() - psutil.Process(child.pid).memory_info().rss
        assert sampler.samples >= 2
        assert sampler.peak_rss >= others + (70 << 20)  # the child's 80 MiB is in the tree
        if sampler.method == PROPORTIONAL:  # the child's own pages are its alone
            assert sampler.peak >= 70 << 20
            assert sampler.peak_pss_anon is None or sampler.peak_pss_anon >= 70 << 20
    finally:
        child.kill()
        child.wait()


TRIM = """
from absnb.runtime.events.memory import release_freed
def rss(): return int(open("/proc/self/statm").read().split()[1]) * 4096
blocks = [bytearray(64 << 10) for _ in range(3000)]  # on the heap: under the mmap threshold
keep = bytearray(64 << 10)  # above them: the heap cannot shrink from its top by itself
del blocks
before = rss()
print(release_freed(), before, rss())
"""


def _in_a_child(code: str) -> tuple[bool, int, int]:
    """``code`` run in a fresh process: what it printed, ``flag before after``."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    return out[0] == "True", int(out[1]), int(out[2])


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc/self/statm")
def test_release_freed_gives_the_freed_heap_back() -> None:
    """What a Python worker kept by Spark does after each host: the heap a large state
    freed goes back to the system, not only to the C allocator."""
    asked, before, after = _in_a_child(TRIM)
    if not asked:
        pytest.skip("the C allocator has no malloc_trim (not glibc)")
    assert before >= 150 << 20  # freed, but still held by the allocator
    assert after <= before - (150 << 20)


THREAD_TRIM = """
import threading
from absnb.runtime.events.memory import one_arena, release_freed
def rss(): return int(open("/proc/self/statm").read().split()[1]) * 4096
told = one_arena()
big = bytearray(16 << 20)  # mmapped: freeing it raises glibc's mmap threshold to 16 MiB
del big
before = rss()
def write(): bytearray(12 << 20)  # under the threshold now: from its thread's arena
thread = threading.Thread(target=write)
thread.start()
thread.join()
release_freed()
print(told, before, rss())
"""


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc/self/statm")
def test_release_freed_gives_back_what_a_thread_freed_with_one_arena() -> None:
    """A host's snapshot writers free their copies on threads of their own: with an arena
    per thread, the 12 MiB stay held after release_freed (the top of a thread's arena is
    not trimmed); with one arena they go back."""
    told, before, after = _in_a_child(THREAD_TRIM)
    if not told:
        pytest.skip("the C allocator has no mallopt (not glibc)")
    assert after <= before + (4 << 20)


def test_release_freed_collects_cycles() -> None:
    import gc
    import weakref

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: reference counting alone never frees it
    gone = weakref.ref(a)
    del a, b
    gc.disable()
    try:
        release_freed()
        assert gone() is None
    finally:
        gc.enable()
