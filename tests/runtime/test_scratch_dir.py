"""A runtime given no checkpoint directory leaves nothing behind in the temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import os, sys
from types import SimpleNamespace
from absnb.runtime.spark import SparkRuntime
from absnb.experiments.sessions import scratch_runtime
runtime = SparkRuntime(SimpleNamespace())  # a stand-in session: no JVM needed
bench = scratch_runtime(SimpleNamespace())
named = SparkRuntime(SimpleNamespace(), checkpoint_dir=sys.argv[1])
for r in (runtime, bench, named):
    open(os.path.join(r.checkpoint_dir, "chk"), "w").write("x")  # a file in each
    print(r.checkpoint_dir)
"""


def test_an_unnamed_checkpoint_dir_is_removed_at_exit_and_a_named_one_kept(tmp_path) -> None:
    named = tmp_path / "mine"
    named.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(named)],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True,
    )  # fmt: skip
    unnamed, bench, kept = done.stdout.split()
    assert Path(kept) == named
    assert (named / "chk").read_text() == "x"
    assert "absnb-checkpoints-" in unnamed
    assert "absnb-bench-" in bench
    assert not Path(unnamed).exists()
    assert not Path(bench).exists()
