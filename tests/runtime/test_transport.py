"""The data plane: channels are framed TCP connections carrying batches of records with
barriers in FIFO order between them (DESIGN, "The two runtimes").

Both ends run in this process: ``connect_outputs`` runs in a thread while this thread
accepts, then one loop polls every data plane in turn (the design is single-threaded).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import pairwise
from typing import Any

import pytest

from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker, Record, RecordBatch
from absnb.runtime.connections.wire import new_secret
from absnb.runtime.data_plane.transport import DataPlane

SECRET = new_secret()
SINK = TaskId("sink")


def chan(i: int = 0) -> ChannelId:
    return ChannelId(TaskId("src", i, 3), SINK)


@contextmanager
def planes(n: int, **options: Any) -> Iterator[list[DataPlane]]:
    made = [DataPlane(SECRET, **options) for _ in range(n)]
    try:
        yield made
    finally:
        for p in made:
            p.close()


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, errors


def link(receiver: DataPlane, senders: Sequence[tuple[DataPlane, ChannelId]]) -> None:
    """Connect each sender's channel to ``receiver``."""
    receiver.expect_inputs(c for _, c in senders)
    started = [
        in_thread(lambda s=s, c=c: s.connect_outputs({c: receiver.address}, 5)) for s, c in senders
    ]
    receiver.wait_ready(5)
    for t, errors in started:
        t.join(5)
        assert not errors, errors


def pump(
    receiver: DataPlane,
    senders: Sequence[DataPlane],
    until: Callable[[list], bool],
    timeout: float = 5.0,
) -> list[tuple[ChannelId, Any]]:
    """Poll everyone until ``until(received)``; returns what the receiver handed out."""
    got: list[tuple[ChannelId, Any]] = []
    deadline = time.monotonic() + timeout
    while not until(got):
        assert time.monotonic() < deadline, f"timed out with {len(got)} messages"
        for s in senders:
            s.poll()
        got += receiver.poll(0.001)
    return got


def pump_for(receiver: DataPlane, senders: Sequence[DataPlane], seconds: float) -> list:
    end = time.monotonic() + seconds
    return pump(receiver, senders, lambda _: time.monotonic() >= end)


def count(n: int) -> Callable[[list], bool]:
    return lambda got: len(got) >= n


def records(n: int, start: int = 1, value: Any = "w") -> list[Record]:
    return [Record((value, i), i) for i in range(start, start + n)]


def test_fifo_records_and_barriers_across_batch_boundaries() -> None:
    c = chan()
    with planes(2, batch_records=7) as (rx, tx):
        link(rx, [(tx, c)])
        sent: list[Any] = []
        for i in range(1, 60):
            sent.append(Record(("w", i), i))
            if i % 11 == 0:
                sent.append(CheckpointBarrier(i // 11))
            if i % 17 == 0:
                sent.append(Marker(i))
        for m in sent:
            tx.send(c, m)
        tx.flush()
        got = pump(rx, [tx], count(len(sent)))
        assert got == [(c, m) for m in sent]
        # a barrier or marker closes its batch; records go in batches of at most 7:
        # 1-11 B | 12-17 M | 18-22 B | 23-33 B | 34 M | 35-44 B | 45-51 M | 52-55 B | 56-59
        assert tx.stats()["sent"][c]["frames"] == 2 + 1 + 1 + 2 + 1 + 2 + 2 + 1 + 1


def test_batches_by_count_and_flush_of_a_partial_batch() -> None:
    c = chan()
    with planes(2, batch_records=10) as (rx, tx):
        link(rx, [(tx, c)])
        for r in records(25):
            tx.send(c, r)
        got = pump(rx, [tx], count(20))
        assert [m for _, m in got] == records(20)
        assert pump_for(rx, [tx], 0.05) == []  # five wait for a flush
        assert tx.stats()["sent"][c]["frames"] == 2
        tx.flush()
        got = pump(rx, [tx], count(5))
        assert [m for _, m in got] == records(5, start=21)
        assert tx.stats()["sent"][c]["frames"] == 3
        tx.flush()  # nothing pending: no empty frame
        assert tx.stats()["sent"][c]["frames"] == 3


def test_batches_by_bytes() -> None:
    c = chan()
    with planes(2, batch_bytes=4096) as (rx, tx):
        link(rx, [(tx, c)])
        sent = [Record(f"{i:0500d}", i) for i in range(200)]  # 500 bytes each, all different
        for r in sent:
            tx.send(c, r)
        tx.flush()
        got = pump(rx, [tx], count(200))
        assert [m for _, m in got] == sent
        s = tx.stats()["sent"][c]
        assert 200 * 500 // 4096 <= s["frames"] <= 2 * 200 * 500 // 4096
        assert s["bytes"] / s["frames"] <= 4096 * 1.25


def test_block_stops_reading_and_credit_bounds_the_buffer() -> None:
    c = chan()
    with planes(2, batch_records=10, credits=2) as (rx, tx):
        link(rx, [(tx, c)])
        rx.block(c)
        sent = records(300)
        for r in sent:
            tx.send(c, r)
        assert pump_for(rx, [tx], 0.2) == []
        received = rx.stats()["received"][c]
        assert received["frames"] == received["buffered_frames"] == 0  # the socket is not read
        sender = tx.stats()["sent"][c]
        assert sender["credit"] == 0
        assert sender["queued_frames"] == 30 - 2  # two frames in flight: what credit allows
        assert tx.pending_output() > 0
        rx.unblock(c)
        got = pump(rx, [tx], count(300))
        assert [m for _, m in got] == sent
        assert rx.stats()["received"][c]["blocked_seconds"] >= 0.2
        pump(rx, [tx], lambda _: tx.pending_output() == 0)


def test_a_channel_stops_at_its_barrier_so_the_host_can_block_it() -> None:
    c = chan()
    with planes(2) as (rx, tx):
        link(rx, [(tx, c)])
        rx.block(c)
        tx.send(c, Record("a", 1))
        tx.send(c, CheckpointBarrier(1))  # closes the first frame
        tx.send(c, Record("b", 2))
        tx.flush()
        time.sleep(0.05)  # both frames wait in the receiver's socket
        rx.unblock(c)
        assert rx.poll(1) == [(c, Record("a", 1)), (c, CheckpointBarrier(1))]
        assert rx.stats()["received"][c]["buffered_frames"] == 1
        rx.block(c)  # what the host does on a barrier
        assert pump_for(rx, [tx], 0.05) == []
        rx.unblock(c)
        assert rx.poll() == [(c, Record("b", 2))]


def test_three_inputs_interleave_but_keep_fifo_per_channel() -> None:
    cs = [chan(i) for i in range(3)]
    with planes(4, batch_records=20) as (rx, *txs):
        link(rx, list(zip(txs, cs, strict=True)))
        sent: dict[ChannelId, list[Any]] = {c: [] for c in cs}
        for round_ in range(10):
            for tx, c in zip(txs, cs, strict=True):
                for r in records(50, start=50 * round_ + 1, value=str(c)):
                    tx.send(c, r)
                    sent[c].append(r)
                tx.send(c, CheckpointBarrier(round_ + 1))
                sent[c].append(CheckpointBarrier(round_ + 1))
        got = pump(rx, txs, count(3 * 510))
        for c in cs:
            assert [m for ch, m in got if ch == c] == sent[c]
        runs = 1 + sum(a[0] != b[0] for a, b in pairwise(got))
        assert runs > 3  # the channels interleave


def test_spill_when_queued_output_passes_memory_bytes(tmp_path) -> None:
    c = chan()
    with planes(2, batch_records=5, credits=1, memory_bytes=200, spill_dir=str(tmp_path)) as (
        rx,
        tx,
    ):
        link(rx, [(tx, c)])
        rx.block(c)
        sent: list[Any] = []
        for i, r in enumerate(records(400), 1):
            sent.append(r)
            if i % 37 == 0:
                sent.append(CheckpointBarrier(i))
        for m in sent:
            tx.send(c, m)
        tx.flush()
        assert tx.stats()["spilled_bytes"] > 0
        assert tx.stats()["sent"][c]["spilled_bytes"] > 0
        rx.unblock(c)
        got = pump(rx, [tx], count(len(sent)))
        assert [m for _, m in got] == sent
        pump(rx, [tx], lambda _: tx.pending_output() == 0)
        # the channel keeps working after its spill drained
        tx.send(c, Record("after", 401))
        tx.flush()
        assert pump(rx, [tx], count(1)) == [(c, Record("after", 401))]


def test_stats_count_records_bytes_and_frames() -> None:
    c = chan()
    with planes(2, batch_records=100) as (rx, tx):
        link(rx, [(tx, c)])
        for r in records(250):
            tx.send(c, r)
        tx.send(c, CheckpointBarrier(1))
        pump(rx, [tx], count(251))
        sent, received = tx.stats(), rx.stats()
        assert sent["sent"][c]["records"] == received["received"][c]["records"] == 250
        assert sent["sent"][c]["messages"] == received["received"][c]["messages"] == 251
        assert sent["frames_sent"] == received["frames_received"] == 3
        assert sent["bytes_sent"] == received["bytes_received"] > 0
        assert received["received"][c]["blocked_seconds"] == 0.0
        assert sent["spilled_bytes"] == 0
        rx.block(c)
        time.sleep(0.02)
        rx.unblock(c)
        assert rx.stats()["received"][c]["blocked_seconds"] >= 0.02


def test_record_batches_keep_their_place_and_count_as_their_records() -> None:
    c = chan()
    with planes(2, batch_records=3) as (rx, tx):
        link(rx, [(tx, c)])
        sent: list[Any] = [
            RecordBatch(["a", "b"], 1),
            Record("c", 3),
            RecordBatch(["d", "e", "f"], 4),
            CheckpointBarrier(1),  # closes the frame it joins: the channel stops there
            RecordBatch(["g"], 7),
        ]
        for m in sent:
            tx.send(c, m)
        tx.flush()
        first = pump(rx, [tx], count(4))
        assert first == [(c, m) for m in sent[:4]]
        assert pump(rx, [tx], count(1)) == [(c, sent[4])]
        assert tx.stats()["sent"][c]["records"] == rx.stats()["received"][c]["records"] == 7
        assert tx.stats()["sent"][c]["messages"] == 5
        assert tx.stats()["sent"][c]["frames"] == 3  # 3 messages | barrier | the last batch


def test_a_wrong_secret_is_refused() -> None:
    c = chan()
    with planes(1) as (rx,), DataPlane(new_secret()) as intruder:
        rx.expect_inputs([c])
        t, errors = in_thread(lambda: intruder.connect_outputs({c: rx.address}, 5))
        with pytest.raises(TimeoutError, match=r"src\[0\]->sink.*secret"):
            rx.wait_ready(0.5)
        t.join(5)
        assert len(errors) == 1
        assert isinstance(errors[0], ConnectionError)
        assert "secret" in str(errors[0])
        assert rx.stats()["received"][c]["frames"] == 0
        # the channel was never mapped: the real sender still connects
        with DataPlane(SECRET) as tx:
            t, errors = in_thread(lambda: tx.connect_outputs({c: rx.address}, 5))
            rx.wait_ready(5)
            t.join(5)
            assert not errors
            tx.send(c, Record("ok", 1))
            tx.flush()
            assert pump(rx, [tx], count(1)) == [(c, Record("ok", 1))]


def test_a_raw_connection_that_fails_the_handshake_is_closed() -> None:
    c = chan()
    with planes(1) as (rx,):
        rx.expect_inputs([c])
        with socket.create_connection(rx.address) as s:
            s.settimeout(5)
            s.sendall(b"x" * 36)  # not an answer to the challenge
            deadline = time.monotonic() + 5
            while not rx.stats()["refused"]:
                assert time.monotonic() < deadline
                rx.poll(0.01)
            assert s.recv(32)  # the challenge
            assert s.recv(32) == b""  # then closed without a word
        assert rx.closed_inputs() == []
        assert not rx.stats()["received"][c]["closed"]


def test_another_attempt_is_refused() -> None:
    c = chan()
    with planes(1, attempt=2) as (rx,), DataPlane(SECRET, attempt=1) as old:
        rx.expect_inputs([c])
        t, errors = in_thread(lambda: old.connect_outputs({c: rx.address}, 5))
        with pytest.raises(TimeoutError, match="attempt 1, this is attempt 2"):
            rx.wait_ready(0.5)
        t.join(5)
        assert len(errors) == 1
        assert isinstance(errors[0], ConnectionError)
        assert rx.poll() == []


def test_hosts_that_connect_to_each_other_do_not_wait_on_each_other() -> None:
    ab, ba = ChannelId(TaskId("a"), TaskId("b")), ChannelId(TaskId("b"), TaskId("a"))
    for _ in range(3):
        with planes(2) as (a, b):
            a.expect_inputs([ba])
            b.expect_inputs([ab])

            def host(me: DataPlane, out: ChannelId, peer: DataPlane) -> None:
                me.connect_outputs({out: peer.address}, 5)
                me.wait_ready(5)

            started = [
                in_thread(lambda a=a, b=b: host(a, ab, b)),
                in_thread(lambda a=a, b=b: host(b, ba, a)),
            ]
            began = time.monotonic()
            for t, errors in started:
                t.join(10)
                assert not errors, errors
            assert time.monotonic() - began < 2


def test_a_host_can_connect_to_itself() -> None:
    c = chan()
    with planes(1) as (p,):
        p.expect_inputs([c])
        p.connect_outputs({c: p.address}, 5)  # answers its own challenge while accepting
        p.wait_ready(1)
        p.send(c, Record("self", 1))
        p.flush()
        assert pump(p, [], count(1)) == [(c, Record("self", 1))]


def test_a_closed_peer_is_recorded_and_poll_keeps_working() -> None:
    c0, c1 = chan(0), chan(1)
    with planes(3) as (rx, tx0, tx1):
        link(rx, [(tx0, c0), (tx1, c1)])
        rx.block(c0)
        tx0.send(c0, Record("last", 1))
        tx0.flush()
        tx0.close()
        assert pump_for(rx, [tx1], 0.05) == []
        rx.unblock(c0)
        got = pump(rx, [tx1], lambda _: rx.closed_inputs() == [c0])
        got += rx.poll()
        assert got == [(c0, Record("last", 1))]  # what arrived before the close is kept
        tx1.send(c1, Record("still", 1))
        tx1.flush()
        assert pump(rx, [tx1], count(1)) == [(c1, Record("still", 1))]


def test_wait_ready_names_missing_channels_and_connect_retries_until_timeout() -> None:
    with planes(1) as (rx,):
        rx.expect_inputs([chan(1), chan(2)])
        with pytest.raises(TimeoutError, match=r"src\[1\]->sink, src\[2\]->sink"):
            rx.wait_ready(0.1)
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            dead = s.getsockname()
        with pytest.raises(TimeoutError, match=r"src\[0\]->sink to 127.0.0.1"):
            rx.connect_outputs({chan(0): dead}, timeout=0.2)


def test_send_on_an_unknown_channel_is_a_clear_error() -> None:
    with planes(1) as (p,):
        with pytest.raises(ValueError, match="not an output channel"):
            p.send(chan(), Record(1))
        with pytest.raises(ValueError, match="not an input channel"):
            p.block(chan())


def test_a_receiver_without_the_secret_is_refused_before_anything_is_unpickled(
    impostor: Any, unpickled: list[str]
) -> None:
    from absnb.runtime.data_plane.transport import CREDIT

    address, server = impostor(CREDIT)
    c = chan()
    with DataPlane(SECRET) as tx:
        with pytest.raises(ConnectionError, match="does not know the job secret"):
            tx.connect_outputs({c: address}, 5)
        with pytest.raises(ConnectionError, match="refused"):
            tx.send(c, Record("secret data", 1))
    server.join(5)
    assert unpickled == []
