"""Notebooks in a Binder-sized box: each run in a fresh memory cgroup with a limit and a CPU quota.

    sudo python benchmarks/pod/run.py [--memory 2048] [--cpus 1] [--timeout 900]
                                      [--processes] [NOTEBOOK ...]
                                      (default: notebooks 05, 06 and 07)

A Binder pod is a cgroup: its memory limit counts every page once (however many processes
map it), page cache included but reclaimed before anything is killed, and the kernel
OOM-kills a process of the pod when reclaiming cannot keep it under the limit; its CPU limit
is a CFS quota (the processes see all the node's CPUs, and are throttled to ``--cpus`` of
CPU time per period). This script makes such a group for each notebook (cgroup v1: a
``memory`` group with ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``, a
``cpu`` group with ``cpu.cfs_quota_us`` and a ``cpuacct`` group; cgroup v2: one group with
``memory.max``, ``memory.swap.max`` and ``cpu.max``), nested in the cgroup this script runs
in, and runs ``jupyter nbconvert --execute --to notebook --output-dir TMP NOTEBOOK`` in it
(the kernel, the JVM and the Python workers all inherit the group). Without a ``cpu``
controller the quota falls back to CPU affinity (the first ``--cpus`` CPUs), and the table's
title says so. It prints one row per notebook:

- ``exit``: nbconvert's exit status (``-9``: killed, by the OOM killer or the ``--timeout``);
- ``wall s``; ``CPU s``: CPU time of every process that ran in the group (``cpuacct.usage``,
  v2 ``cpu.stat`` usage_usec); ``throttled s``: time the quota held the group back;
- ``peak MiB``: the group's peak charge as the kernel counts it (``memory.max_usage_in_bytes``,
  v2 ``memory.peak``): anonymous memory, page cache (files written and read: Spark's
  spills, checkpoints, the notebook) and kernel memory;
- ``peak anon MiB``: the peak of anonymous memory (v1 ``memory.stat`` total_rss +
  total_swap, v2 anon + ``memory.swap.current``: heaps, stacks, the JVM, the Python
  processes' objects; every page once), sampled every ``--sample`` seconds (0.1), so a
  shorter spike can be missed: the memory that cannot be reclaimed, what a pod's limit
  must hold;
- ``limit hits``: how often the charge reached the limit (``memory.failcnt``, v2
  ``memory.events`` max) and the kernel had to reclaim; ``OOM kills``: processes the
  OOM killer ended (``memory.oom_control`` oom_kill, v2 ``memory.events`` oom_kill).

With ``--processes`` it also prints, per notebook, what each process of the group held when
its anonymous memory last rose 1 % above what was looked at before (near its peak): its
proportional share of anonymous pages and its command line (:mod:`process_memory`).

Needs root (or a delegated cgroup) and a mounted memory controller; otherwise it stops,
saying which and what to do. Its groups are removed at the end of each run, after killing
anything left in them, also on Ctrl-C or SIGTERM. The cgroup side is :mod:`cgroup_box`. Not part
of the test suite; the functions that parse and account are tested in ``tests/benchmarks/``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from cgroup_box import MIB, Box, Layout, NoCgroupError, account, find_layout, make_box, remove_box
from process_memory import Process, format_processes, processes

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
DEFAULT_NOTEBOOKS = (
    "05_two_phase_commit.ipynb",
    "06_performance.ipynb",
    "07_checkpointing_under_backpressure.ipynb",
)


@dataclass
class Sampler:
    """Reads ``read()`` every ``every`` seconds in a thread and keeps the largest value; at
    a new peak 1 % above the last one looked at, also keeps ``look()``: what held it."""

    read: Callable[[], int]
    every: float
    look: Callable[[], list[Process]] | None = None
    peak: int = 0
    at_peak: list[Process] = field(default_factory=list)
    _looked: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        value = self.read()
        self.peak = max(self.peak, value)
        if self.look is not None and value > 1.01 * self._looked:
            self.at_peak, self._looked = self.look(), value

    def run(self) -> None:
        while True:
            with contextlib.suppress(OSError):
                self.sample()
            if self._stop.wait(self.every):
                return

    @contextlib.contextmanager
    def running(self) -> Iterator[Sampler]:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()


@dataclass(frozen=True)
class Result:
    """One notebook's run in its box."""

    notebook: str
    exit: int
    wall: float
    cpu: float
    throttled: float
    peak: int
    peak_anon: int
    limit_hits: int
    oom_kills: int
    stray: int = 0
    cpu_note: str = ""
    at_peak: tuple[Process, ...] = ()


def format_table(results: list[Result]) -> str:
    """The results as a Markdown table, memory in MiB."""
    head = (
        "| notebook | exit | wall s | CPU s | throttled s | peak MiB | peak anon MiB "
        "| limit hits | OOM kills |\n|---|---|---|---|---|---|---|---|---|"
    )
    rows = [
        f"| {r.notebook} | {r.exit} | {r.wall:.1f} | {r.cpu:.1f} | {r.throttled:.1f} "
        f"| {r.peak / MIB:,.0f} | {r.peak_anon / MIB:,.0f} | {r.limit_hits} | {r.oom_kills} |"
        for r in results
    ]
    notes = [
        f"{r.notebook}: {r.stray} process(es) still in its group after nbconvert, killed"
        for r in results
        if r.stray
    ]
    return "\n".join([head, *rows, *notes])


def _enter(box: Box, cpus: float) -> Callable[[], None]:
    """What the child does before exec: join every hierarchy of ``box``; without a quota,
    keep to the first ``cpus`` CPUs."""
    files = [str(f) for f in box.procs_files()]
    pin = box.cpu_note.startswith("affinity")
    allowed = set(sorted(os.sched_getaffinity(0))[: max(1, round(cpus))])

    def enter() -> None:
        for f in files:
            with open(f, "w") as out:
                out.write(str(os.getpid()))
        if pin:
            os.sched_setaffinity(0, allowed)

    return enter


def run_in_box(box: Box, notebook: Path, out_dir: str, args: argparse.Namespace) -> Result:
    """Executes ``notebook`` with nbconvert inside ``box`` and reads the group's account."""
    command = [sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to", "notebook"]
    command += ["--output-dir", out_dir, str(notebook)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    child = subprocess.Popen(
        command,
        preexec_fn=_enter(box, args.cpus),  # before the sampler's thread starts
        start_new_session=True,  # Ctrl-C reaches this script only; it ends the group
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    look = (lambda: processes(box.pids())) if args.processes else None
    with Sampler(box.anon_bytes, args.sample, look).running() as sampler:
        try:
            _, stderr = child.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            _, stderr = child.communicate()
    wall = time.monotonic() - start
    if child.returncode != 0:
        sys.stderr.write(stderr.decode(errors="replace")[-3000:])
    got = account(box)
    if got["cpu"] != got["cpu"]:  # no cpuacct: the children's rusage
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        got["cpu"] = sum(getattr(after, a) - getattr(before, a) for a in ("ru_utime", "ru_stime"))
    return Result(
        notebook.name,
        child.returncode,
        wall,
        got["cpu"],
        got["throttled"],
        int(got["peak"]),
        sampler.peak,
        int(got["limit_hits"]),
        int(got["oom_kills"]),
        at_peak=tuple(sampler.at_peak),
    )


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run_all(layout: Layout, notebooks: list[Path], args: argparse.Namespace) -> list[Result]:
    """Each notebook in a fresh box, one after another; every box removed however a run ends."""
    results = []
    with tempfile.TemporaryDirectory(prefix="absnb-pod-") as out_dir:
        for i, notebook in enumerate(notebooks):
            print(f"running {notebook.name} ...", file=sys.stderr, flush=True)
            box = make_box(layout, f"absnb-pod-{os.getpid()}-{i}", args.memory, args.cpus)
            try:
                result = run_in_box(box, notebook, out_dir, args)
            finally:
                stray = remove_box(box)
            results.append(replace(result, stray=stray, cpu_note=box.cpu_note))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: 05, 06 and 07")
    parser.add_argument("--memory", type=int, default=2048, help="limit in MiB (2048)")
    parser.add_argument("--cpus", type=float, default=1.0, help="CPU quota (1)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a notebook")
    parser.add_argument("--sample", type=float, default=0.1, help="seconds between samples")
    parser.add_argument(
        "--processes", action="store_true", help="what each process held at the anon peak"
    )
    args = parser.parse_args(argv)
    notebooks = args.notebooks or [NOTEBOOKS / n for n in DEFAULT_NOTEBOOKS]
    try:
        layout = find_layout(
            Path("/proc/self/mounts").read_text(), Path("/proc/self/cgroup").read_text()
        )
    except NoCgroupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    try:
        results = run_all(layout, notebooks, args)
    except KeyboardInterrupt:
        print("interrupted: the run's cgroups were removed", file=sys.stderr)
        return 130
    print(
        f"cgroup v{layout.version}, memory limit {args.memory:,} MiB, no swap, "
        f"{results[-1].cpu_note}\n"
    )
    print(format_table(results))
    for r in results if args.processes else ():
        print(f"\n{format_processes(r.notebook, r.at_peak)}")
    return 0 if all(r.exit == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
