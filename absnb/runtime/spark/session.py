"""A SparkSession for absnb (:func:`default_session`): small, quick to start, with Spark's
Python daemon preloading absnb; and :func:`quiet_task_failures` for failures injected on
purpose."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeAlias

    from pyspark.sql import SparkSession

    Session: TypeAlias = SparkSession
    """pyspark's SparkSession, for annotations outside absnb.runtime (which alone imports
    pyspark)."""

from absnb.core.errors import JavaNotFoundError
from absnb.runtime.spark import jvm_archive

SESSION_MEMORY: dict[str, str | int | float | bool | None] = {
    "spark.driver.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xms32m",
}
"""What :func:`default_session` sets to keep a local job's memory and start-up small. The
driver's JVM only schedules the barrier stage and serves the input rows (the records travel
between the Python hosts): 512 MiB of heap at most, not 1 GiB, starting at 32 MiB (the
JVM's own start is a 64th of the machine's memory, 384 MiB on 24 GiB, and the young
generation it then sizes from that is all touched within a few collections: the driver's
JVM held 345 MiB through four runs of the Figure 5 job at scale 8, and 261 MiB with
``-Xms32m``, its heap grown to 90 MiB), and no web UI. It compiles with C1
only and collects with the serial collector: starting a session and running a first small
job took about 11 s of the JVM's CPU time instead of 22 s on a two-core machine (C2's
compiler threads compiling Spark's start-up code), which is most of a notebook's start on
one CPU of a Binder pod. Python workers are reused (Spark's default): forking a fresh one
for every task made the many short tasks of a Structured Streaming query or a small job
import their libraries again each time (the runtime's Spark tests took 2.8x as long).
``spark.driver.memory`` and ``spark.driver.extraJavaOptions`` apply only when the session
starts the JVM."""


def default_session(master: str = "local[*]") -> SparkSession:
    """A SparkSession for absnb: quiet, quick to free the slots of failed tasks, quick
    to start Python workers (:mod:`absnb.runtime.spark.daemon` forks them with absnb imported)
    and small, with a JVM quick to start (:data:`SESSION_MEMORY`, and the class-data
    archive of :mod:`absnb.runtime.spark.jvm_archive` where one is built)."""
    from pyspark.sql import SparkSession

    from absnb.runtime.spark.jvm_archive import java_path

    if java_path() is None:
        raise JavaNotFoundError(
            "Spark needs Java 17 and none was found (no java in JAVA_HOME or on the PATH): "
            "install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or set "
            "JAVA_HOME; the simulator's notebooks and `absnb run` need no Java"
        )
    if master.startswith("local"):
        # Workers on this machine run this interpreter (a virtual environment's, say), not
        # whatever `python3` is first on the PATH; PYSPARK_PYTHON still chooses.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName("absnb")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.task.killTimeout", "1s")
        .config("spark.python.daemon.module", "absnb.runtime.spark.daemon")
        .config("spark.sql.shuffle.partitions", "4")
        .config(map=SESSION_MEMORY)
        .config("spark.driver.extraJavaOptions", _driver_java_options())
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    _reap_when_it_exits(spark)
    return spark


_reaped: set[int] = set()
"""The JVMs (process ids) that a thread of :func:`_reap_when_it_exits` waits for."""


def _reap_when_it_exits(spark: SparkSession) -> None:
    """Collect the JVM's exit status as soon as it exits, in a daemon thread (pyspark keeps
    its process but never waits for it). ipykernel, shutting down, signals every child in
    its process group until none is left, and an exited JVM never collected stays listed:
    each shutdown of a notebook's kernel that had started Spark waited out jupyter_client's
    2.5 s and ended in a SIGTERM, which ran none of the kernel's exit handlers."""
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is None or proc.pid in _reaped:
        return
    _reaped.add(proc.pid)
    threading.Thread(target=proc.wait, name="absnb-jvm-reaper", daemon=True).start()


def quiet_session(master: str = "local[4]") -> Session:
    """:func:`~absnb.runtime.spark.session.default_session` with the JVM's own output (its start-up
    lines: the log4j profile, a loopback hostname, no native Hadoop; later errors) sent to
    a log file instead of this process's stderr, so that a notebook shows none of it. The
    file's path is ``spark.conf.get("absnb.jvm_log")``; if the session cannot start, the
    file's text is written to stderr before the error is raised. The file is in a scratch
    folder (:func:`~absnb.runtime.storage.scratch.scratch_dir`), removed when this process
    exits, or by the next session when the process was killed: a class that starts a
    session in every notebook does not fill the temporary folder with logs."""
    from absnb.runtime.storage.scratch import scratch_dir

    path = os.path.join(scratch_dir("absnb-spark-"), "jvm.log")
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(fd, 2)  # the JVM started now inherits the log file as its stderr
    try:
        spark = default_session(master)
    except BaseException:
        os.dup2(saved, 2)
        with open(path, errors="replace") as f:
            sys.stderr.write(f.read())
        raise
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
    spark.conf.set("absnb.jvm_log", path)
    return spark


def _driver_java_options() -> str:
    """:data:`SESSION_MEMORY`'s JVM options, and the class-data archive's when there is one
    (:mod:`absnb.runtime.spark.jvm_archive`: the JVM's CPU time to start a session and run a
    first job fell from 6.2 s to 3.5 s with it)."""
    options = str(SESSION_MEMORY["spark.driver.extraJavaOptions"])
    archive = jvm_archive.java_options()
    return f"{options} {archive}" if archive else options


@contextmanager
def quiet_task_failures(spark: SparkSession) -> Iterator[None]:
    """Spark's log level FATAL inside the block, then what it was: Spark logs every failed
    task with a stack trace at ERROR, which failures injected on purpose need not show."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session's context has its JVM
    root = jvm.org.apache.logging.log4j.LogManager.getRootLogger()
    level = root.getLevel().toString()
    spark.sparkContext.setLogLevel("FATAL")
    try:
        yield
    finally:
        spark.sparkContext.setLogLevel(level)
