"""JVM options for the JVMs the tests start themselves (a standalone cluster's master,
worker, driver and executors, through ``JAVA_TOOL_OPTIONS``), where a JVM loaded a class,
and a default session started in a fresh interpreter (:func:`session_child`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import absnb
from absnb.runtime.spark import jvm_archive
from absnb.runtime.spark.session import SESSION_MEMORY

CHILD = """
import json, sys
import absnb
from absnb.runtime.spark import default_session
spark = default_session("local[1]")
ran = spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).collect()
jvm = spark.sparkContext._jvm
heap = jvm.java.lang.Runtime.getRuntime().maxMemory()
memory = jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
committed = memory.getHeapMemoryUsage().getCommitted()
flags = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
print(json.dumps({"exec": spark.sparkContext.pythonExec, "ran": ran, "file": absnb.__file__,
                  "heap": heap, "committed": committed, "flags": flags}))
spark.stop()
"""
"""What :func:`session_child` runs: a default session and a one-task job."""

FAST_JVM = f"{SESSION_MEMORY['spark.driver.extraJavaOptions']} {jvm_archive.java_options()}"
"""The options :func:`~absnb.runtime.spark.default_session` starts the driver's JVM with
(C1 only, the serial collector: about half the CPU time to start), and the class-data
archive where there is one: JVMs started with the driver's class path map it (the cluster
tests took 54 and 57 s of the machine's CPU with it, 63 and 64 s without), the others
(Spark's launcher, for one) refuse it with one warning line in their logs. The tests' jobs
are far too small to miss C2."""


def log_classes(log: Path) -> str:
    """A JVM option (for ``JDK_JAVA_OPTIONS``) that logs every class the JVM loads to
    ``log``, each with where it came from (a jar, or the class-data archive)."""
    return f"-Xlog:class+load=info:file={log}"


def loaded_from(log: Path, name: str) -> str:
    """Where the JVM that wrote ``log`` (:func:`log_classes`) loaded class ``name`` from:
    ``shared objects file (top)`` for the class-data archive, else a jar's URL."""
    for line in log.read_text().splitlines():
        if f" {name} source: " in line:
            return line.split(" source: ", 1)[1]
    raise AssertionError(f"{name} is not in {log}: the JVM did not load it")


def session_child(folder: Path, archive: str | None = None) -> dict[str, Any]:
    """What :data:`CHILD` prints, run in a fresh interpreter in ``folder`` (no
    ``PYSPARK_PYTHON``, no ``JAVA_TOOL_OPTIONS``; ``ABSNB_JVM_ARCHIVE=archive`` if given),
    and where its JVM loaded ``SparkContext`` from (``loaded``, :func:`loaded_from`)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "JAVA_TOOL_OPTIONS")}
    # the package under test, from a directory that does not hold it
    env["PYTHONPATH"] = str(Path(absnb.__file__).parent.parent)
    env.pop(jvm_archive.ENV, None)
    if archive is not None:
        env[jvm_archive.ENV] = archive
    env["JDK_JAVA_OPTIONS"] = log_classes(folder / "classes.log")
    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["loaded"] = loaded_from(folder / "classes.log", "org.apache.spark.SparkContext")
    return result
