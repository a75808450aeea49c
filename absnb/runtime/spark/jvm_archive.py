"""A class-data archive of the driver's JVM: Spark's classes mapped from one file at start.

Starting a session, the driver's JVM loads, parses and verifies thousands of classes from
Spark's jars, every time. The JDK's dynamic class-data sharing (JEP 350) keeps them in an
archive instead: a JVM started with ``-XX:ArchiveClassesAtExit=FILE`` writes the classes it
loaded to FILE as it exits, and one started with ``-XX:SharedArchiveFile=FILE`` maps them.
:func:`default_session <absnb.runtime.spark.session.default_session>` adds that flag when this
module's archive exists (:func:`java_options`); :func:`build` makes it (``python3 -m
absnb.runtime.spark.jvm_archive``; ``.ci/setup`` and Binder's ``postBuild`` run it). Without an
archive a session starts as before, only slower.

The archive belongs to one JVM and one Spark: its name holds a digest of the ``java`` that
Spark runs and of Spark's jars, so another JDK or another PySpark looks for its own. A
damaged archive is never mapped: a truncated one (whose mapping would crash the JVM) fails
the size recorded beside it (``FILE.json``, written after the archive), and the JVM checks
the archive's checksums (``-XX:+VerifySharedSpaces``) and starts without it if one differs,
with one warning line in its output. A folder holding files on the JVM's class path (a
``SPARK_CONF_DIR`` with a ``spark-defaults.conf``) keeps the JVM from writing an archive or
using one. ``ABSNB_JVM_ARCHIVE`` names another file, or ``off``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = "ABSNB_JVM_ARCHIVE"
"""A file to use (and build) instead of the default location, or ``off`` for none."""

BUILD_TIMEOUT_S = 300.0
"""The longest :func:`build`'s child may take (a session, a small job, the archive's write)."""

_CHILD = """
import contextlib
from pyspark import SparkContext
from absnb.jobs import word_count
from absnb.runtime.spark import SparkRuntime, default_session

spark = default_session("local[2]")
runtime = SparkRuntime(spark)
runtime.run(word_count(), "abs", checkpoint_interval=0.05)
spark.stop()
gateway = SparkContext._gateway
with contextlib.suppress(Exception):  # the JVM exits before it answers
    gateway.jvm.System.exit(0)
raise SystemExit(gateway.proc.wait(timeout=120))  # the JVM's status: 0 once it wrote
"""
"""What :func:`build`'s child runs: a session and a small job on it (the classes a run
loads), then a clean exit of the JVM, which writes the archive."""


def java_path() -> Path | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.path.exists(found) else None


def _spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _digest(java: Path) -> str:
    """What an archive is valid for: the JVM's binary and Spark's jars (names and sizes)."""
    h = hashlib.sha256()
    stat = java.stat()
    h.update(f"{java}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    jars = _spark_jars()
    for jar in sorted(jars.glob("*.jar")) if jars.is_dir() else ():
        h.update(f"{jar.name}:{jar.stat().st_size}\n".encode())
    return h.hexdigest()[:16]


def _folders() -> list[Path]:
    """Where archives live, in order: beside the interpreter (a virtual environment's,
    found by every kernel that runs it), then the user's cache."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [Path(sys.prefix) / "share" / "absnb", Path(cache) / "absnb"]


def archive_path() -> Path | None:
    """The archive for this JVM and this Spark: ``ABSNB_JVM_ARCHIVE``'s file, else the
    first folder's that exists, else where :func:`build` would write it. None when there is
    no ``java`` or ``ABSNB_JVM_ARCHIVE`` is ``off``."""
    chosen = os.environ.get(ENV, "")
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    java = java_path()
    if java is None:
        return None
    import pyspark

    name = f"spark-{pyspark.__version__}-{_digest(java)}.jsa"
    paths = [folder / name for folder in _folders()]
    for path in paths:
        if path.exists():
            return path
    for path in paths:
        if _writable(path.parent):
            return path
    return paths[-1]


def _writable(folder: Path) -> bool:
    probe = folder
    while not probe.exists():
        probe = probe.parent
    return os.access(probe, os.W_OK)


def usable(path: Path) -> bool:
    """True when ``path`` holds a whole archive: it has the size :func:`build` recorded."""
    try:
        recorded = json.loads(path.with_name(path.name + ".json").read_text())["bytes"]
        return isinstance(recorded, int) and path.stat().st_size == recorded
    except (OSError, ValueError, KeyError, TypeError):
        return False


def java_options() -> str:
    """The driver JVM's options that map the archive, or ``""`` when there is none whole;
    a path with spaces is quoted (Spark splits ``extraJavaOptions`` as a shell would)."""
    path = archive_path()
    if path is None or not usable(path):
        return ""
    return f"{shlex.quote(f'-XX:SharedArchiveFile={path}')} -XX:+VerifySharedSpaces"


def build(path: Path | None = None) -> Path:
    """Make the archive at ``path`` (default: :func:`archive_path`) and return its path: a
    child interpreter starts a session, runs a small job and ends its JVM, which writes
    the archive to a temporary file; that file, then its size beside it, replace the old.

    Raises RuntimeError naming the problem when there is no ``java`` or the child fails
    or takes over :data:`BUILD_TIMEOUT_S`."""
    path = path or archive_path()
    if path is None and os.environ.get(ENV) == "off":
        raise RuntimeError(f"no archive to build: {ENV}=off (unset it, or name a file)")
    if path is None:
        raise RuntimeError(
            "no archive to build: no java in JAVA_HOME or on the PATH (install Java 17, "
            "e.g. apt-get install openjdk-17-jre-headless)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    tmp.unlink()  # the JVM writes it afresh
    env = dict(os.environ, JDK_JAVA_OPTIONS=f"-XX:ArchiveClassesAtExit={tmp}")
    env[ENV] = "off"  # the child's JVM records; it maps no archive of its own
    try:
        try:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD],
                env=env,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(
                f"building the JVM archive {path} took over {BUILD_TIMEOUT_S:g} s: stopped"
            ) from e
        if done.returncode != 0 or not tmp.exists():
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            raise RuntimeError(
                f"building the JVM archive {path} failed (exit {done.returncode}; "
                f"archive written: {tmp.exists()}):\n{tail}"
            )
        size = tmp.stat().st_size
        os.replace(tmp, path)
        sidecar = path.with_name(path.name + ".json")
        part = sidecar.with_name(sidecar.name + ".tmp")
        part.write_text(json.dumps({"bytes": size}))
        os.replace(part, sidecar)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def main(argv: list[str] | None = None) -> int:
    """``python3 -m absnb.runtime.spark.jvm_archive [--rebuild]``: build the archive unless a
    whole one is there; print where it is, its size and how long the build took."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python3 -m absnb.runtime.spark.jvm_archive",
        description="Build the driver JVM's class-data archive that default_session maps.",
    )
    parser.add_argument("--rebuild", action="store_true", help="build it even if one is there")
    args = parser.parse_args(argv)
    began = time.monotonic()
    path = archive_path()
    try:
        if path is None or args.rebuild or not usable(path):
            path = build(path)
            took = f"built in {time.monotonic() - began:.0f} s"
        else:
            took = "already built"
    except RuntimeError as e:
        print(f"absnb.runtime.spark.jvm_archive: {e}", file=sys.stderr)
        return 1
    mib = path.stat().st_size / 2**20
    print(f"JVM class-data archive: {path} ({mib:.0f} MiB, {took})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
