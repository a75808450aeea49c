"""What holds a cgroup's anonymous memory, process by process: each one's proportional share
of anonymous pages (``Pss_Anon`` in ``/proc/PID/smaps_rollup``: a page a forked Python worker
still shares with its parent counts half in each) and a short command line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
_VALUE_OPTIONS = ("-cp", "-classpath", "--class-path", "-f")
"""Options whose long value (a class path, a kernel's connection file) the command leaves out."""


@dataclass(frozen=True)
class Process:
    pid: int
    anon: int
    """Bytes: the process's proportional share of anonymous memory."""
    command: str


def pss_anon(smaps_rollup: str) -> int:
    """Bytes of ``Pss_Anon`` in a ``smaps_rollup`` text (``Anonymous``, resident anonymous
    pages counted whole, on kernels older than 5.9 without it)."""
    fields = {}
    for line in smaps_rollup.splitlines():
        name, _, rest = line.partition(":")
        if rest.strip().endswith("kB"):
            fields[name] = int(rest.split()[0]) * 1024
    return fields.get("Pss_Anon", fields.get("Anonymous", 0))


def short_command(cmdline: bytes, width: int = 80) -> str:
    """``/proc/PID/cmdline`` as one line: the program's base name, then its arguments but
    the values of :data:`_VALUE_OPTIONS`, cut at ``width`` characters."""
    args = [a.decode(errors="replace") for a in cmdline.split(b"\0") if a]
    if not args:
        return "?"
    kept, skip = [Path(args[0]).name], False
    for arg in args[1:]:
        if not skip:
            kept.append(arg)
        skip = arg in _VALUE_OPTIONS
    line = " ".join(kept)
    return line if len(line) <= width else line[: width - 3] + "..."


def processes(pids: Iterable[int], proc: Path = Path("/proc")) -> list[Process]:
    """The processes ``pids`` that still run, the most anonymous memory first."""
    found = []
    for pid in pids:
        try:
            rollup = (proc / str(pid) / "smaps_rollup").read_text()
            cmdline = (proc / str(pid) / "cmdline").read_bytes()
        except OSError:  # ended meanwhile
            continue
        found.append(Process(pid, pss_anon(rollup), short_command(cmdline)))
    return sorted(found, key=lambda p: (-p.anon, p.pid))


def format_processes(notebook: str, found: Sequence[Process]) -> str:
    """A Markdown table of ``found``, with their sum."""
    rows = [f"| {p.pid} | {p.anon / MIB:,.0f} | `{p.command}` |" for p in found]
    total = sum(p.anon for p in found)
    return "\n".join(
        [
            f"{notebook}, processes at its peak of anonymous memory (PSS anon):",
            "| pid | anon MiB | command |",
            "|---|---|---|",
            *rows,
            f"| all | {total / MIB:,.0f} | |",
        ]
    )
