"""A ``RecordBatch`` comes back from pickle (the data plane's frames, checkpoints) equal
to itself, whatever its values: a batch of words travels as one joined string."""

from __future__ import annotations

import copy
import pickle
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from absnb.core.messages import WORD_SEPARATOR, RecordBatch

VALUES = st.one_of(
    st.lists(st.text(alphabet=st.sampled_from(["a", "b", WORD_SEPARATOR, " ", "é"]))),
    st.lists(st.one_of(st.text(max_size=3), st.integers(), st.tuples(st.text(), st.integers()))),
)


class Word(str):
    """A str subclass: it must keep its type through pickle."""


@given(VALUES, st.integers(1, 10**9))
def test_a_batch_is_pickled_back_to_itself(values: list[Any], first: int) -> None:
    batch = RecordBatch(values, first)
    back = pickle.loads(pickle.dumps(batch, protocol=5))
    assert back == batch
    assert list(map(type, back.values)) == list(map(type, values))
    assert copy.deepcopy(batch) == batch


def test_words_travel_joined_and_others_as_a_list() -> None:
    words = pickle.dumps(RecordBatch(["to", "be", "or"], 1), protocol=5)
    assert b"to\x00be\x00or" in words
    for values in (["a\x00b", "c"], ["a", 1], [Word("a"), "b"]):
        data = pickle.dumps(RecordBatch(values, 1), protocol=5)
        assert b"_words_batch" not in data
        back = pickle.loads(data)
        assert back.values == values
        assert list(map(type, back.values)) == list(map(type, values))
