"""A slow or silent peer cannot stall the job (issue 12, item 6).

While a word count runs on Spark, 50 connections that send nothing and 50 that send one
byte a second are opened against the coordinator and every host's data plane. Each must
prove it knows the job secret within its handshake deadline, without the loop that
accepted it waiting for it: the run finishes with Spark's own answer, and in about the
time of an undisturbed run (printed; the bound asserted is far below what the old
blocking handshake took: one deadline per connection, one after the other).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from typing import Any

import pytest

import absnb
from absnb.runtime.connections.handshake import HANDSHAKE_SECONDS
from absnb.runtime.control_plane import server as control
from absnb.runtime.spark import SparkRuntime, final_counts, word_count_answer
from tests.runtime.test_spark_sinks import text

IDLE = 50
DRIP = 50
RATE = 400
"""Lines per second per source: the run lasts several handshake deadlines."""


class Attack:
    """Opens :data:`IDLE` silent and :data:`DRIP` one-byte-a-second connections, spread
    over ``targets()``, once it returns addresses; drips until :meth:`stop`."""

    def __init__(self, targets: Any) -> None:
        self.targets = targets
        self.idle: list[socket.socket] = []
        self.drip: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        addresses: list[tuple[str, int]] = []
        while not addresses and not self._stop.wait(0.01):
            addresses = self.targets()
        if not addresses:
            return
        for i in range(IDLE + DRIP):
            with contextlib.suppress(OSError):
                s = socket.create_connection(addresses[i % len(addresses)], timeout=5)
                (self.idle if i < IDLE else self.drip).append(s)
        while not self._stop.wait(1.0):
            for s in self.drip:
                with contextlib.suppress(OSError):
                    s.send(b"\0")

    def dropped(self) -> int:
        """Connections the peers have closed or reset."""
        n = 0
        for s in self.idle + self.drip:
            s.setblocking(False)
            try:
                while select.select([s], [], [], 0)[0]:
                    if not s.recv(1 << 16):
                        n += 1
                        break
            except OSError:  # reset: closed before it was accepted, or with data unread
                n += 1
        return n

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for s in self.idle + self.drip:
            s.close()


@pytest.fixture
def attacks(monkeypatch) -> list[Attack]:
    """Every CoordinatorServer the runtime starts is attacked once its hosts registered."""
    started: list[Attack] = []

    class Attacked(control.CoordinatorServer):
        def start(self) -> None:
            super().start()

            def targets() -> list[tuple[str, int]]:
                registered = dict(self._registered)
                if len(registered) < self.hosts:
                    return []
                return [self.address, *(r.data_address for r in registered.values())]

            started.append(Attack(targets))

    monkeypatch.setattr(control, "CoordinatorServer", Attacked)
    yield started
    for attack in started:
        attack.stop()


def test_silent_and_dripping_peers_do_not_stall_the_run(spark, tmp_path, request) -> None:
    lines = text(2)
    answer = word_count_answer(spark, lines)
    runtime = SparkRuntime(spark, checkpoint_dir=str(tmp_path))

    def run() -> Any:
        return runtime.run(
            absnb.word_count(lines), "abs", checkpoint_interval=0.2, source_rate=RATE
        )

    calm = run()
    assert final_counts(calm.output) == answer
    attacks = request.getfixturevalue("attacks")
    attacked = run()
    assert len(attacks) == 1
    attack = attacks[0]
    assert final_counts(attacked.output) == answer
    assert len(attack.idle) + len(attack.drip) == IDLE + DRIP
    assert attacked.restarts == 0
    assert len(attacked.checkpoints) > 0
    dropped = attack.dropped()  # before the run ended, or when it ended
    print(
        f"\nundisturbed {calm.seconds:.2f} s, with {IDLE} idle + {DRIP} dripping connections "
        f"{attacked.seconds:.2f} s (ratio {attacked.seconds / calm.seconds:.2f}); "
        f"{dropped} of them closed by the peers"
    )
    assert dropped == IDLE + DRIP
    # The old blocking handshake served them one after the other: at least one deadline
    # per connection of the coordinator's share, several minutes in all.
    assert attacked.seconds < calm.seconds + (IDLE + DRIP) * HANDSHAKE_SECONDS / 10
