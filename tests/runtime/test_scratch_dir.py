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


KILLED = """
import sys, time
from absnb.runtime.storage.scratch import scratch_dir
print(scratch_dir(sys.argv[1]), flush=True)
time.sleep(60)
"""


def test_the_directory_of_a_killed_process_is_removed_by_the_next_one(tmp_path) -> None:
    """A process killed with SIGKILL runs no exit handler (a notebook's kernel shut down
    while Spark held it): its directory stays until another process makes one."""
    from absnb.runtime.storage.scratch import LOCK, scratch_dir, sweep

    prefix = f"absnb-test-sweep-{os.getpid()}-"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, prefix],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )  # fmt: skip
    assert child.stdout is not None
    left = Path(child.stdout.readline().strip())
    (left / "chk").write_text("x")
    assert sweep(prefix) == []  # its process lives: kept
    assert (left / "chk").exists()
    child.kill()
    child.wait()
    assert left.exists()  # no exit handler ran
    mine = scratch_dir(prefix)  # the next directory of that prefix sweeps it away
    assert not left.exists()
    assert not Path(str(left) + LOCK).exists()
    assert sweep(prefix) == []  # this process lives: its directory is kept
    assert Path(mine).exists()
