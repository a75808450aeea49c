"""Checkpoint directories nobody named: temporary, and removed when the process exits.

A :class:`~absnb.runtime.SparkRuntime` without ``checkpoint_dir`` (and the benchmarks'
runtimes) checkpoint into one of these, so that a class or a benchmark running many jobs
does not leave its checkpoints behind in the temporary folder. Name a ``checkpoint_dir`` to
keep them.

A process that is killed (a notebook's kernel shut down while Spark holds it, SIGKILL) runs
no exit handler: its directory stays. So each directory has a lock file beside it
(``<directory>.lock``), locked for as long as its process lives (the operating system lets
go of the lock when the process dies, however it dies), and making a directory first
removes every one of the same prefix whose lock is free.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import glob
import os
import shutil
import tempfile

LOCK = ".lock"
"""The suffix of a directory's lock file, beside it."""

_held: list[int] = []
"""The open lock files of this process's directories (closing one would free its lock)."""


def scratch_dir(prefix: str = "absnb-checkpoints-") -> str:
    """A fresh temporary directory, removed (with everything in it) when the process exits;
    the directories of this ``prefix`` left by processes that died are removed first."""
    sweep(prefix)
    path = tempfile.mkdtemp(prefix=prefix)
    fd = os.open(path + LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _held.append(fd)
    atexit.register(_remove, path)
    return path


def sweep(prefix: str) -> list[str]:
    """Remove the temporary directories of ``prefix`` whose process is gone (their lock
    file's lock is free); returns them. A directory without a lock file is left alone."""
    removed = []
    for lock in glob.glob(os.path.join(tempfile.gettempdir(), glob.escape(prefix) + "*" + LOCK)):
        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:  # removed meanwhile by its own process or another sweep
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its process lives
            os.close(fd)
            continue
        try:
            path = lock.removesuffix(LOCK)
            _remove(path)
            removed.append(path)
        finally:
            os.close(fd)
    return removed


def _remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.unlink(path + LOCK)
