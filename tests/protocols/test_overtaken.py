"""What a barrier overtakes, worked out in one place (:mod:`absnb.protocols.overtaken`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    Record,
    RecordBatch,
    as_records,
)
from absnb.protocols.overtaken import not_consumed, overtaken


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
