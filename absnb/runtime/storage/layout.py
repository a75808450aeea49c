"""Where checkpoint storage keeps a job's files, and which of its checkpoints are complete.

Under the root (see :mod:`absnb.runtime.storage.checkpoints`)::

    <root>/<job>/chk-<id>/<task label>.snap     one per task, written by the task
    <root>/<job>/chk-<id>/_manifest.json        written last, by the coordinator

Job ids and task labels are encoded into safe file names
(:func:`~absnb.runtime.storage.fs.encode_name`). A checkpoint is complete only when its manifest
exists (Flink: the ``_metadata`` file of a completed checkpoint).
"""

from __future__ import annotations

import posixpath
import re

from absnb.core.ids import CheckpointId, TaskId
from absnb.runtime.storage.format import task_label
from absnb.runtime.storage.fs import FsspecFS, LatencyFS, LocalFS, encode_name

MANIFEST = "_manifest.json"
SUFFIX = ".snap"

_CHECKPOINT_DIR = re.compile(r"chk-(\d+)")


class StorageLayout:
    """The paths of a job's checkpoints in one backend ``fs`` under ``root``.

    A key is a file's path relative to the root, ``/``-separated (what an
    acknowledgement and a manifest name); :meth:`path` is where it is in ``fs``.
    """

    def __init__(self, fs: LocalFS | FsspecFS | LatencyFS, root: str) -> None:
        self.fs = fs
        self.root = root

    @staticmethod
    def job_dir_name(job_id: str) -> str:
        if not isinstance(job_id, str) or not job_id:
            raise ValueError(f"a job id must be a non-empty string, got {job_id!r}")
        return encode_name(job_id)

    @staticmethod
    def checkpoint_dir_name(checkpoint_id: CheckpointId) -> str:
        if isinstance(checkpoint_id, bool) or not isinstance(checkpoint_id, int):
            raise ValueError(f"a checkpoint id must be an int, got {checkpoint_id!r}")
        if checkpoint_id < 0:
            raise ValueError(f"a checkpoint id must not be negative, got {checkpoint_id}")
        return f"chk-{checkpoint_id}"

    def key(self, job_id: str, checkpoint_id: CheckpointId, task: TaskId) -> str:
        """The key of ``task``'s snapshot in checkpoint ``checkpoint_id``."""
        return posixpath.join(
            self.job_dir_name(job_id),
            self.checkpoint_dir_name(checkpoint_id),
            encode_name(task_label(task)) + SUFFIX,
        )

    def path(self, key: str) -> str:
        return self.fs.join(self.root, *key.split("/"))

    def job_path(self, job_id: str) -> str:
        return self.fs.join(self.root, self.job_dir_name(job_id))

    def checkpoint_path(self, job_id: str, checkpoint_id: CheckpointId) -> str:
        return self.fs.join(self.job_path(job_id), self.checkpoint_dir_name(checkpoint_id))

    def manifest_path(self, job_id: str, checkpoint_id: CheckpointId) -> str:
        return self.fs.join(self.checkpoint_path(job_id, checkpoint_id), MANIFEST)

    def checkpoint_ids(self, job_id: str) -> list[int]:
        """Every checkpoint directory of the job, complete or not, ascending."""
        ids = []
        for name in self.fs.listdir(self.job_path(job_id)):
            m = _CHECKPOINT_DIR.fullmatch(name)
            if m:
                ids.append(int(m.group(1)))
        return sorted(ids)

    def is_complete(self, job_id: str, checkpoint_id: CheckpointId) -> bool:
        return self.fs.exists(self.manifest_path(job_id, checkpoint_id))
