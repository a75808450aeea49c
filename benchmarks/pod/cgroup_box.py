"""The cgroup side of ``run.py``: find where a fresh group may go (v1 or v2), make one with
a memory limit and a CPU quota, read its account, and remove it with whatever still runs in
it. Stdlib only; the parsing functions take file texts, so tests need no root."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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

    def pids(self) -> set[int]:
        """The processes in the group now (in any of its hierarchies)."""
        return {int(p) for f in self.procs_files() if f.exists() for p in f.read_text().split()}

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
        pids = box.pids()
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
