"""Without Java, starting Spark says in one line what to install, in Python, in Jupyter and
on the command line; the simulator's commands need no Java."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from absnb.core.errors import JavaNotFoundError

ROOT = Path(__file__).resolve().parents[2]


def _no_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)


def test_spark_runtime_without_java_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from absnb.runtime import SparkRuntime

    _no_java(monkeypatch, tmp_path)
    with pytest.raises(JavaNotFoundError, match="apt-get install openjdk-17-jre-headless") as e:
        SparkRuntime()
    shown = e.value._render_traceback_()
    assert len(shown) == 1
    assert shown[0].startswith("JavaNotFoundError: Spark needs Java 17")


def test_the_command_line_without_java(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env.update(PATH=str(tmp_path), PYTHONPATH=str(ROOT))
    run = [sys.executable, "-m", "absnb", "run"]
    spark = subprocess.run(
        [*run, "--runtime", "spark"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert spark.returncode == 2
    assert spark.stderr.count("\n") == 1
    assert "Spark needs Java 17" in spark.stderr
    assert "openjdk-17-jre-headless" in spark.stderr
    simulated = subprocess.run(run, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert simulated.returncode == 0, simulated.stderr
