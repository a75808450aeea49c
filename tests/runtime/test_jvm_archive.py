"""The driver JVM's class-data archive (absnb.runtime.spark.jvm_archive): a damaged or missing
archive is never mapped, a failed build keeps the archive there was, another Spark looks for
its own. That a default session maps a whole archive and loads Spark's classes from it:
tests/runtime/test_session.py."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest

from absnb.runtime.spark import jvm_archive
from tests.runtime.jvm import session_child


def test_a_corrupted_archive_is_refused_by_the_jvm_and_the_session_runs(
    jvm_archive_path: Path, tmp_path: Path
) -> None:
    """A flipped byte inside the archive (its size still the recorded one): the JVM's
    checksums refuse it, Spark's classes come from its jars, the job runs."""
    damaged = tmp_path / "damaged.jsa"
    shutil.copyfile(jvm_archive_path, damaged)
    shutil.copyfile(f"{jvm_archive_path}.json", f"{damaged}.json")
    with open(damaged, "r+b") as f:
        f.seek(damaged.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    run = session_child(tmp_path, str(damaged))
    assert f"-XX:SharedArchiveFile={damaged}" in run["flags"]
    assert run["loaded"].startswith("file:")
    assert run["loaded"].endswith(".jar")
    assert run["ran"] == [run["exec"]]


def whole_archive(tmp_path: Path, size: int = 4096) -> Path:
    path = tmp_path / "a.jsa"
    path.write_bytes(b"\0" * size)
    Path(f"{path}.json").write_text(json.dumps({"bytes": size}))
    return path


def test_a_whole_archive_is_mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = whole_archive(tmp_path)
    monkeypatch.setenv(jvm_archive.ENV, str(path))
    assert jvm_archive.java_options() == f"-XX:SharedArchiveFile={path} -XX:+VerifySharedSpaces"


@pytest.mark.parametrize("damage", ["truncated", "grown", "no size", "bad size", "missing"])
def test_an_archive_not_of_its_recorded_size_is_never_mapped(
    damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A truncated archive would crash the JVM that maps it (SIGBUS): it is not offered."""
    path = whole_archive(tmp_path)
    sidecar = Path(f"{path}.json")
    if damage == "truncated":
        path.write_bytes(b"\0" * 1000)
    elif damage == "grown":
        path.write_bytes(b"\0" * 5000)
    elif damage == "no size":
        sidecar.unlink()
    elif damage == "bad size":
        sidecar.write_text("{not json")
    else:
        path.unlink()
    monkeypatch.setenv(jvm_archive.ENV, str(path))
    assert not jvm_archive.usable(path)
    assert jvm_archive.java_options() == ""


def test_off_maps_no_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jvm_archive.ENV, "off")
    assert jvm_archive.archive_path() is None
    assert jvm_archive.java_options() == ""
    with pytest.raises(RuntimeError, match="ABSNB_JVM_ARCHIVE=off"):
        jvm_archive.build()


def test_another_spark_looks_for_another_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("java") is None:
        pytest.skip("Java is not installed")
    monkeypatch.delenv(jvm_archive.ENV, raising=False)
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"x" * 10)
    monkeypatch.setattr(jvm_archive, "_spark_jars", lambda: jars)
    first = jvm_archive.archive_path()
    (jars / "spark-core.jar").write_bytes(b"x" * 11)
    second = jvm_archive.archive_path()
    assert first is not None
    assert second is not None
    assert first.name != second.name


def test_a_failed_build_leaves_the_archive_it_had(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child fails before its JVM writes anything: build raises with the child's
    status and the end of its stderr; the archive already there, its size and the folder
    are as they were."""
    path = whole_archive(tmp_path)
    monkeypatch.setattr(jvm_archive, "_CHILD", "import sys; sys.exit('no session here')")
    with pytest.raises(RuntimeError, match=r"(?s)exit 1.*no session here"):
        jvm_archive.build(path)
    assert jvm_archive.usable(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsa", "a.jsa.json"]


def test_the_command_builds_only_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python3 -m absnb.runtime.spark.jvm_archive``: a whole archive is left as it is; a
    truncated one is built again (here by a stand-in for the child's JVM)."""
    path = whole_archive(tmp_path)
    monkeypatch.setenv(jvm_archive.ENV, str(path))
    built: list[Path] = []
    monkeypatch.setattr(jvm_archive, "build", lambda p: built.append(p) or p)
    assert jvm_archive.main([]) == 0
    assert built == []
    assert "already built" in capsys.readouterr().out
    path.write_bytes(b"\0" * 10)
    assert jvm_archive.main([]) == 0
    assert built == [path]
    assert jvm_archive.main(["--rebuild"]) == 0
    assert built == [path, path]


def test_the_command_says_what_stops_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(jvm_archive.ENV, "off")
    assert jvm_archive.main([]) == 1
    assert "ABSNB_JVM_ARCHIVE=off (unset it" in capsys.readouterr().err
    monkeypatch.delenv(jvm_archive.ENV)
    monkeypatch.setenv("JAVA_HOME", "/nonexistent-jdk")
    assert jvm_archive.main([]) == 1
    assert "install Java 17" in capsys.readouterr().err


def test_a_path_with_spaces_stays_one_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark splits ``spark.driver.extraJavaOptions`` as a shell would."""
    folder = tmp_path / "my envs"
    folder.mkdir()
    path = whole_archive(folder)
    monkeypatch.setenv(jvm_archive.ENV, str(path))
    assert shlex.split(jvm_archive.java_options()) == [
        f"-XX:SharedArchiveFile={path}",
        "-XX:+VerifySharedSpaces",
    ]


def test_a_build_that_hangs_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = whole_archive(tmp_path)
    monkeypatch.setattr(jvm_archive, "_CHILD", "import time; time.sleep(30)")
    monkeypatch.setattr(jvm_archive, "BUILD_TIMEOUT_S", 0.5)
    with pytest.raises(RuntimeError, match=r"took over 0\.5 s"):
        jvm_archive.build(path)
    assert jvm_archive.usable(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsa", "a.jsa.json"]
