"""Reading a complete checkpoint back from storage, verified.

A manifest is parsed and checked (:func:`~absnb.runtime.storage.format.parse_manifest`);
every task file it names is checked against it (the header's sha256, length and base,
the manifest's sha256, size and base, the payload's own sha256) before it is unpickled,
and an incremental snapshot is merged with its chain (:mod:`absnb.runtime.storage.chain`),
each link verified against its own checkpoint's manifest. A missing or damaged file raises
:class:`~absnb.runtime.storage.format.Corrupt` naming it; what a corrupt checkpoint means
for recovery is decided by :meth:`~absnb.runtime.storage.checkpoints.CheckpointStorage.latest`.

Task files are pickles: read checkpoints only from storage you trust.
"""

from __future__ import annotations

import hashlib
from functools import partial
from typing import Any

from absnb.core.ids import CheckpointId, TaskId
from absnb.core.snapshot import TaskSnapshot
from absnb.runtime.connections.wire import loads
from absnb.runtime.storage.chain import resolve
from absnb.runtime.storage.format import HEADER, Corrupt, parse_header, parse_manifest, task_label
from absnb.runtime.storage.fs import StorageError
from absnb.runtime.storage.layout import StorageLayout


class CheckpointReader:
    """Reads the manifests and task snapshots of complete checkpoints in ``layout``."""

    def __init__(self, layout: StorageLayout) -> None:
        self.layout = layout

    def manifest(self, job_id: str, checkpoint_id: CheckpointId) -> dict[str, Any]:
        """The checked manifest of ``checkpoint_id`` (:class:`~absnb.runtime.storage.format.Corrupt`
        naming its path)."""
        path = self.layout.manifest_path(job_id, checkpoint_id)
        try:
            try:
                data = self.layout.fs.read(path)
            except FileNotFoundError:
                raise Corrupt("the manifest disappeared") from None
            except OSError as e:
                raise Corrupt(f"the manifest cannot be read: {e}") from None
            return parse_manifest(
                data, job_id, checkpoint_id, partial(self.layout.key, job_id, checkpoint_id)
            )
        except Corrupt as e:
            raise Corrupt(str(e), path) from None

    def tasks(
        self, job_id: str, checkpoint_id: CheckpointId, manifest: dict[str, Any]
    ) -> dict[TaskId, TaskSnapshot]:
        """Every task's snapshot that ``manifest`` names, verified, with full states."""
        tasks: dict[TaskId, TaskSnapshot] = {}
        for entry in manifest["tasks"]:
            task = TaskId(*entry["task"])
            try:
                snapshot = self._task(job_id, checkpoint_id, task, entry)
                tasks[task] = resolve(snapshot, partial(self._base, job_id, task=task))
            except Corrupt as e:  # the file at fault: this one, or a base it builds on
                raise Corrupt(str(e), e.path or self.layout.path(entry["key"])) from None
        return tasks

    def _base(self, job_id: str, checkpoint_id: int, *, task: TaskId) -> TaskSnapshot:
        """``task``'s snapshot in ``checkpoint_id``, which a newer incremental one builds on."""
        where = f"its base, checkpoint {checkpoint_id}"
        if not self.layout.is_complete(job_id, checkpoint_id):
            raise Corrupt(f"{where}, is gone", self.layout.checkpoint_path(job_id, checkpoint_id))
        manifest = self.manifest(job_id, checkpoint_id)
        entry = next((e for e in manifest["tasks"] if TaskId(*e["task"]) == task), None)
        if entry is None:
            raise Corrupt(f"{where}, has no snapshot of task {task_label(task)!r}")
        try:
            return self._task(job_id, checkpoint_id, task, entry)
        except Corrupt as e:
            raise Corrupt(f"{where}: {e}", self.layout.path(entry["key"])) from None

    def _task(
        self, job_id: str, checkpoint_id: CheckpointId, task: TaskId, entry: dict[str, Any]
    ) -> TaskSnapshot:
        key = entry["key"]
        try:
            data = self.layout.fs.read(self.layout.path(key))
        except FileNotFoundError:
            raise Corrupt(f"the snapshot of task {entry['label']!r} ({key}) is missing") from None
        except OSError as e:
            raise Corrupt(f"reading {key} failed: {e}") from None
        try:
            digest, length, base = parse_header(data[: HEADER.size])
        except Corrupt as e:
            raise Corrupt(f"{key}: {e}") from None
        payload = data[HEADER.size :]
        if length != entry["size"] or len(payload) != length:
            raise Corrupt(
                f"{key} is truncated or has the wrong size: {len(payload)} payload bytes, "
                f"the header says {length}, the manifest {entry['size']}"
            )
        if base != entry.get("base"):
            raise Corrupt(
                f"{key} builds on checkpoint {base}, the manifest says {entry.get('base')}"
            )
        if digest.hex() != entry["sha256"] or hashlib.sha256(payload).digest() != digest:
            raise Corrupt(f"{key} fails its sha256 check")
        try:
            snapshot = loads(payload)
        except Exception as e:
            # the bytes verified: the code reading them differs from the code that wrote them
            raise StorageError(
                f"checkpoint {checkpoint_id} of job {job_id!r}: {key} verified but cannot "
                f"be unpickled ({type(e).__name__}: {e}); restore with the code version "
                "that took the checkpoint, or discard the job's checkpoints"
            ) from e
        if (
            not isinstance(snapshot, TaskSnapshot)
            or snapshot.task != task
            or snapshot.checkpoint_id != checkpoint_id
        ):
            raise Corrupt(f"{key} holds no snapshot of task {entry['label']!r}")
        return snapshot
