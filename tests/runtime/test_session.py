"""default_session's Python workers run the driver's interpreter (a virtual environment's),
not whatever ``python3`` comes first on the PATH, and its JVM's heap is 512 MiB at most and
starts small; the JVM compiles with C1 only, collects with the serial collector and maps
Spark's classes from the class-data archive (a quicker start)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import absnb
from absnb.runtime.spark import session
from tests.runtime.jvm import session_child


def test_local_workers_run_the_drivers_interpreter(child: dict[str, Any]) -> None:
    result = child
    assert result["file"] == absnb.__file__
    assert result["exec"] == sys.executable
    assert Path(result["ran"][0]).resolve() == Path(sys.executable).resolve()


@pytest.fixture(scope="module")
def child(tmp_path_factory: pytest.TempPathFactory, jvm_archive_path: Path) -> dict[str, Any]:
    """A default session started in a fresh interpreter, once (tests/runtime/jvm.py's
    ``session_child``), with the machine's archive (the fixture skips without Java)."""
    result = session_child(tmp_path_factory.mktemp("child"))
    result["archive"] = str(jvm_archive_path)
    return result


def test_default_session_has_a_small_heap(child: dict[str, Any]) -> None:
    assert child["heap"] <= 512 * 2**20


def test_default_session_starts_its_heap_small(child: dict[str, Any]) -> None:
    """The heap starts at 32 MiB and grows as the JVM needs, instead of starting at a 64th
    of the machine's memory: after a first small job it has not grown past 256 MiB."""
    assert "-Xms32m" in child["flags"]
    assert child["committed"] <= 256 * 2**20


def test_default_session_starts_its_jvm_quickly(child: dict[str, Any]) -> None:
    """C1 only and the serial collector, from the session's own configuration (the child
    inherits no JAVA_TOOL_OPTIONS): the driver's JVM only schedules and serves rows."""
    assert "-XX:TieredStopAtLevel=1" in child["flags"]
    assert "-XX:+UseSerialGC" in child["flags"]


def test_default_session_maps_sparks_classes_from_the_archive(child: dict[str, Any]) -> None:
    """This machine's class-data archive (absnb.runtime.spark.jvm_archive), checked by the JVM:
    Spark's classes come from it, not from the jars."""
    assert f"-XX:SharedArchiveFile={child['archive']}" in child["flags"]
    assert "-XX:+VerifySharedSpaces" in child["flags"]
    assert child["loaded"] == "shared objects file (top)"


def _arenas() -> int | None:
    """How many arenas glibc's allocator has made in this process (the heaps malloc_info
    lists); None where there is no malloc_info (not glibc)."""
    import ctypes
    import os
    import tempfile

    libc = ctypes.CDLL(None)
    if not hasattr(libc, "malloc_info"):
        return None
    libc.fdopen.restype = ctypes.c_void_p
    with tempfile.TemporaryFile() as f:
        stream = ctypes.c_void_p(libc.fdopen(os.dup(f.fileno()), b"w"))
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        f.seek(0)
        return f.read().count(b"<heap nr=")


def _worker_facts(_: Any) -> Any:
    import gc
    import os
    import threading

    from absnb.runtime.host.parts import COLUMN_MODULES

    missing = [name for name in COLUMN_MODULES if name not in sys.modules]
    daemon_threads = len(os.listdir(f"/proc/{os.getppid()}/task"))  # the daemon forked us
    thread = threading.Thread(target=lambda: bytearray(1 << 16))  # a snapshot writer's malloc
    thread.start()
    thread.join()
    yield {
        "preloaded": "absnb.runtime.host.host" in sys.modules,
        "frozen": gc.get_freeze_count(),
        "arenas": _arenas(),
        "columns_missing": missing,
        "daemon_threads": daemon_threads,
    }


def test_workers_fork_from_a_daemon_with_absnb_loaded_and_frozen(spark: Any) -> None:
    """absnb.runtime.spark.daemon imports the hosts' modules and what columnar batches import
    (pyarrow, pandas) without starting a thread, then freezes its objects out of the
    collector's reach and has the allocator serve every thread from one arena, before it
    forks: a worker starts with all of them (a thread's allocations come from the main
    arena, which release_freed trims)."""
    (facts,) = spark.sparkContext.parallelize([0], 1).mapPartitions(_worker_facts).collect()
    assert facts["preloaded"]
    assert facts["columns_missing"] == []
    assert facts["daemon_threads"] == 1  # a process with threads must not fork
    assert facts["frozen"] > 10_000
    assert facts["arenas"] in (None, 1)


def test_the_jvm_is_collected_as_soon_as_it_exits() -> None:
    """The session's JVM, once exited, is no zombie: ipykernel, shutting its kernel down,
    signals every child in its process group until none is listed, and an exited JVM
    that pyspark never waited for kept each shutdown waiting 2.5 s before jupyter_client
    sent SIGTERM, which ran no exit handler. (A short process stands for the JVM.)"""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    gateway = SimpleNamespace(proc=proc)
    session._reap_when_it_exits(SimpleNamespace(sparkContext=SimpleNamespace(_gateway=gateway)))
    deadline = time.monotonic() + 10
    while proc.returncode is None:  # set by the waiting thread alone: nothing polls here
        assert time.monotonic() < deadline, "the exited process was not collected"
        time.sleep(0.01)
    assert proc.returncode == 0
