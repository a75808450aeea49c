"""The snapshot writer: task snapshots written on a thread of their own, durable before they
are handed back for acknowledgement, in order; a write the storage refuses comes back as
WriteFailed (the host declines the checkpoint), any other error is raised."""

from __future__ import annotations

import threading
import time

import pytest

from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import Record, RecordBatch
from absnb.core.snapshot import TaskSnapshot
from absnb.runtime import StorageError
from absnb.runtime.host.snapshot_writer import SnapshotWriter, WriteFailed
from absnb.runtime.storage.checkpoints import CheckpointStorage

JOB = "job"
SRC, COUNT = TaskId("src"), TaskId("count")
CHANNEL = ChannelId(SRC, COUNT)


def written_all(writer: SnapshotWriter, n: int) -> list:
    out: list = []
    deadline = time.monotonic() + 10
    while len(out) < n:
        assert time.monotonic() < deadline, f"only {len(out)} of {n} written"
        out += writer.written(0.05)
    return out


def test_snapshots_are_durable_in_order_with_their_statistics(tmp_path) -> None:
    storage = CheckpointStorage(str(tmp_path))
    writer = SnapshotWriter(storage, JOB)
    recorded = (Record("a", 1), RecordBatch(["b", "c"], 2))
    snapshots = [
        TaskSnapshot(COUNT, n, state={"a": n}, channel_states={CHANNEL: recorded})
        for n in range(1, 6)
    ]
    for i, s in enumerate(snapshots):
        writer.submit(s, alignment_s=i / 10)
    assert writer.pending == 5
    done = written_all(writer, 5)
    writer.close()
    assert writer.pending == 0
    assert [w.snapshot for w in done] == snapshots
    assert [w.alignment_s for w in done] == [0.0, 0.1, 0.2, 0.3, 0.4]
    # on disk before it was handed back: the manifest finds it, and it reads back equal
    storage.complete(JOB, 5, [COUNT], fingerprint="fp", protocol="chandy-lamport")
    latest = storage.latest(JOB, "fp")
    assert latest is not None
    assert latest.tasks[COUNT] == snapshots[-1]
    for w in done:
        assert w.stats["channel_state_records"] == 3
        assert w.stats["state_size"] > 0
        assert w.stats["channel_state_size"] > 0


def test_the_write_happens_off_the_caller_thread(tmp_path) -> None:
    class SlowStorage(CheckpointStorage):
        def write_task(self, job_id, snapshot, payload=None):  # type: ignore[no-untyped-def]
            assert threading.current_thread() is not threading.main_thread()
            released.wait(10)
            return super().write_task(job_id, snapshot, payload)

    released = threading.Event()
    writer = SnapshotWriter(SlowStorage(str(tmp_path)), JOB)
    writer.submit(TaskSnapshot(SRC, 1, state=None, offset=7), 0.0)
    assert writer.written(0.05) == []  # the caller goes on while the write waits
    released.set()
    assert [w.snapshot.offset for w in written_all(writer, 1)] == [7]


def test_a_write_the_storage_refuses_comes_back_as_write_failed(tmp_path) -> None:
    class FullDisk(CheckpointStorage):
        def write_task(self, job_id, snapshot, payload=None):  # type: ignore[no-untyped-def]
            if snapshot.checkpoint_id == 3:
                raise StorageError(f"no space left writing checkpoint {snapshot.checkpoint_id}")
            return super().write_task(job_id, snapshot, payload)

    writer = SnapshotWriter(FullDisk(str(tmp_path)), JOB)
    for n in (3, 4):
        writer.submit(TaskSnapshot(SRC, n, state=None), 0.0)
    failed, written = written_all(writer, 2)
    assert isinstance(failed, WriteFailed)
    assert failed.snapshot.checkpoint_id == 3
    assert "checkpoint 3" in str(failed.error)
    assert written.snapshot.checkpoint_id == 4  # the task's next snapshot is written
    assert writer.pending == 0


def test_any_other_error_of_a_write_is_raised_to_the_caller(tmp_path) -> None:
    writer = SnapshotWriter(CheckpointStorage(str(tmp_path)), JOB)
    writer.submit(TaskSnapshot(SRC, 3, state=lambda: None), 0.0)  # does not pickle
    with pytest.raises(Exception, match=r"pickle|lambda"):
        written_all(writer, 1)
    assert writer.pending == 0


def test_tasks_write_side_by_side_so_a_remote_stores_latency_is_paid_once(tmp_path) -> None:
    # Six tasks of one host snapshot at once into a store whose every write waits 0.3 s:
    # written one after another they would take 1.8 s; each task writing on its own, as
    # every Flink subtask does, they are all durable after about one wait.
    storage = CheckpointStorage(str(tmp_path), write_latency=0.3)
    writer = SnapshotWriter(storage, JOB)
    tasks = [TaskId(f"count[{i}]") for i in range(6)]
    began = time.monotonic()
    for t in tasks:
        writer.submit(TaskSnapshot(t, 1, state={"a": 1}), 0.0)
    done = written_all(writer, 6)
    took = time.monotonic() - began
    writer.close()
    assert sorted(str(w.snapshot.task) for w in done) == sorted(str(t) for t in tasks)
    assert 0.3 <= took < 1.2, f"six writes of 0.3 s each took {took:.2f} s"


def test_each_tasks_snapshots_stay_in_order_across_threads(tmp_path) -> None:
    writer = SnapshotWriter(CheckpointStorage(str(tmp_path)), JOB)
    for n in range(1, 9):
        for t in (SRC, COUNT):
            writer.submit(TaskSnapshot(t, n, state={"n": n}), 0.0)
    done = written_all(writer, 16)
    writer.close()
    for t in (SRC, COUNT):
        assert [w.snapshot.checkpoint_id for w in done if w.snapshot.task == t] == list(range(1, 9))
