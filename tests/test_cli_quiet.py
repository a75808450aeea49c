"""The command line's Spark runs show absnb's report, not the JVM's log; --verbose and
ABSNB_SPARK_LOG bring the log back, and a failed run shows the log's last lines.

The JVM's start-up lines appear only when a process starts Spark: each test below that
runs Spark starts a fresh process, and two do (quiet, then verbose). The report of a run on
Spark is tests/test_cli.py's, in its own process.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from absnb.cli.spark_log import TAIL, log_tail, shown_on_failure, wants_log

ROOT = Path(__file__).resolve().parents[1]
JVM_LINES = (
    "Using incubator modules",
    "resolves to a loopback address",
    "log4j",
    "Setting default log level",
    "NativeCodeLoader",
    " WARN ",
)
"""What the JVM prints on its own: a quiet run shows none of it."""

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")


def _absnb(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``absnb run`` on Spark, its temporary folder ``tmp_path / "tmp"``."""
    environ = {k: v for k, v in os.environ.items() if k != "ABSNB_SPARK_LOG"}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    environ.update(PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path / "tmp"), **env)
    return subprocess.run(
        [sys.executable, "-m", "absnb", "run", "--runtime", "spark", "--job", "word_count",
         "--master", "local[2]", "--interval", "0.5", *argv],
        capture_output=True, text=True, cwd=tmp_path, env=environ, timeout=300,
    )  # fmt: skip


@needs_java
def test_a_spark_run_shows_no_jvm_line_and_a_failed_one_the_log_s_tail(tmp_path: Path) -> None:
    """A fresh process starting Spark quietly (quiet_session, which the labs' part d starts
    too: tests/labs/test_lab_spark.py), whose task fails and may not restart: nothing of the
    JVM shows until the failure, then the tail of Spark's log and the error."""
    done = _absnb(tmp_path, "--crash", "count[1]@1", "--max-restarts", "0")
    assert done.returncode == 1, done.stderr[-3000:]
    before, heading, tail = done.stderr.partition("Spark's log (")
    assert heading, done.stderr[-3000:]
    said = done.stdout + before
    assert [line for line in JVM_LINES if line in said] == []
    assert "injected failure of count[1]" in tail
    # the whole log is kept where the heading says, after the process has exited; the
    # session's own log and the checkpoints were in scratch folders, removed at exit
    named = re.match(r"(.+)\), its last (\d+) lines:\n", tail)
    assert named, tail[:500]
    kept, lines = Path(named[1]), int(named[2])
    assert sorted((tmp_path / "tmp").iterdir()) == [kept]
    text = kept.read_text()
    assert "NativeCodeLoader" in text  # the JVM's own start-up lines
    assert text.splitlines()[-lines:] == tail[named.end() :].splitlines()[:lines]


@needs_java
def test_verbose_brings_spark_s_log_back(tmp_path: Path) -> None:
    """--verbose in a real run; ABSNB_SPARK_LOG=1 takes the same path (test_wants_log)."""
    done = _absnb(tmp_path, "--verbose")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "exactly-once: yes" in done.stdout
    assert [line for line in JVM_LINES if line in done.stderr], done.stderr[-2000:]


def test_log_tail_is_the_file_s_last_lines_headed_by_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "spark.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    spark = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default: str(log)))
    tail = log_tail(spark, lines=3).splitlines()
    assert tail == [f"Spark's log ({log}), its last 3 lines:", "line 97", "line 98", "line 99"]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "kept"))
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError, match="boom"), shown_on_failure(spark):
        raise RuntimeError("boom")
    (kept,) = (tmp_path / "kept").iterdir()  # a copy of the whole log, named in the heading
    assert kept.read_text() == log.read_text()
    assert capsys.readouterr().err.startswith(f"Spark's log ({kept}), its last {TAIL} lines:")
    nowhere = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default: None))
    assert log_tail(nowhere) == ""


@pytest.mark.parametrize(
    ("verbose", "env", "expected"),
    [(False, None, False), (True, None, True), (False, "1", True), (False, "0", False)],
)
def test_wants_log(
    verbose: bool, env: str | None, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is None:
        monkeypatch.delenv("ABSNB_SPARK_LOG", raising=False)
    else:
        monkeypatch.setenv("ABSNB_SPARK_LOG", env)
    assert wants_log(SimpleNamespace(verbose=verbose)) is expected
