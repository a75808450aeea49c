"""Where checkpoint storage keeps its files: a local directory, or any fsspec filesystem
(and :class:`LatencyFS`, a model of a remote store's write latency around either).

Both backends write atomically (a temporary name in the same directory, then a rename);
the local one also fsyncs the file and its directory, so that a completed checkpoint
survives a crash of the machine.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import secrets
import shutil
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from absnb.core.errors import AbsnbError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)(://|::)")
_PACKAGES = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
    "az": "adlfs",
    "adl": "adlfs",
    "hdfs": "pyarrow",
    "viewfs": "pyarrow",
    "webhdfs": "requests",
    "http": "aiohttp",
    "https": "aiohttp",
    "sftp": "paramiko",
    "ssh": "paramiko",
}


class StorageError(AbsnbError, OSError):
    """Checkpoint storage cannot be reached or written, or a checkpoint cannot complete."""


class CommittedCheckpointLostError(StorageError):
    """The newest completed checkpoint, whose transactions the sinks may have committed,
    cannot be read: restoring an older one would write its output a second time."""

    def __init__(self, message: str, *, checkpoint_id: int, path: str) -> None:
        super().__init__(message)
        self.checkpoint_id = checkpoint_id
        self.path = path
        """The file (or directory) that is missing or damaged."""


def encode_name(name: str) -> str:
    """A reversible, filesystem- and glob-safe name: ``count[1]`` -> ``count%5B1%5D``."""
    encoded = quote(name, safe="")
    if encoded.startswith("."):  # no hidden files, no "." or ".."
        encoded = "%2E" + encoded[1:]
    return encoded


def decode_name(encoded: str) -> str:
    """Inverse of :func:`encode_name`."""
    return unquote(encoded)


class LocalFS:
    """A local directory tree, with POSIX atomic rename and fsync."""

    sep = os.sep

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def write_atomic(self, path: str, chunks: Iterable[bytes]) -> None:
        directory, name = os.path.split(path)
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(8)}.tmp")
        # os.open with 0o666 honours the umask, like open(); mkstemp would force 0o600
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        try:
            with os.fdopen(fd, "wb") as f:
                for chunk in chunks:
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._fsync_dir(directory)

    @staticmethod
    def _fsync_dir(directory: str) -> None:
        if os.name != "posix":
            return
        with contextlib.suppress(OSError):
            fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def read_head(self, path: str, n: int) -> bytes:
        with open(path, "rb") as f:
            return f.read(n)

    def size(self, path: str) -> int:
        return os.stat(path).st_size

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def listdir(self, path: str) -> list[str]:
        try:
            return os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def rmtree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)


class FsspecFS:
    """Any fsspec filesystem; rename is ``mv`` (a copy on object stores, whose PUT is atomic)."""

    sep = "/"

    def __init__(self, fs: Any) -> None:
        self.fs = fs

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    def makedirs(self, path: str) -> None:
        self.fs.makedirs(path, exist_ok=True)

    def write_atomic(self, path: str, chunks: Iterable[bytes]) -> None:
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{secrets.token_hex(8)}.tmp")
        try:
            with self.fs.open(tmp, "wb") as f:
                for chunk in chunks:
                    f.write(chunk)
            self.fs.mv(tmp, path)
        except BaseException:
            with contextlib.suppress(Exception):
                self.fs.rm_file(tmp)
            raise
        self.fs.invalidate_cache(directory)

    def read(self, path: str) -> bytes:
        return bytes(self.fs.cat_file(path))

    def read_head(self, path: str, n: int) -> bytes:
        return bytes(self.fs.cat_file(path, start=0, end=n))

    def size(self, path: str) -> int:
        return int(self.fs.size(path))

    def exists(self, path: str) -> bool:
        return bool(self.fs.exists(path))

    def listdir(self, path: str) -> list[str]:
        self.fs.invalidate_cache(path)  # other processes (the Spark tasks) write here too
        try:
            entries = self.fs.ls(path, detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [posixpath.basename(str(e).rstrip("/")) for e in entries]

    def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(path)

    def rmtree(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(path, recursive=True)
        self.fs.invalidate_cache(path)


class LatencyFS:
    """A model of remote checkpoint storage: ``inner`` (a local directory, say) where every
    durable write first waits ``latency`` seconds, as a PUT to an object store or a write
    to a distributed file system does (the paper's synchronous snapshots stalled the job
    for as long as their state took to reach HDFS). Only the wait is modelled: no
    bandwidth limit, no failures; reads, lists and deletes are the inner backend's own.
    The wait is a sleep, so it costs no CPU and holds no interpreter lock."""

    def __init__(self, inner: LocalFS | FsspecFS, latency: float) -> None:
        self.inner = inner
        self.latency = latency
        self.sep = inner.sep

    def write_atomic(self, path: str, chunks: Iterable[bytes]) -> None:
        time.sleep(self.latency)
        self.inner.write_atomic(path, chunks)

    # everything else is the inner backend's
    def join(self, *parts: str) -> str:
        return self.inner.join(*parts)

    def makedirs(self, path: str) -> None:
        self.inner.makedirs(path)

    def read(self, path: str) -> bytes:
        return self.inner.read(path)

    def read_head(self, path: str, n: int) -> bytes:
        return self.inner.read_head(path, n)

    def size(self, path: str) -> int:
        return self.inner.size(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def listdir(self, path: str) -> list[str]:
        return self.inner.listdir(path)

    def remove(self, path: str) -> None:
        self.inner.remove(path)

    def rmtree(self, path: str) -> None:
        self.inner.rmtree(path)


def local_path(url: str) -> str | None:
    """The local path of ``url``, or None when it needs fsspec."""
    m = _URL.match(url)
    if m is None or len(m.group(1)) == 1:  # a plain path, or a Windows drive letter
        return os.path.abspath(os.path.expanduser(url))
    if m.group(1).lower() == "file" and m.group(2) == "://":
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            raise StorageError(
                f"checkpoint storage {url!r}: a file:// URL must name a local path "
                "(file:///path), not a host"
            )
        return os.path.abspath(unquote(parts.path))
    return None


def open_fsspec(url: str) -> tuple[Any, str]:
    m = _URL.match(url)
    if m is None:
        raise ValueError(
            f"checkpoint storage {url!r} is neither a local path nor a URL such as "
            "s3://bucket/path or memory://name"
        )
    scheme = m.group(1).lower()
    extra = _PACKAGES.get(scheme)
    hint = "pip install fsspec" + (f" {extra}" if extra else "")
    try:
        from fsspec.core import url_to_fs
    except ImportError as e:
        raise StorageError(
            f"checkpoint storage {url!r} needs fsspec for {scheme}:// URLs: {hint}"
        ) from e
    try:
        fs, path = url_to_fs(url)
    except ImportError as e:
        raise StorageError(
            f"checkpoint storage {url!r}: the {scheme}:// filesystem is not installed ({e}); {hint}"
        ) from e
    except (OSError, ValueError) as e:  # an unknown scheme; hdfs without libhdfs or Java
        raise StorageError(f"checkpoint storage {url!r} cannot be opened: {e}") from e
    return fs, path.rstrip("/") or "/"
