"""Checkpoint storage: each task's snapshot of a checkpoint, and the manifest that completes it.

The root is a local directory, or any fsspec URL (``s3://``, ``hdfs://``, ...); under it,
one directory per job and checkpoint holds every task's file and, written last by the
coordinator, the manifest (:mod:`absnb.runtime.storage.layout`). A checkpoint is complete
only when its manifest exists (Flink: the ``_metadata`` file of a completed checkpoint).
Every file is written atomically: to a temporary name in the same
directory, flushed and fsynced, then renamed. A task file is a fixed header (magic
``ABSNBSNP``, format version, sha256 and length of the payload) followed by the payload, a
pickle (protocol 5) of the :class:`~absnb.core.snapshot.TaskSnapshot`. The manifest repeats
every task file's sha256 and size, so :meth:`CheckpointStorage.latest` can tell a verified
checkpoint from a torn or corrupt one and fall back to the one before, except behind the
newest completed one, whose transactions two-phase-commit sinks may have committed (then
:class:`~absnb.runtime.storage.fs.CommittedCheckpointLostError` names the file). Here: writing,
completing, retention and the choice of the checkpoint to restore; the verified reading is in
:mod:`absnb.runtime.storage.read`, the backends in :mod:`absnb.runtime.storage.fs`.

Task files are pickles: read checkpoints only from storage you trust.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from absnb.core import validate
from absnb.core.array_snapshot import ArraySnapshot
from absnb.core.errors import SnapshotMismatchError
from absnb.core.ids import CheckpointId, TaskId
from absnb.core.incremental import IncrementalState
from absnb.core.snapshot import GlobalSnapshot, TaskSnapshot
from absnb.runtime.connections.wire import dumps
from absnb.runtime.storage.chain import needed
from absnb.runtime.storage.format import (
    HEADER,
    MANIFEST_FORMAT,
    Corrupt,
    pack_header,
    parse_header,
    task_label,
)
from absnb.runtime.storage.fs import (
    CommittedCheckpointLostError,
    FsspecFS,
    LatencyFS,
    LocalFS,
    StorageError,
    decode_name,
    local_path,
    open_fsspec,
)
from absnb.runtime.storage.layout import SUFFIX, StorageLayout
from absnb.runtime.storage.read import CheckpointReader


class CorruptCheckpointWarning(UserWarning):
    """A complete checkpoint failed verification and was skipped."""


def _reconstruct(url: str, retain: int, write_latency: float = 0.0) -> CheckpointStorage:
    return CheckpointStorage(url, retain=retain, write_latency=write_latency)


# -- storage ----------------------------------------------------------------------------


class CheckpointStorage:
    """Where a job's task snapshots go, and where recovery finds the latest complete checkpoint.

    Args:
        url: a local directory, or an fsspec URL (``memory://``, ``s3://``, ``hdfs://``,
            ...; ``file://`` is handled without fsspec).
        retain: how many complete checkpoints to keep per job.
        write_latency: seconds every durable write waits first
            (:class:`~absnb.runtime.storage.fs.LatencyFS`, a model of a remote store such as S3 or
            HDFS); 0 writes at the backend's own speed.
    """

    def __init__(
        self, url: str | os.PathLike[str], *, retain: int = 3, write_latency: float = 0.0
    ) -> None:
        if isinstance(retain, bool) or not isinstance(retain, int) or retain < 1:
            raise ValueError(f"retain must be a positive number of checkpoints, got {retain!r}")
        validate.nonnegative("write_latency (seconds)", write_latency)
        self.url = os.fsdecode(url)
        self.retain = retain
        self.write_latency = float(write_latency)
        self._known_bases: dict[tuple[str, int], dict[str, int]] = {}
        local = local_path(self.url)
        self._fs: LocalFS | FsspecFS | LatencyFS
        if local is not None:
            self._fs, self.root = LocalFS(), local
        else:
            fs, self.root = open_fsspec(self.url)
            self._fs = FsspecFS(fs)
        if self.write_latency:
            self._fs = LatencyFS(self._fs, self.write_latency)
        self._layout = StorageLayout(self._fs, self.root)
        self._reader = CheckpointReader(self._layout)

    def __repr__(self) -> str:
        latency = f", write_latency={self.write_latency:g}" if self.write_latency else ""
        return f"CheckpointStorage({self.url!r}, retain={self.retain}{latency})"

    def __reduce__(self) -> tuple[Any, tuple[str, int, float]]:
        return _reconstruct, (self.url, self.retain, self.write_latency)

    # -- writing

    def write_task(self, job_id: str, snapshot: TaskSnapshot, payload: bytes | None = None) -> str:
        """Store one task's snapshot atomically; returns its key (relative to the root).
        ``payload``: ``snapshot`` already pickled, by a caller that also measures it."""
        key = self._layout.key(job_id, snapshot.checkpoint_id, snapshot.task)
        payload = dumps(snapshot) if payload is None else payload
        state = snapshot.state
        base = state.base if isinstance(state, IncrementalState | ArraySnapshot) else None
        header = pack_header(hashlib.sha256(payload).digest(), len(payload), base)
        path = self._layout.path(key)
        try:
            self._fs.makedirs(self._layout.checkpoint_path(job_id, snapshot.checkpoint_id))
            self._fs.write_atomic(path, (header, payload))
        except StorageError:
            raise
        except OSError as e:
            raise StorageError(
                f"could not write the snapshot of task {task_label(snapshot.task)!r} for "
                f"checkpoint {snapshot.checkpoint_id} of job {job_id!r} to {path}: {e}"
            ) from e
        return key

    def complete(
        self,
        job_id: str,
        checkpoint_id: CheckpointId,
        tasks: Sequence[TaskId],
        *,
        fingerprint: str,
        protocol: str,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Write the manifest that makes checkpoint ``checkpoint_id`` complete, then prune.

        Every task in ``tasks`` must have written its snapshot; ``metadata`` must be JSON.
        Keeps the newest ``retain`` complete checkpoints and drops unfinished checkpoints
        older than this one.
        """
        entries = [self._entry(job_id, checkpoint_id, t) for t in dict.fromkeys(tasks)]
        manifest = {
            "format": MANIFEST_FORMAT,
            "checkpoint_id": checkpoint_id,
            "job": job_id,
            "fingerprint": fingerprint,
            "protocol": protocol,
            "created": datetime.now(timezone.utc).isoformat(),
            "metadata": metadata if metadata is not None else {},
            "tasks": entries,
        }
        try:
            text = json.dumps(manifest, indent=2, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise StorageError(
                f"checkpoint {checkpoint_id} of job {job_id!r}: the metadata must be JSON "
                f"(str keys; str, int, float, bool, None, lists and dicts): {e}"
            ) from e
        directory = self._layout.checkpoint_path(job_id, checkpoint_id)
        path = self._layout.manifest_path(job_id, checkpoint_id)
        try:
            self._fs.makedirs(directory)
            self._fs.write_atomic(path, (text.encode("utf-8"),))
        except OSError as e:
            raise StorageError(
                f"could not write the manifest of checkpoint {checkpoint_id} of job "
                f"{job_id!r} to {path}: {e}"
            ) from e
        self._prune(job_id)

    def _entry(self, job_id: str, checkpoint_id: CheckpointId, task: TaskId) -> dict[str, Any]:
        """The manifest entry of ``task``'s stored snapshot (:class:`StorageError` if it is
        missing, damaged, or builds on a checkpoint that is not complete)."""
        key = self._layout.key(job_id, checkpoint_id, task)
        path = self._layout.path(key)
        try:
            head = self._fs.read_head(path, HEADER.size)
            file_size = self._fs.size(path)
        except FileNotFoundError:
            raise StorageError(
                f"checkpoint {checkpoint_id} of job {job_id!r} cannot complete: task "
                f"{task_label(task)!r} has stored no snapshot (no {key})"
            ) from None
        except OSError as e:
            raise StorageError(
                f"checkpoint {checkpoint_id} of job {job_id!r} cannot complete: "
                f"reading {key} failed: {e}"
            ) from e
        try:
            digest, length, base = parse_header(head)
            if file_size != HEADER.size + length:
                raise Corrupt(f"{file_size} bytes on disk, the header says {length} + header")
        except Corrupt as e:
            raise StorageError(
                f"checkpoint {checkpoint_id} of job {job_id!r} cannot complete: the "
                f"snapshot of task {task_label(task)!r} ({key}) is damaged: {e}"
            ) from None
        entry: dict[str, Any] = {
            "task": [task.operator, task.subtask, task.parallelism],
            "label": task_label(task),
            "key": key,
            "sha256": digest.hex(),
            "size": length,
        }
        if base is not None:
            if not self._layout.is_complete(job_id, base):
                raise StorageError(
                    f"checkpoint {checkpoint_id} of job {job_id!r} cannot complete: the "
                    f"snapshot of task {task_label(task)!r} builds on checkpoint {base}, "
                    "which is not complete (aborted, or removed by retention)"
                )
            entry["base"] = base
        return entry

    def _prune(self, job_id: str) -> None:
        ids = self._layout.checkpoint_ids(job_id)
        complete = [i for i in ids if self._layout.is_complete(job_id, i)]
        if not complete:
            return
        # and every checkpoint the retained ones build on (incremental snapshots)
        keep = needed(complete[-self.retain :], lambda n: self._bases(job_id, n))
        newest = complete[-1]
        for i in ids:
            if i in keep or i > newest:
                continue
            directory = self._layout.checkpoint_path(job_id, i)
            self._known_bases.pop((job_id, i), None)
            # the manifest first: a half-deleted checkpoint is never taken for a complete one
            self._fs.remove(self._layout.manifest_path(job_id, i))
            self._fs.rmtree(directory)

    def _bases(self, job_id: str, checkpoint_id: CheckpointId) -> dict[str, int]:
        """The checkpoint each task snapshot of complete ``checkpoint_id`` builds on, by
        task (a manifest never changes once written: read once)."""
        known = self._known_bases.get((job_id, checkpoint_id))
        if known is None:
            try:
                manifest = self._reader.manifest(job_id, checkpoint_id)
            except Corrupt:
                return {}
            known = {e["label"]: e["base"] for e in manifest["tasks"] if e.get("base") is not None}
            self._known_bases[(job_id, checkpoint_id)] = known
        return known

    # -- reading

    def checkpoints(self, job_id: str) -> list[CheckpointId]:
        """Ids of the complete checkpoints of a job, ascending (not verified)."""
        return [
            i for i in self._layout.checkpoint_ids(job_id) if self._layout.is_complete(job_id, i)
        ]

    def latest(
        self,
        job_id: str,
        fingerprint: str | None = None,
        *,
        committed: CheckpointId | None = None,
    ) -> GlobalSnapshot | None:
        """The newest complete checkpoint that verifies, or None if there is none.

        A checkpoint that fails verification is skipped with a
        :class:`CorruptCheckpointWarning`, unless it is checkpoint ``committed`` or newer:
        the newest checkpoint known to have completed, whose transactions two-phase-commit
        sinks may have committed. Falling back behind it would write its output again, so
        then :class:`~absnb.runtime.storage.fs.CommittedCheckpointLostError` names the file that is
        missing or damaged instead. Raises :class:`~absnb.core.errors.SnapshotMismatchError` when
        ``fingerprint`` is given and the checkpoint was taken by a different job graph.
        """
        for checkpoint_id in reversed(self.checkpoints(job_id)):
            try:
                manifest = self._reader.manifest(job_id, checkpoint_id)
            except Corrupt as e:
                self._skip(job_id, checkpoint_id, e, committed)
                continue
            if fingerprint is not None and manifest["fingerprint"] != fingerprint:
                raise SnapshotMismatchError(
                    f"checkpoint {checkpoint_id} of job {job_id!r} was taken by the job graph "
                    f"with fingerprint {manifest['fingerprint']!r}, not {fingerprint!r}: restore "
                    "it into the job that took it, or discard the job's checkpoints"
                )
            try:
                tasks = self._reader.tasks(job_id, checkpoint_id, manifest)
            except Corrupt as e:
                self._skip(job_id, checkpoint_id, e, committed)
                continue
            if committed is not None and checkpoint_id < committed:
                self._lost(job_id, committed, None)
            return GlobalSnapshot(
                checkpoint_id=checkpoint_id,
                job=manifest["job"],
                fingerprint=manifest["fingerprint"],
                tasks=tasks,
                protocol=manifest["protocol"],
            )
        if committed:
            self._lost(job_id, committed, None)
        return None

    def _skip(
        self, job_id: str, checkpoint_id: CheckpointId, problem: Corrupt, committed: int | None
    ) -> None:
        if committed is not None and checkpoint_id >= committed:
            self._lost(job_id, checkpoint_id, problem)
        self._warn(job_id, checkpoint_id, str(problem))

    def _lost(self, job_id: str, checkpoint_id: CheckpointId, problem: Corrupt | None) -> None:
        """Raise :class:`~absnb.runtime.storage.fs.CommittedCheckpointLostError` for
        ``checkpoint_id``."""
        directory = self._layout.checkpoint_path(job_id, checkpoint_id)
        if problem is not None:
            path = problem.path or directory
            what = f"{path}: {problem}"
        elif not self._fs.exists(directory):
            path, what = directory, f"its directory {directory} is gone"
        else:
            path = self._layout.manifest_path(job_id, checkpoint_id)
            what = f"its manifest {path} is gone"
        raise CommittedCheckpointLostError(
            f"checkpoint {checkpoint_id} of job {job_id!r} completed (its transactions may be "
            f"committed) but cannot be restored: {what}",
            checkpoint_id=checkpoint_id,
            path=path,
        )

    def _warn(self, job_id: str, checkpoint_id: CheckpointId, problem: str) -> None:
        warnings.warn(
            f"checkpoint {checkpoint_id} of job {job_id!r} at "
            f"{self._layout.checkpoint_path(job_id, checkpoint_id)} is unusable and was skipped: "
            f"{problem}",
            CorruptCheckpointWarning,
            stacklevel=3,
        )

    def stats(self, job_id: str, checkpoint_id: CheckpointId) -> dict[str, int]:
        """Payload bytes of every task's snapshot in a checkpoint, by task label.

        Read from the manifest of a complete checkpoint, else from the task files' headers.
        """
        with contextlib.suppress(Corrupt):
            manifest = self._reader.manifest(job_id, checkpoint_id)
            return {e["label"]: e["size"] for e in manifest["tasks"]}
        directory = self._layout.checkpoint_path(job_id, checkpoint_id)
        sizes: dict[str, int] = {}
        for name in sorted(self._fs.listdir(directory)):
            if not name.endswith(SUFFIX) or name.startswith("."):
                continue
            with contextlib.suppress(OSError, Corrupt):
                _, length, _ = parse_header(
                    self._fs.read_head(self._fs.join(directory, name), HEADER.size)
                )
                sizes[decode_name(name[: -len(SUFFIX)])] = length
        return sizes

    def discard_incomplete(self, job_id: str, checkpoint_id: CheckpointId) -> None:
        """Remove what was written of checkpoint ``checkpoint_id`` unless it is complete (an
        aborted checkpoint: a task's snapshot could not be written). Best effort: a storage
        that refuses is left as it is, and an incomplete checkpoint is never restored."""
        if self._layout.is_complete(job_id, checkpoint_id):
            return
        with contextlib.suppress(OSError):
            self._fs.rmtree(self._layout.checkpoint_path(job_id, checkpoint_id))

    def discard(self, job_id: str) -> None:
        """Remove every checkpoint of a job."""
        self._known_bases = {k: v for k, v in self._known_bases.items() if k[0] != job_id}
        self._fs.rmtree(self._layout.job_path(job_id))
