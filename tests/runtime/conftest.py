"""One SparkSession for the whole test run (starting one takes seconds), a guard that turns
a hung Spark test into a failure with every thread's stack, and impostor peers for the
authentication tests."""

from __future__ import annotations

import contextlib
import faulthandler
import hmac
import os
import shutil
import socket
import struct
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

SPARK_TEST_LIMIT = 240.0
"""Seconds one end-to-end Spark test may take before the guard dumps every thread's stack
and ends the test process (a few seconds is usual: a hang must not stall CI for an hour)."""


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.skip("Java is not installed (PySpark needs it)")
    from absnb.runtime.spark import default_session

    session = default_session("local[2]")  # its JVM on C1 (SESSION_MEMORY)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def jvm_archive_path() -> Any:
    """This machine's class-data archive for the driver's JVM (.ci/setup builds it; built
    here, once, where it is missing)."""
    if shutil.which("java") is None:
        pytest.skip("Java is not installed (PySpark needs it)")
    from absnb.runtime.spark import jvm_archive

    path = jvm_archive.archive_path()
    assert path is not None, "ABSNB_JVM_ARCHIVE=off: unset it to test the archive"
    if not jvm_archive.usable(path):
        jvm_archive.build(path)
    return path


@pytest.fixture(autouse=True)
def _spark_test_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """Like pytest-timeout's thread method, for the tests that use Spark: past
    :data:`SPARK_TEST_LIMIT`, print every thread's stack and end the test process."""
    if "spark" not in request.fixturenames:
        yield
        return
    config, name = request.config, request.node.nodeid

    def expire() -> None:
        capture = config.pluginmanager.getplugin("capturemanager")
        if capture is not None:
            capture.suspend_global_capture(in_=True)
        sys.stderr.write(f"\n+++ {name} ran for more than {SPARK_TEST_LIMIT:g} s: hung +++\n")
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(1)

    timer = threading.Timer(SPARK_TEST_LIMIT, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


UNPICKLED: list[str] = []
"""Filled when a :class:`Tripwire` is unpickled: nothing an unproven peer sends may be."""


def _tripped(name: str) -> None:
    UNPICKLED.append(name)


class Tripwire:
    """Unpickling this records it in :data:`UNPICKLED`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_tripped, (self.name,))


def impostor_server(kind: int) -> tuple[tuple[str, int], threading.Thread]:
    """A server that does not know the job secret but plays along: it challenges the
    client, ignores the answer, sends the best proof it can (made with another secret),
    then a frame of ``kind`` holding a :class:`Tripwire`. Returns its address and thread."""
    from absnb.runtime.connections.wire import (
        MAC_BYTES,
        NONCE_BYTES,
        SERVER_LABEL,
        dumps,
        encode,
        new_secret,
        recv_exact,
    )

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def serve() -> None:
        with listener:
            sock, _ = listener.accept()
        with sock:
            sock.settimeout(10)
            nonce = os.urandom(NONCE_BYTES)
            sock.sendall(nonce)
            recv_exact(sock, MAC_BYTES)
            (length,) = struct.unpack(">I", recv_exact(sock, 4))
            body = recv_exact(sock, length)
            proof = hmac.new(new_secret(), SERVER_LABEL + nonce + body, "sha256").digest()
            with contextlib.suppress(OSError):
                sock.sendall(proof + encode(kind, dumps(Tripwire("impostor"))))
                while sock.recv(4096):  # until the client hangs up
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener.getsockname()[:2], thread


@pytest.fixture
def impostor() -> Any:
    """:func:`impostor_server`, with :data:`UNPICKLED` cleared first."""
    UNPICKLED.clear()
    return impostor_server


@pytest.fixture
def unpickled() -> list[str]:
    """What was unpickled of the :class:`Tripwire` objects peers sent."""
    return UNPICKLED
