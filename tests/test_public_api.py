"""The curated public API: what ``import absnb`` offers, and what it costs."""

from __future__ import annotations

import json
import subprocess
import sys

import absnb

PUBLIC = [
    "PROTOCOLS",
    "AbsnbError",
    "ActionNotEnabledError",
    "Broadcast",
    "CancelCheckpointMarker",
    "ChannelId",
    "CheckpointBarrier",
    "CheckpointCoordinator",
    "Crash",
    "CyclicGraphError",
    "Deadlock",
    "DeclineCheckpoint",
    "Deliver",
    "Emit",
    "EndInput",
    "Event",
    "ExecutionGraph",
    "Exploration",
    "FailureNotFiredWarning",
    "Forward",
    "GlobalSnapshot",
    "GraphError",
    "Hash",
    "Job",
    "JobGraph",
    "ManualScheduler",
    "Marker",
    "Notify",
    "ProtocolError",
    "RandomScheduler",
    "Rebalance",
    "Record",
    "Recover",
    "RoundRobinScheduler",
    "ScriptedScheduler",
    "SnapshotMismatchError",
    "Stepper",
    "TaskHarness",
    "TaskId",
    "TaskSnapshot",
    "TraceFormatError",
    "Transfer",
    "TriggerCheckpoint",
    "UnknownJobError",
    "UnknownProtocolError",
    "World",
    "bank_transfer",
    "build_job",
    "cyclic",
    "exactly_once",
    "explore",
    "find_deadlock",
    "get_language",
    "get_protocol",
    "set_language",
    "reference_output",
    "snapshot_problems",
    "word_count",
    "world_problems",
]

HEAVY = ["pandas", "pyspark", "plotly", "ipywidgets", "graphviz", "psycopg"]


def test_all_is_pinned() -> None:
    assert sorted(absnb.__all__) == sorted(PUBLIC)
    assert len(set(absnb.__all__)) == len(absnb.__all__)


def test_every_public_name_exists() -> None:
    missing = [name for name in absnb.__all__ if not hasattr(absnb, name)]
    assert missing == []


def test_star_import_gives_exactly_all() -> None:
    namespace: dict = {}
    exec("from absnb import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(PUBLIC)


PROBE = f"""
import json, sys, time
start = time.process_time()  # CPU time: other processes on a busy machine do not count
import absnb
elapsed = time.process_time() - start
heavy = [m for m in {HEAVY!r} if m in sys.modules]
print(json.dumps({{"elapsed": elapsed, "heavy": heavy, "file": absnb.__file__}}))
"""


def test_import_is_light_and_fast() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    result = json.loads(out.stdout)
    assert result["file"] == absnb.__file__  # the same package as the one under test
    assert result["heavy"] == []
    assert result["elapsed"] < 1.0
