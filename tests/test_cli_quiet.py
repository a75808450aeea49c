"""The command line's Spark runs show absnb's report, not the JVM's log; --verbose and
ABSNB_SPARK_LOG bring the log back, and a failed run shows the log's last lines."""

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
def test_a_spark_run_prints_the_report_and_no_jvm_line(tmp_path: Path) -> None:
    done = _absnb(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "exactly-once: yes" in done.stdout
    said = done.stdout + done.stderr
    assert [line for line in JVM_LINES if line in said] == []
    # the log and the checkpoints went to scratch folders, removed at exit
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == []


@needs_java
def test_verbose_brings_spark_s_log_back(tmp_path: Path) -> None:
    """--verbose in a real run; ABSNB_SPARK_LOG=1 takes the same path (test_wants_log)."""
    done = _absnb(tmp_path, "--verbose")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "exactly-once: yes" in done.stdout
    assert [line for line in JVM_LINES if line in done.stderr], done.stderr[-2000:]


@needs_java
def test_a_failed_run_shows_spark_s_log_and_the_error(tmp_path: Path) -> None:
    done = _absnb(tmp_path, "--crash", "count[1]@1", "--max-restarts", "0")
    assert done.returncode == 1
    assert "injected failure of count[1]" in done.stderr
    # the whole log is kept where the heading says, after the process has exited
    heading = re.search(r"Spark's log \((.+)\), its last (\d+) lines:", done.stderr)
    assert heading, done.stderr[-3000:]
    kept = Path(heading[1])
    assert kept.parent == tmp_path / "tmp"
    text = kept.read_text()
    assert "NativeCodeLoader" in text  # the JVM's own start-up lines
    assert (
        text.splitlines()[-int(heading[2]) :]
        == (done.stderr.split(heading[0] + "\n", 1)[1].splitlines()[: int(heading[2])])
    )


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
