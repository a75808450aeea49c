"""A throwaway PostgreSQL server on loopback, for tests and notebooks.

:class:`PostgresServer` runs ``initdb`` into a temporary directory and starts ``postgres``
on 127.0.0.1 on a free port, with ``max_prepared_transactions`` set (two-phase commit needs
it; PostgreSQL's default is 0) and trust authentication for the user ``absnb``; stopping it
(fast shutdown) removes the directory. Being thrown away, it does not wait for its writes
to reach the disk (``fsync=off``; ``durable=True`` does): a commit or ``PREPARE
TRANSACTION`` is as visible to other connections as ever, only a crash of the machine
could lose it::

    with PostgresServer() as server:
        sink = PostgresSink(server.dsn, "words")

What it needs:

- the server binaries ``initdb`` and ``postgres``: Debian's ``postgresql`` package
  (``apt-get install postgresql``; they are in ``/usr/lib/postgresql/<version>/bin``), or a
  directory given as ``bin_dir`` or in ``ABSNB_PG_BIN``;
- PostgreSQL refuses to run as root: as root it runs the server as an unprivileged user
  (``postgres`` if it exists, else ``nobody``; or ``run_as``), which owns the temporary
  directory. No ``su`` or ``sudo`` is involved: the child process drops to that user.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from absnb.core.errors import AbsnbError

USER = "absnb"


class PostgresUnavailableError(AbsnbError, RuntimeError):
    """No PostgreSQL server could be started here (binaries missing, or start-up failed)."""


def find_bin_dir(bin_dir: str | None = None) -> str | None:
    """The directory of ``initdb`` and ``postgres``: ``bin_dir``, ``$ABSNB_PG_BIN``, the
    ``PATH``, or the newest ``/usr/lib/postgresql/*/bin``; None if there is none."""
    candidates = [bin_dir, os.environ.get("ABSNB_PG_BIN")]
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(os.path.dirname(os.path.realpath(initdb)))
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in Path(p).parent.name.split(".")],
    )
    candidates += reversed(versions)
    for c in candidates:
        if c and all(os.access(os.path.join(c, b), os.X_OK) for b in ("initdb", "postgres")):
            return c
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PostgresServer:
    """A PostgreSQL server in a temporary directory; a context manager (see the module).

    Args:
        max_prepared_transactions: how many prepared transactions may wait at once (each
            sink subtask holds one per pending checkpoint).
        bin_dir: where ``initdb`` and ``postgres`` are (default: :func:`find_bin_dir`).
        run_as: the user to run the server as when this process is root.
        startup_timeout: seconds to wait for the server to accept connections.
        durable: flush every commit to disk (PostgreSQL's default, a few milliseconds a
            commit or ``PREPARE TRANSACTION`` on a shared disk); False: ``fsync=off``,
            ``synchronous_commit=off``, ``full_page_writes=off``, as fits a server whose
            directory is deleted when it stops.
    """

    def __init__(
        self,
        *,
        max_prepared_transactions: int = 20,
        bin_dir: str | None = None,
        run_as: str | None = None,
        startup_timeout: float = 60.0,
        durable: bool = False,
    ) -> None:
        self.max_prepared_transactions = max_prepared_transactions
        self.bin_dir = bin_dir
        self.run_as = run_as
        self.startup_timeout = startup_timeout
        self.durable = durable
        self.directory: str | None = None
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def dsn(self) -> str:
        """The connection string (libpq key=value) of the running server."""
        if self.port is None:
            raise PostgresUnavailableError("the server is not running: call start() first")
        return f"host=127.0.0.1 port={self.port} user={USER} dbname=postgres"

    def _user(self) -> dict[str, int]:
        if os.geteuid() != 0:
            return {}
        names = [self.run_as] if self.run_as else ["postgres", "nobody"]
        for name in names:
            try:
                entry = pwd.getpwnam(name)
            except KeyError:
                continue
            return {"user": entry.pw_uid, "group": entry.pw_gid}
        raise PostgresUnavailableError(
            f"PostgreSQL refuses to run as root and there is no user {' or '.join(names)} to "
            "run it as: create one (useradd --system postgres) or pass run_as"
        )

    def start(self) -> PostgresServer:
        """initdb, start ``postgres``, wait until it accepts connections."""
        if self.process is not None:
            return self
        bin_dir = find_bin_dir(self.bin_dir)
        if bin_dir is None:
            raise PostgresUnavailableError(
                "PostgreSQL server binaries (initdb, postgres) were not found: install them "
                "(Debian: apt-get install postgresql) or set ABSNB_PG_BIN to their directory"
            )
        user = self._user()
        self.directory = tempfile.mkdtemp(prefix="absnb-pg-")
        data = os.path.join(self.directory, "data")
        if user:
            os.chown(self.directory, user["user"], user["group"])
        log = os.path.join(self.directory, "server.log")
        try:
            self._run(
                [
                    os.path.join(bin_dir, "initdb"),
                    "-D",
                    data,
                    "-U",
                    USER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
                user,
                log,
            )
            self.port = _free_port()
            with open(log, "ab") as out:
                self.process = subprocess.Popen(
                    [
                        os.path.join(bin_dir, "postgres"),
                        "-D",
                        data,
                        "-p",
                        str(self.port),
                        "-k",
                        self.directory,
                        "-c",
                        "listen_addresses=127.0.0.1",
                        "-c",
                        f"max_prepared_transactions={self.max_prepared_transactions}",
                        *self._flush_settings(),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    user=user.get("user"),
                    group=user.get("group"),
                )
            self._wait_ready(log)
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)
        return self

    def _flush_settings(self) -> list[str]:
        """The ``-c`` options of :attr:`durable`: none when durable, else no flushing."""
        if self.durable:
            return []
        off = ("fsync", "synchronous_commit", "full_page_writes")
        return [arg for name in off for arg in ("-c", f"{name}=off")]

    def _run(self, cmd: list[str], user: dict[str, int], log: str) -> None:
        with open(log, "ab") as out:
            done = subprocess.run(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                user=user.get("user"),
                group=user.get("group"),
            )
        if done.returncode != 0:
            raise PostgresUnavailableError(
                f"{os.path.basename(cmd[0])} failed ({done.returncode}):\n{_tail(log)}"
            )

    def _wait_ready(self, log: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            assert self.process is not None
            assert self.port is not None
            if self.process.poll() is not None:
                raise PostgresUnavailableError(
                    f"postgres exited at start-up ({self.process.returncode}):\n{_tail(log)}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
                if "ready to accept connections" in _tail(log, 4000):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise PostgresUnavailableError(
                    f"postgres did not accept connections within {self.startup_timeout} s:\n"
                    f"{_tail(log)}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        """Fast shutdown (clients are disconnected), then remove the directory."""
        atexit.unregister(self.stop)
        from absnb.sinks import postgres

        if self.port is not None:
            postgres.close_connections(self.dsn)
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGINT)
                try:
                    self.process.wait(30)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self.process = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
        self.port = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = f"127.0.0.1:{self.port}" if self.port else "not running"
        return f"PostgresServer({where})"


def _tail(path: str, size: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
