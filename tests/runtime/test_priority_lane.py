"""The data plane's priority lane (FLIP-76): a barrier overtakes the records queued before it
at the sender (pending batch, frames waiting for credit, spilled frames) and at the receiver
(buffered frames), spends no credit, and hands out the records it overtook, in order, which
still follow it."""

from __future__ import annotations

import pytest

from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Record,
    as_records,
)
from absnb.runtime.data_plane.priority import Overtaking, received
from tests.runtime.test_transport import chan, count, link, planes, pump, pump_for, records


@pytest.mark.parametrize("memory_bytes", [64 * 1024 * 1024, 200], ids=["memory", "spilled"])
def test_a_barrier_overtakes_a_backlog_and_hands_it_out_as_overtaken(
    tmp_path, memory_bytes
) -> None:
    c = chan()
    options = {"batch_records": 5, "credits": 2, "memory_bytes": memory_bytes}
    with planes(2, spill_dir=str(tmp_path), **options) as (rx, tx):
        link(rx, [(tx, c)])
        before = records(203)  # 40 full frames (2 in flight, the rest queued), 3 unframed
        for r in before:
            tx.send(c, r)
        head = pump(rx, [tx], count(10))  # the credited frames, handed out: consumed
        rx.block(c)  # the receiver stops reading: credit runs out, the backlog stays queued
        pump_for(rx, [tx], 0.05)
        sent = tx.stats()["sent"][c]
        assert sent["queued_frames"] > 0
        if memory_bytes == 200:
            assert sent["spilled_bytes"] > 0
        rx.unblock(c)
        tx.send_priority(c, CheckpointBarrier(1))
        after = records(5, start=204)
        for r in after:
            tx.send(c, r)
        tx.flush()
        got = pump(rx, [tx], lambda got: any(type(m) is Overtaking for _, m in got))
        i = next(i for i, (_, m) in enumerate(got) if type(m) is Overtaking)
        overtaking = got[i][1]
        assert overtaking.message == CheckpointBarrier(1)
        consumed = [m for _, m in head] + [m for _, m in got[:i]]
        # The barrier overtook exactly what was sent before it and not yet handed out.
        assert as_records(overtaking.overtaken) == tuple(before[len(consumed) :])
        assert len(overtaking.overtaken) > 150
        rest = got[i + 1 :] + pump(rx, [tx], count(203 + 5 - len(consumed) - len(got[i + 1 :])))
        assert [m for _, m in rest] == before[len(consumed) :] + after  # all still follow
        assert tx.stats()["sent"][c]["priority"] == rx.stats()["received"][c]["priority"] == 1


def test_a_cancellation_marker_never_takes_the_priority_lane() -> None:
    # Flink broadcasts a CancelCheckpointMarker as a non-priority event: it travels in order
    # (protocols/overtaken.py). The sender refuses it on the lane, and a receiver takes a
    # priority frame holding one as malformed.
    c = chan()
    with planes(2) as (rx, tx):
        link(rx, [(tx, c)])
        for message in (Record("a", 1), EndOfInput(), CancelCheckpointMarker(3)):
            with pytest.raises(ValueError, match="only barriers take the priority lane"):
                tx.send_priority(c, message)
        with pytest.raises(ValueError, match="not an output channel"):
            tx.send_priority(chan(2), CheckpointBarrier(1))
    assert received((CancelCheckpointMarker(3), ()), []) is None
    assert received((CheckpointBarrier(3), ()), [[Record("a", 1)]]) == Overtaking(
        CheckpointBarrier(3), (Record("a", 1),)
    )
