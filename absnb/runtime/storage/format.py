"""The format of a task file in checkpoint storage: a fixed header, then the payload.

A manifest (``_manifest.json``, written last, which makes a checkpoint complete) names
every task file with its sha256, size and base; :func:`parse_manifest` checks one.
The header is the magic ``ABSNBSNP``, the format version, the sha256 and the length of the
payload (a pickle of the :class:`~absnb.core.snapshot.TaskSnapshot`), and the checkpoint an
incremental snapshot builds on (-1: none); see :mod:`absnb.runtime.storage.checkpoints`.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable
from typing import Any

from absnb.core.ids import TaskId

MAGIC = b"ABSNBSNP"
FORMAT_VERSION = 2
HEADER = struct.Struct(">8sH32sQq")
"""Magic, format version, sha256 of the payload, payload length in bytes, base checkpoint."""


MANIFEST_FORMAT = 1


def task_label(task: TaskId) -> str:
    """The printed name of a task (``count[1]``), as used in manifests and storage stats."""
    return str(task)


class Corrupt(Exception):
    """Why one checkpoint is unusable (``path``: the file at fault, if one is)."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


def pack_header(digest: bytes, length: int, base: int | None) -> bytes:
    """A task file's header for a payload of ``length`` bytes with sha256 ``digest``,
    building on checkpoint ``base`` (None: a whole snapshot)."""
    return HEADER.pack(MAGIC, FORMAT_VERSION, digest, length, -1 if base is None else base)


def parse_header(head: bytes) -> tuple[bytes, int, int | None]:
    """``(sha256 digest, payload length, base checkpoint or None)`` from a task file's
    header."""
    if len(head) < HEADER.size:
        raise Corrupt(f"the header is truncated ({len(head)} of {HEADER.size} bytes)")
    magic, version, digest, length, base = HEADER.unpack(head[: HEADER.size])
    if magic != MAGIC:
        raise Corrupt(f"not an absnb snapshot (magic {magic!r})")
    if version != FORMAT_VERSION:
        raise Corrupt(f"snapshot format version {version}, this absnb reads {FORMAT_VERSION}")
    return digest, length, None if base < 0 else base


def parse_manifest(
    data: bytes, job_id: str, checkpoint_id: int, key_of: Callable[[TaskId], str]
) -> dict[str, Any]:
    """The manifest of checkpoint ``checkpoint_id`` of job ``job_id`` in ``data``, checked
    (:class:`Corrupt` says what is wrong); ``key_of(task)``: where its task file must be."""
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise Corrupt(f"the manifest cannot be read: {e}") from None
    if not isinstance(manifest, dict):
        raise Corrupt(f"the manifest is not a JSON object but a {type(manifest).__name__}")
    try:
        if manifest["format"] != MANIFEST_FORMAT:
            raise Corrupt(f"unknown manifest format {manifest['format']!r}")
        if manifest["checkpoint_id"] != checkpoint_id or manifest["job"] != job_id:
            raise Corrupt(
                f"the manifest is of checkpoint {manifest['checkpoint_id']!r} of job "
                f"{manifest['job']!r}"
            )
        for name in ("fingerprint", "protocol"):
            if not isinstance(manifest[name], str):
                raise Corrupt(f"the manifest's {name} is not a string")
        for entry in manifest["tasks"]:
            _check_entry(entry, key_of)
    except Corrupt:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise Corrupt(f"the manifest is malformed ({type(e).__name__}: {e})") from None
    return manifest


def _check_entry(entry: Any, key_of: Callable[[TaskId], str]) -> None:
    """Raise :class:`Corrupt` unless ``entry`` is one task's well-formed manifest entry
    (KeyError, TypeError, ValueError: the caller reports them as malformed)."""
    operator, subtask, parallelism = entry["task"]
    task = TaskId(operator, subtask, parallelism)
    base = entry.get("base")
    if (
        not isinstance(operator, str)
        or not isinstance(subtask, int)
        or not isinstance(parallelism, int)
        or entry["label"] != task_label(task)
        or entry["key"] != key_of(task)
        or not isinstance(entry["size"], int)
        or len(bytes.fromhex(entry["sha256"])) != hashlib.sha256().digest_size
        or not (base is None or (isinstance(base, int) and not isinstance(base, bool)))
    ):
        raise Corrupt(f"the manifest's entry {entry!r} is malformed")
