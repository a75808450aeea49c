"""Notebooks in a Binder-sized box: each run in a fresh memory cgroup with a limit and a CPU quota.

    sudo python benchmarks/pod/run.py [--memory 2048] [--cpus 1] [--timeout 900]
                                      [NOTEBOOK ...]   (default: notebooks 05, 06 and 07)

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

Needs root (or a delegated cgroup) and a mounted memory controller; otherwise it stops,
saying which and what to do. Its groups are removed at the end of each run, after killing
anything left in them, also on Ctrl-C or SIGTERM. Not part of the test suite; the functions
that parse and account are tested in ``tests/benchmarks/test_pod.py``.
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

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
DEFAULT_NOTEBOOKS = (
    "05_two_phase_commit.ipynb",
    "06_performance.ipynb",
    "07_checkpointing_under_backpressure.ipynb",
)
MIB = 1024 * 1024
V1_CONTROLLERS = ("memory", "cpu", "cpuacct")


class NoCgroupError(RuntimeError):
    """No memory cgroup this process may create: not root, or no memory controller."""


def parse_keyed(text: str) -> dict[str, int]:
    """A flat keyed file (``memory.stat``, ``cpu.stat``, ``memory.events``,
    ``memory.oom_control``): ``name value`` per line -> {name: value}."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def parse_mounts(text: str) -> dict[str, Path]:
    """``/proc/self/mounts`` -> where each v1 controller is mounted (a co-mount such as
    ``cpu,cpuacct`` maps both names to one directory) and ``"unified"`` -> the v2 mount."""
    out: dict[str, Path] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        where, kind, options = Path(fields[1]), fields[2], fields[3].split(",")
        if kind == "cgroup2":
            out.setdefault("unified", where)
        elif kind == "cgroup":
            for option in options:
                if option in V1_CONTROLLERS:
                    out.setdefault(option, where)
    return out


def parse_own_cgroups(text: str) -> dict[str, str]:
    """``/proc/self/cgroup`` -> this process's group in each hierarchy: v1 controller name
    -> path, and ``"unified"`` -> the v2 path (the ``0::`` line)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        number, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        if number == "0" and names == "":
            out["unified"] = path
        for name in names.split(","):
            if name in V1_CONTROLLERS:
                out[name] = path
    return out


@dataclass(frozen=True)
class Layout:
    """Where fresh groups go: ``parents`` maps a controller (v1: memory, cpu, cpuacct; v2:
    ``unified``) to the directory a new group is made in."""

    version: int
    parents: dict[str, Path]


def find_layout(mounts: str, own: str) -> Layout:
    """The cgroup version and parent directories to use, from the texts of
    ``/proc/self/mounts`` and ``/proc/self/cgroup``: v1 when a memory hierarchy is mounted,
    else v2 with the memory controller available to children of this process's group.
    Raises :class:`NoCgroupError` naming the fix when neither is writable."""
    where, mine = parse_mounts(mounts), parse_own_cgroups(own)
    if "memory" in where:
        parents = {c: where[c] / mine.get(c, "/").lstrip("/") for c in V1_CONTROLLERS if c in where}
        _check_writable(parents["memory"], "memory.limit_in_bytes")
        return Layout(1, parents)
    if "unified" in where:
        parent = where["unified"] / mine.get("unified", "/").lstrip("/")
        _check_writable(parent, "cgroup.subtree_control")
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if "memory" not in enabled:
            raise NoCgroupError(
                f"cgroup v2 at {parent} does not give its children the memory controller "
                f"(cgroup.subtree_control: {' '.join(enabled) or 'empty'}); as root, move "
                f"this shell into a leaf group and `echo +memory +cpu > "
                f"{parent}/cgroup.subtree_control`"
            )
        return Layout(2, {"unified": parent})
    raise NoCgroupError(
        "no cgroup memory controller is mounted (neither a v1 `memory` hierarchy nor "
        "cgroup2 in /proc/self/mounts): mount one (`mount -t cgroup2 none /sys/fs/cgroup`) "
        "or run on a machine that has one"
    )


def _check_writable(parent: Path, control: str) -> None:
    if not (parent / control).is_file():
        raise NoCgroupError(
            f"{parent} is not a cgroup directory with the memory controller (no {control}); "
            "check that /proc/self/mounts lists a cgroup memory hierarchy there"
        )
    if not os.access(parent, os.W_OK):
        raise NoCgroupError(
            f"cannot create a cgroup under {parent}: permission denied; run this script "
            "as root (sudo) or in a cgroup delegated to this user"
        )


@dataclass
class Box:
    """One fresh group: its directory in each hierarchy (v2: one directory)."""

    version: int
    dirs: dict[str, Path]
    cpu_note: str = ""

    @property
    def memory(self) -> Path:
        return self.dirs["memory" if self.version == 1 else "unified"]

    def procs_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in self.dirs.values()]

    def anon_bytes(self) -> int:
        """Anonymous memory now, every page once (see the module's docstring)."""
        stat = parse_keyed((self.memory / "memory.stat").read_text())
        if self.version == 1:
            return stat.get("total_rss", 0) + stat.get("total_swap", 0)
        return stat.get("anon", 0) + _read_int(self.memory / "memory.swap.current")


def _read_int(path: Path, default: int = 0) -> int:
    try:
        return int(path.read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return default


def make_box(layout: Layout, name: str, memory_mib: int, cpus: float) -> Box:
    """Creates the group ``name`` under each parent of ``layout``, with the memory limit
    (swap included) and the CPU quota set; removes what it made if that fails. The caller
    removes the box (:func:`remove_box`)."""
    box = Box(layout.version, {})
    try:
        for controller, parent in layout.parents.items():
            (parent / name).mkdir()
            box.dirs[controller] = parent / name
        _limit(box, memory_mib, cpus)
    except BaseException:
        remove_box(box)
        raise
    return box


def _limit(box: Box, memory_mib: int, cpus: float) -> None:
    limit = str(memory_mib * MIB)
    if box.version == 1:
        _write(box.memory / "memory.limit_in_bytes", limit)
        _write(box.memory / "memory.memsw.limit_in_bytes", limit, optional=True)
        box.cpu_note = _v1_quota(box, cpus)
    else:
        _write(box.memory / "memory.max", limit)
        _write(box.memory / "memory.swap.max", "0", optional=True)
        box.cpu_note = _v2_quota(box, cpus)


def _write(path: Path, value: str, optional: bool = False) -> None:
    if optional and not path.exists():
        return
    path.write_text(value)


def _v1_quota(box: Box, cpus: float) -> str:
    if "cpu" not in box.dirs:
        return f"affinity: {cpus:g} CPU(s) (no v1 cpu controller)"
    period = _read_int(box.dirs["cpu"] / "cpu.cfs_period_us", 100_000)
    _write(box.dirs["cpu"] / "cpu.cfs_quota_us", str(round(cpus * period)))
    return f"CFS quota: {cpus:g} CPU"


def _v2_quota(box: Box, cpus: float) -> str:
    if not (box.memory / "cpu.max").exists():
        return f"affinity: {cpus:g} CPU(s) (no v2 cpu controller)"
    _write(box.memory / "cpu.max", f"{round(cpus * 100_000)} 100000")
    return f"CFS quota: {cpus:g} CPU"


def remove_box(box: Box, patience: float = 10.0) -> int:
    """Kills whatever still runs in ``box`` and removes its directories; returns how many
    processes were left to kill."""
    killed: set[int] = set()
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        pids = {int(p) for f in box.procs_files() if f.exists() for p in f.read_text().split()}
        if not pids:
            break
        for pid in pids - killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed |= pids
        time.sleep(0.05)
    for d in box.dirs.values():
        _rmdir(d, deadline)
    return len(killed)


def _rmdir(d: Path, deadline: float) -> None:
    while True:
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                print(f"could not remove {d}; remove it with `rmdir {d}`", file=sys.stderr)
                return
            time.sleep(0.1)


@dataclass
class Sampler:
    """Reads ``read()`` every ``every`` seconds in a thread and keeps the largest value."""

    read: Callable[[], int]
    every: float
    peak: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while True:
            with contextlib.suppress(OSError):
                self.peak = max(self.peak, self.read())
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


def account(box: Box) -> dict[str, float]:
    """What the group's files say after a run: CPU and throttled seconds (``nan`` where no
    cpu accounting), peak charge in bytes, limit hits and OOM kills."""
    m = box.memory
    if box.version == 1:
        oom = parse_keyed(_read_text(m / "memory.oom_control"))
        acct = box.dirs.get("cpuacct")
        cpu_stat = (
            parse_keyed(_read_text(box.dirs["cpu"] / "cpu.stat")) if "cpu" in box.dirs else {}
        )
        return {
            "cpu": _read_int(acct / "cpuacct.usage", -1) / 1e9 if acct else float("nan"),
            "throttled": cpu_stat.get("throttled_time", 0) / 1e9,
            "peak": _read_int(m / "memory.max_usage_in_bytes"),
            "limit_hits": _read_int(m / "memory.failcnt"),
            "oom_kills": oom.get("oom_kill", 0),
        }
    cpu_stat, events = (parse_keyed(_read_text(m / f)) for f in ("cpu.stat", "memory.events"))
    return {
        "cpu": cpu_stat.get("usage_usec", -1) / 1e6,
        "throttled": cpu_stat.get("throttled_usec", 0) / 1e6,
        "peak": _read_int(m / "memory.peak"),
        "limit_hits": events.get("max", 0),
        "oom_kills": events.get("oom_kill", 0),
    }


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


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
    with Sampler(box.anon_bytes, args.sample).running() as sampler:
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
    return 0 if all(r.exit == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
