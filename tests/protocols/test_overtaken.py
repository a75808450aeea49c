"""What a barrier overtakes, worked out in one place (:mod:`absnb.protocols.overtaken`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    Record,
    RecordBatch,
    as_records,
)
from absnb.protocols.overtaken import not_consumed, overtaken, overtaking_position, priority_event


def test_only_records_are_overtaken_in_their_order() -> None:
    queued = [Record("a", 1), CancelCheckpointMarker(1), RecordBatch(("b", "c"), 2)]
    queued += [CheckpointBarrier(1), Record("d", 4)]
    assert overtaken(queued) == (Record("a", 1), RecordBatch(("b", "c"), 2), Record("d", 4))


@given(st.lists(st.integers(1, 4), max_size=6), st.integers(0, 25))
def test_not_consumed_is_exactly_the_records_after_the_last_one_consumed(sizes, last) -> None:
    records: list[Record | RecordBatch] = []
    seq = 1
    for n in sizes:  # single records and batches, numbered on from 1
        records.append(Record(seq, seq) if n == 1 else RecordBatch(tuple(range(seq, seq + n)), seq))
        seq += n
    kept = not_consumed(tuple(records), last)
    assert [r.seq for r in as_records(kept)] == list(range(last + 1, seq))
    assert [r.value for r in as_records(kept)] == list(range(last + 1, seq))


def test_a_cancellation_marker_is_never_a_priority_event() -> None:
    # Flink: broadcastEvent(barrier, options.isUnalignedCheckpoint()) for a barrier,
    # broadcastEvent(marker) = broadcastEvent(marker, false) for a CancelCheckpointMarker.
    for overtake in (True, False):
        assert not priority_event(CancelCheckpointMarker(1), overtake)
        assert not priority_event(Record("a", 1), overtake)
        assert not priority_event(EndOfInput(), overtake)
        assert not priority_event(Marker(1), overtake)
    assert priority_event(CheckpointBarrier(1), True)
    assert not priority_event(CheckpointBarrier(1), False)


_QUEUED = st.lists(
    st.one_of(
        st.builds(Record, st.just("r"), st.integers(1, 9)),
        st.builds(CancelCheckpointMarker, st.integers(1, 3)),
        st.builds(CheckpointBarrier, st.integers(1, 3)),
        st.just(EndOfInput()),
    ),
    max_size=8,
)


@given(_QUEUED, st.booleans(), st.frozensets(st.integers(1, 3)))
def test_the_overtaking_barrier_is_the_first_due_before_the_end(queued, overtake, overdue):
    # What a delivery takes ahead: the first barrier before the channel's end that is a
    # priority event (not at the head, where it overtakes nothing) or of an overdue
    # checkpoint (even at the head); never a cancellation marker.
    end = next((i for i, m in enumerate(queued) if type(m) is EndOfInput), len(queued))
    due = [
        i
        for i, m in enumerate(queued[:end])
        if type(m) is CheckpointBarrier and (overtake or m.checkpoint_id in overdue)
    ]
    i = overtaking_position(queued, overtake, overdue)
    if not due or (due[0] == 0 and queued[0].checkpoint_id not in overdue):
        assert i is None
    else:
        assert i == due[0]
        assert type(queued[i]) is CheckpointBarrier
