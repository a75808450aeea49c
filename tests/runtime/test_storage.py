"""Checkpoint storage: atomic task files, manifests, verification, fallback, retention."""

from __future__ import annotations

import json
import os
import pickle
import sys
import uuid
import warnings
from pathlib import Path

import pytest

from absnb.core.errors import AbsnbError, SnapshotMismatchError
from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import Record
from absnb.core.snapshot import GlobalSnapshot, TaskSnapshot
from absnb.runtime.storage.checkpoints import CheckpointStorage, CorruptCheckpointWarning
from absnb.runtime.storage.format import HEADER
from absnb.runtime.storage.fs import StorageError, decode_name, encode_name

JOB = "word-count"
SRC = TaskId("src")
COUNT = (TaskId("count", 0, 2), TaskId("count", 1, 2))
TASKS = (SRC, *COUNT)


def snapshots(n: int) -> list[TaskSnapshot]:
    """Checkpoint ``n`` of a small job: offsets, dict states, channel states."""
    loop = ChannelId(COUNT[1], COUNT[0])
    return [
        TaskSnapshot(SRC, n, state={"emitted": 10 * n}, offset=10 * n),
        TaskSnapshot(
            COUNT[0],
            n,
            state={"a": n, "b": 2 * n},
            channel_states={loop: (Record("a", 1, ("src", 3)), Record({"b": n}, 2))},
            received={ChannelId(SRC, COUNT[0]): 5 * n, loop: 2},
            consumed=5 * n + 2,
        ),
        TaskSnapshot(COUNT[1], n, state={"c": [n] * 3}, sent={loop: 2}),
    ]


def take(storage: CheckpointStorage, n: int, *, fingerprint: str = "fp", complete: bool = True):
    for s in snapshots(n):
        storage.write_task(JOB, s)
    if complete:
        storage.complete(JOB, n, TASKS, fingerprint=fingerprint, protocol="abs")


def expected(n: int, fingerprint: str = "fp") -> GlobalSnapshot:
    return GlobalSnapshot(n, JOB, fingerprint, {s.task: s for s in snapshots(n)}, "abs")


def chk(root: Path, n: int) -> Path:
    return root / JOB / f"chk-{n}"


@pytest.fixture
def storage(tmp_path: Path) -> CheckpointStorage:
    return CheckpointStorage(tmp_path, retain=5)


def test_round_trip(storage: CheckpointStorage) -> None:
    assert storage.latest(JOB) is None
    take(storage, 1)
    take(storage, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert storage.latest(JOB) == expected(2)
        assert storage.latest(JOB, fingerprint="fp") == expected(2)
    assert storage.checkpoints(JOB) == [1, 2]


def test_manifest_lists_every_task(storage: CheckpointStorage, tmp_path: Path) -> None:
    take(storage, 1)
    manifest = json.loads((chk(tmp_path, 1) / "_manifest.json").read_text())
    assert manifest["checkpoint_id"] == 1
    assert manifest["job"] == JOB
    assert (manifest["fingerprint"], manifest["protocol"]) == ("fp", "abs")
    assert [e["label"] for e in manifest["tasks"]] == ["src", "count[0]", "count[1]"]
    assert all(len(e["sha256"]) == 64 and e["size"] > 0 for e in manifest["tasks"])
    assert manifest["created"]


def test_bracketed_labels_are_safe_and_reversible(storage: CheckpointStorage) -> None:
    key = storage.write_task(JOB, TaskSnapshot(TaskId("count", 1, 4), 7, state=1))
    assert key == f"{JOB}/chk-7/count%5B1%5D.snap"
    for label in ("count[1]", "a/b", "..", ".hidden", "x y*?[]%", "ünï"):
        encoded = encode_name(label)
        assert "/" not in encoded
        assert not encoded.startswith(".")
        assert not set(encoded) & set("[]*? ")
        assert decode_name(encoded) == label
    storage.complete(JOB, 7, [TaskId("count", 1, 4)], fingerprint="fp", protocol="abs")
    restored = storage.latest(JOB)
    assert restored is not None
    assert restored.tasks == {TaskId("count", 1, 4): TaskSnapshot(TaskId("count", 1, 4), 7, 1)}


def test_interrupted_task_write_leaves_nothing(
    storage: CheckpointStorage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(StorageError, match="disk gone"):
        storage.write_task(JOB, snapshots(1)[0])
    assert list(chk(tmp_path, 1).iterdir()) == []  # not even the temporary file


def test_interrupted_manifest_write_leaves_checkpoint_incomplete(
    storage: CheckpointStorage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    take(storage, 1, complete=False)

    def crash(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(StorageError, match="manifest"):
        storage.complete(JOB, 1, TASKS, fingerprint="fp", protocol="abs")
    monkeypatch.undo()
    assert sorted(p.name for p in chk(tmp_path, 1).iterdir()) == [
        "count%5B0%5D.snap",
        "count%5B1%5D.snap",
        "src.snap",
    ]
    assert storage.checkpoints(JOB) == []
    assert storage.latest(JOB) is None


def test_incomplete_checkpoint_is_ignored(storage: CheckpointStorage) -> None:
    take(storage, 1)
    take(storage, 2, complete=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert storage.latest(JOB) == expected(1)
    assert storage.checkpoints(JOB) == [1]


def test_complete_refuses_a_missing_task(storage: CheckpointStorage, tmp_path: Path) -> None:
    storage.write_task(JOB, snapshots(1)[0])
    with pytest.raises(StorageError, match=r"count\[0\]"):
        storage.complete(JOB, 1, TASKS, fingerprint="fp", protocol="abs")
    assert not (chk(tmp_path, 1) / "_manifest.json").exists()


def flip_payload_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def flip_magic(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-3])


def truncate_header(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: HEADER.size - 1])


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (flip_payload_byte, "sha256"),
        (flip_magic, "magic"),
        (truncate, "truncated"),
        (truncate_header, "header is truncated"),
        (Path.unlink, "missing"),
    ],
)
def test_corrupt_task_file_falls_back(
    storage: CheckpointStorage, tmp_path: Path, damage, problem: str
) -> None:
    take(storage, 1)
    take(storage, 2)
    damage(chk(tmp_path, 2) / "count%5B1%5D.snap")
    with pytest.warns(CorruptCheckpointWarning, match=rf"checkpoint 2 .*{problem}"):
        assert storage.latest(JOB) == expected(1)


@pytest.mark.parametrize(
    "manifest",
    [
        "{not json",
        "",
        json.dumps({"format": 1}),
        json.dumps(["a list"]),
    ],
)
def test_garbled_manifest_falls_back(
    storage: CheckpointStorage, tmp_path: Path, manifest: str
) -> None:
    take(storage, 1)
    take(storage, 2)
    (chk(tmp_path, 2) / "_manifest.json").write_text(manifest)
    with pytest.warns(CorruptCheckpointWarning, match="checkpoint 2 .*manifest"):
        assert storage.latest(JOB) == expected(1)


def test_manifest_of_another_checkpoint_falls_back(
    storage: CheckpointStorage, tmp_path: Path
) -> None:
    take(storage, 1)
    take(storage, 2)
    text = (chk(tmp_path, 1) / "_manifest.json").read_text()
    (chk(tmp_path, 2) / "_manifest.json").write_text(text)
    with pytest.warns(CorruptCheckpointWarning, match="checkpoint 2 .*checkpoint 1"):
        assert storage.latest(JOB) == expected(1)


def test_every_checkpoint_corrupt_gives_none(storage: CheckpointStorage, tmp_path: Path) -> None:
    take(storage, 1)
    flip_payload_byte(chk(tmp_path, 1) / "src.snap")
    with pytest.warns(CorruptCheckpointWarning):
        assert storage.latest(JOB) is None


def test_retention_keeps_the_newest(tmp_path: Path) -> None:
    storage = CheckpointStorage(tmp_path, retain=2)
    take(storage, 1)
    take(storage, 2, complete=False)  # abandoned
    take(storage, 3)
    take(storage, 4)
    take(storage, 6, complete=False)  # still in flight
    take(storage, 5)
    assert storage.checkpoints(JOB) == [4, 5]
    assert sorted(p.name for p in (tmp_path / JOB).iterdir()) == ["chk-4", "chk-5", "chk-6"]
    assert storage.latest(JOB) == expected(5)


def test_retain_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="retain"):
        CheckpointStorage(tmp_path, retain=0)


def test_fingerprint_mismatch_raises(storage: CheckpointStorage) -> None:
    take(storage, 1, fingerprint="old-graph")
    with pytest.raises(SnapshotMismatchError, match=r"old-graph.*new-graph"):
        storage.latest(JOB, fingerprint="new-graph")
    assert storage.latest(JOB, fingerprint="old-graph") == expected(1, "old-graph")


def test_metadata_must_be_json(storage: CheckpointStorage, tmp_path: Path) -> None:
    take(storage, 1, complete=False)
    with pytest.raises(StorageError, match="JSON"):
        storage.complete(JOB, 1, TASKS, fingerprint="fp", protocol="abs", metadata={"x": {1, 2}})
    storage.complete(JOB, 1, TASKS, fingerprint="fp", protocol="abs", metadata={"records": 30})
    manifest = json.loads((chk(tmp_path, 1) / "_manifest.json").read_text())
    assert manifest["metadata"] == {"records": 30}


def test_stats(storage: CheckpointStorage) -> None:
    take(storage, 1, complete=False)
    pending = storage.stats(JOB, 1)
    storage.complete(JOB, 1, TASKS, fingerprint="fp", protocol="abs")
    sizes = storage.stats(JOB, 1)
    assert sizes == pending
    assert set(sizes) == {"src", "count[0]", "count[1]"}
    assert sizes["src"] == len(pickle.dumps(snapshots(1)[0], protocol=5))
    assert storage.stats(JOB, 99) == {}


def test_discard(storage: CheckpointStorage, tmp_path: Path) -> None:
    take(storage, 1)
    take(storage, 2, complete=False)
    storage.discard(JOB)
    assert not (tmp_path / JOB).exists()
    assert storage.checkpoints(JOB) == []
    assert storage.latest(JOB) is None
    storage.discard(JOB)  # nothing left: no error


def test_jobs_are_separate(storage: CheckpointStorage) -> None:
    take(storage, 1)
    assert storage.checkpoints("other[job]") == []
    storage.discard("other[job]")
    assert storage.checkpoints(JOB) == [1]


def test_file_url_and_pickling(tmp_path: Path) -> None:
    storage = CheckpointStorage(tmp_path.as_uri())
    take(storage, 1)
    again = pickle.loads(pickle.dumps(storage))
    assert again.root == str(tmp_path)
    assert again.latest(JOB) == expected(1)
    assert CheckpointStorage(str(tmp_path)).latest(JOB) == expected(1)


def test_missing_fsspec_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)
    monkeypatch.setitem(sys.modules, "fsspec.core", None)
    with pytest.raises(StorageError, match="pip install fsspec s3fs") as e:
        CheckpointStorage("s3://bucket/checkpoints")
    assert isinstance(e.value, AbsnbError)


def test_memory_url() -> None:
    fsspec = pytest.importorskip("fsspec")
    url = f"memory://absnb-test-{uuid.uuid4().hex}"
    storage = CheckpointStorage(url, retain=1)
    try:
        take(storage, 1)
        take(storage, 2, complete=False)
        assert storage.checkpoints(JOB) == [1]
        assert storage.stats(JOB, 2)["count[1]"] > 0
        take(storage, 2)
        assert storage.checkpoints(JOB) == [2]
        assert storage.latest(JOB) == expected(2)
        assert pickle.loads(pickle.dumps(storage)).latest(JOB) == expected(2)
        fs = fsspec.filesystem("memory")
        path = f"{storage.root}/{JOB}/chk-2/count%5B1%5D.snap"
        data = bytearray(fs.cat_file(path))
        data[-1] ^= 0xFF
        fs.pipe_file(path, bytes(data))
        with pytest.warns(CorruptCheckpointWarning, match="sha256"):
            assert storage.latest(JOB) is None
    finally:
        storage.discard(JOB)
    assert storage.checkpoints(JOB) == []


def test_an_aborted_checkpoint_is_discarded_and_a_complete_one_never(
    storage: CheckpointStorage, tmp_path: Path
) -> None:
    take(storage, 1)
    take(storage, 2, complete=False)  # a task's write failed: no manifest
    storage.discard_incomplete(JOB, 2)
    storage.discard_incomplete(JOB, 1)
    storage.discard_incomplete(JOB, 3)  # nothing written: nothing to do
    assert not chk(tmp_path, 2).exists()
    assert storage.latest(JOB) == expected(1)
