"""Checkpoint directories nobody named: temporary, and removed when the process exits.

A :class:`~absnb.runtime.SparkRuntime` without ``checkpoint_dir`` (and the benchmarks'
runtimes) checkpoint into one of these, so that a class or a benchmark running many jobs
does not leave its checkpoints behind in the temporary folder. Name a ``checkpoint_dir`` to
keep them.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile


def scratch_dir(prefix: str = "absnb-checkpoints-") -> str:
    """A fresh temporary directory, removed (with everything in it) when the process exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
