"""Records per second through one data-plane channel between two processes on loopback.

Not collected by pytest (no ``test_`` prefix). Run:
``python3 tests/runtime/transport_speed.py [records]``. A sender process sends
``Record((word, 1), seq)`` records (a fresh tuple each, 1,000 distinct words; or one shared
value) as fast as ``send`` takes them, polling for credit every 1,000 records like a host
loop; the receiver process polls and counts. The clock runs on the receiver, from a first
marker to the closing barrier; the table is printed by the parent process.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker, Record
from absnb.runtime.connections.wire import new_secret
from absnb.runtime.data_plane.transport import DataPlane

CHANNEL = ChannelId(TaskId("source"), TaskId("count"))


def receive(secret: bytes, options: dict[str, Any], pipe: Connection) -> None:
    with DataPlane(secret, **options) as plane:
        plane.expect_inputs([CHANNEL])
        pipe.send(plane.address)
        plane.wait_ready(30)
        records = 0
        began = None
        while True:
            for _, m in plane.poll(0.01):
                if m.__class__ is Record:
                    records += 1
                elif type(m) is Marker:
                    began = time.perf_counter()
                elif type(m) is CheckpointBarrier:
                    assert began is not None
                    pipe.send((records, time.perf_counter() - began, plane.stats()))
                    return


def send(
    secret: bytes, options: dict[str, Any], address: Any, n: int, value: Any, pipe: Connection
) -> None:
    with DataPlane(secret, **options) as plane:
        plane.connect_outputs({CHANNEL: address}, 30)
        plane.send(CHANNEL, Marker(0))
        out = plane.send
        if value == "words":  # a fresh (word, 1) tuple per record, as a tokenizer makes
            words = [f"word{i}" for i in range(1000)]
            for seq in range(1, n + 1):
                out(CHANNEL, Record((words[seq % 1000], 1), seq))
                if not seq % 1000:
                    plane.poll()
        else:  # one shared value: pickle writes it once per batch
            for seq in range(1, n + 1):
                out(CHANNEL, Record(value, seq))
                if not seq % 1000:
                    plane.poll()
        plane.send(CHANNEL, CheckpointBarrier(1))
        while plane.pending_output():
            plane.poll(0.001)
        pipe.send(plane.stats())
        time.sleep(0.2)  # let the receiver read before the connection closes


def run(n: int, value: Any, **options: Any) -> tuple[int, float, dict, dict]:
    """``(records received, seconds, receiver stats, sender stats)``."""
    secret = new_secret()
    rx_pipe, rx_end = mp.Pipe()
    tx_pipe, tx_end = mp.Pipe()
    rx = mp.Process(target=receive, args=(secret, options, rx_end))
    rx.start()
    address = rx_pipe.recv()
    tx = mp.Process(target=send, args=(secret, options, address, n, value, tx_end))
    tx.start()
    records, seconds, received = rx_pipe.recv()
    sent = tx_pipe.recv()
    rx.join()
    tx.join()
    return records, seconds, received, sent


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    cases = [
        ("(word_i, 1)", "words", {}),
        ("(word_i, 1)", "words", {"batch_records": 100}),
        ("(word_i, 1)", "words", {"batch_records": 5000, "batch_bytes": 256 * 1024}),
        ("(word_i, 1)", "words", {"credits": 2}),
        ("(word_i, 1)", "words", {"credits": 1, "memory_bytes": 0}),
        ("shared ('word', 1)", ("word", 1), {}),
        ("shared 100 B str", "x" * 100, {}),
    ]
    print(f"{n:,} records per run, one channel, two processes on loopback\n")
    header = (
        f"{'value':<18} {'options':<46} {'records/s':>11} {'MB/s':>7} {'frames':>7} "
        f"{'spilled MB':>10}"
    )
    print(header)
    print("-" * len(header))
    for label, value, options in cases:
        records, seconds, received, sent = run(n, value, **options)
        assert records == n, (records, n)
        opts = ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"
        print(
            f"{label:<18} {opts:<46} {records / seconds:>11,.0f} "
            f"{received['bytes_received'] / seconds / 1e6:>7.1f} "
            f"{received['frames_received']:>7,} {sent['spilled_bytes'] / 1e6:>10.1f}"
        )


if __name__ == "__main__":
    main()
