"""A checkpoint that cannot be written no longer stops the job (Flink's
``execution.checkpointing.tolerable-failed-checkpoints``).

Checkpoint storage is a small tmpfs that the test fills mid-run: the checkpoints that find
it full are aborted, named in the checkpoint statistics and the events with the storage's
own error, and leave nothing behind; the job goes on, and once space is freed its
checkpoints complete again and the file sink's output is exactly once. With the storage
left full, one failed checkpoint more than tolerated stops the run with the
:class:`~absnb.runtime.storage.fs.StorageError`, and no Spark task fails (so Spark logs no
stack trace). Mounting a tmpfs needs root: elsewhere the storage is a folder the test
makes read-only instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import absnb
from absnb.runtime import StorageError
from absnb.runtime.spark import SparkRuntime, quiet_task_failures, word_count_answer
from absnb.runtime.storage.layout import MANIFEST
from absnb.sinks import FileSink
from tests.runtime.test_spark_sinks import exactly, text

RATE = 1_000
"""Lines a second each source reads: the run lasts about two seconds."""


@dataclass
class SmallStorage:
    """Checkpoint storage the test can make refuse every write mid-run: a 4 MiB tmpfs it
    fills (as root), or else a folder it makes read-only."""

    root: Path
    tmpfs: bool

    @property
    def refusal(self) -> str:
        """What the storage's error says when it refuses a write."""
        return "No space left on device" if self.tmpfs else "Permission denied"

    def refuse(self) -> Callable[[], None]:
        """Make every write fail from now on; returns what makes them succeed again."""
        if not self.tmpfs:
            folders = [self.root, *(p for p in self.root.rglob("*") if p.is_dir())]
            for folder in folders:
                folder.chmod(0o555)

            def writable() -> None:
                for folder in folders:
                    folder.chmod(0o755)

            return writable
        filler = self.root / "filler"
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
        return filler.unlink


@pytest.fixture
def small_storage() -> Iterator[SmallStorage]:
    """A 4 MiB tmpfs, unmounted after the test; where none can be mounted, a folder (the
    test then makes it read-only, which root would write to all the same)."""
    path = Path(tempfile.mkdtemp(prefix="absnb-tmpfs-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        if os.geteuid() == 0:
            path.rmdir()
            pytest.skip(f"root, and cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
        try:
            yield SmallStorage(path, tmpfs=False)
        finally:
            for folder in [path, *(p for p in path.rglob("*") if p.is_dir())]:
                folder.chmod(0o755)
            shutil.rmtree(path, ignore_errors=True)
        return
    try:
        yield SmallStorage(path, tmpfs=True)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
        with contextlib.suppress(OSError):
            path.rmdir()


def refused_after_checkpoints(
    storage: SmallStorage, n: int, again_after: float | None
) -> threading.Thread:
    """A thread that makes ``storage`` refuse every write once ``n`` manifests exist there,
    and take them again ``again_after`` seconds later (None: never)."""

    def run() -> None:
        deadline = time.monotonic() + 60
        while manifests(storage.root) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        again = storage.refuse()
        if again_after is not None:
            time.sleep(again_after)
            again()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def manifests(root: Path) -> int:
    """Manifests under ``root``: checkpoints complete and not yet pruned."""
    return sum(1 for _, _, names in os.walk(root) for name in names if name == MANIFEST)


@pytest.mark.parametrize("protocol", ["abs", "synchronous", "chandy-lamport"])
def test_checkpoints_that_find_the_storage_full_are_aborted_and_the_job_goes_on(
    spark, small_storage: SmallStorage, tmp_path: Path, protocol: str
) -> None:
    runtime = SparkRuntime(spark, checkpoint_dir=str(small_storage.root))
    sink = FileSink(tmp_path / "out")
    refusing = refused_after_checkpoints(small_storage, 1, again_after=0.5)
    refusal = small_storage.refusal
    with quiet_task_failures(spark):
        run = runtime.run(
            absnb.word_count(text(), sink=sink),
            protocol,
            checkpoint_interval=0.05,
            source_rate=RATE,
            tolerable_failed_checkpoints=1_000,
        )
    refusing.join(10)
    assert run.restarts == 0
    assert sorted(sink.committed()) == exactly(word_count_answer(spark, text()))
    rows = run.metrics.checkpoints()
    failed = rows[rows["failure_message"].fillna("").str.contains(refusal)]
    assert len(failed) >= 1, rows[["checkpoint_id", "status", "failure_message"]]
    assert set(failed["status"]) == {"FAILED"}
    after = rows[rows["checkpoint_id"] > failed["checkpoint_id"].max()]
    assert "COMPLETED" in set(after["status"])  # space freed: checkpoints complete again
    events = run.events
    aborted = events[
        (events["kind"] == "aborted")
        & events["detail"].fillna("").str.contains(small_storage.refusal)
    ]
    assert sorted(aborted["checkpoint"]) == sorted(failed["checkpoint_id"])
    # nothing of an aborted checkpoint is left to be taken for one
    job_dir = next(p for p in small_storage.root.iterdir() if p.is_dir())
    left = {int(p.name.split("-")[1]) for p in job_dir.iterdir() if p.name.startswith("chk-")}
    assert not left & set(failed["checkpoint_id"])


def test_one_failed_checkpoint_more_than_tolerated_stops_the_run(
    spark, small_storage: SmallStorage, tmp_path: Path
) -> None:
    runtime = SparkRuntime(spark, checkpoint_dir=str(small_storage.root))
    refused_after_checkpoints(small_storage, 1, again_after=None)
    with pytest.raises(StorageError) as stopped:
        runtime.run(
            absnb.word_count(text(2), sink=FileSink(tmp_path / "out")),
            "abs",
            checkpoint_interval=0.05,
            source_rate=RATE,
            tolerable_failed_checkpoints=2,
        )
    message = str(stopped.value)
    assert small_storage.refusal in message
    assert "3 checkpoints in a row failed" in message
    assert "tolerable_failed_checkpoints" in message
    # the hosts ended on the driver's final Stop: the Spark job succeeded, so Spark logged
    # no failed task (and no stack trace)
    tracker = spark.sparkContext.statusTracker()
    last = max(tracker.getJobIdsForGroup())
    assert tracker.getJobInfo(last).status == "SUCCEEDED"
