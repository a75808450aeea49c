"""The data plane's batching, credit and spilling without sockets (absnb.runtime.data_plane.flow):
frames leave a SendQueue in the order they came, each once, never more than the credit
granted, in memory up to its limit and spilled to disk beyond it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.runtime.connections.wire import encode
from absnb.runtime.data_plane.flow import SendQueue, batch_limit


def frame(i: int, size: int = 10) -> bytes:
    return encode(1, i.to_bytes(4, "big") * size)


@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("offer"), st.integers(1, 50)),
            st.tuples(st.just("grant"), st.integers(0, 5)),
        ),
        max_size=60,
    ),
    memory=st.integers(0, 2000),
)
def test_frames_leave_in_order_once_within_the_credit(steps, memory) -> None:
    q = SendQueue(memory_bytes=memory)
    offered: list[bytes] = []
    sent: list[bytes] = []
    granted = 0
    for kind, n in steps:
        if kind == "offer":
            f = frame(len(offered), n)
            offered.append(f)
            now = q.offer(f)
            if now is not None:
                sent.append(now)
        else:
            q.grant(n)
            granted += n
            sent.extend(q.sendable())
        assert q.queued_bytes <= max(memory, 0) or q.queued_bytes == 0
        assert sent == offered[: len(sent)]  # in order, each once
        assert len(sent) <= granted
        assert len(sent) + q.waiting_frames == len(offered)
    q.grant(len(offered))
    sent.extend(q.sendable())
    assert sent == offered
    assert q.waiting_bytes == 0
    q.close()


def test_past_the_memory_limit_frames_spill_and_come_back() -> None:
    q = SendQueue(memory_bytes=100)
    frames = [frame(i) for i in range(5)]  # 45 bytes each
    assert [q.offer(f) for f in frames] == [None] * 5
    assert len(q.queue) == 2
    assert q.spill_frames == 3
    assert q.spilled_bytes == 3 * len(frames[0])
    q.grant(5)
    assert list(q.sendable()) == frames
    assert q.spill_write == 0  # the spill file is emptied once drained


def test_dropping_counts_what_was_kept() -> None:
    q = SendQueue(memory_bytes=50)
    for i in range(3):
        q.offer(frame(i))
    kept = q.waiting_bytes
    q.drop()
    assert q.dropped_bytes == kept
    assert q.waiting_frames == 0
    assert q.spill is None


def test_a_negative_grant_is_refused() -> None:
    with pytest.raises(ValueError, match="number of frames, not -1"):
        SendQueue(10).grant(-1)


@given(
    records=st.integers(1, 5000),
    size=st.integers(1, 1 << 20),
    messages=st.integers(1, 5000),
    payload=st.integers(0, 1 << 24),
)
def test_a_batch_limit_is_between_one_and_the_cap(records, size, messages, payload) -> None:
    limit = batch_limit(records, size, messages, payload)
    assert 1 <= limit <= records
    if payload and limit > 1:  # about size bytes at the last batch's bytes per message
        assert limit * payload // messages <= size + payload // messages
