"""Columns: a batch's values as Arrow arrays, read back as the per-record path's values,
sliced as batches are cut into pieces, and pickled as one Arrow IPC stream."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absnb.core.columns import Columns, column
from absnb.core.messages import Record, RecordBatch
from absnb.operators.columnar import encode, group, words_of_lines


def pairs() -> Columns:
    return Columns(("key", "count"), (pa.array(["a", "b", "a"]), pa.array([1, 1, 2])))


def test_columns_read_as_the_values_of_the_per_record_path() -> None:
    assert pairs().to_pylist() == [("a", 1), ("b", 1), ("a", 2)]
    assert column(pa.array(["x", "y"])).to_pylist() == ["x", "y"]
    batch = RecordBatch(pairs(), 4)
    assert batch.records() == [Record(("a", 1), 4), Record(("b", 1), 5), Record(("a", 2), 6)]
    assert str(batch) == "records 4..6"


def test_a_columnar_batch_pickles_as_an_arrow_ipc_stream() -> None:
    batch = RecordBatch(pairs()[1:], 9)
    reduced = batch.values.__reduce__()
    assert reduced[1][0][:4] == b"\xff\xff\xff\xff"  # an Arrow IPC stream's continuation marker
    again = pickle.loads(pickle.dumps(batch))
    assert again.first == 9
    assert again.values == batch.values
    assert again.values.to_pylist() == [("b", 1), ("a", 2)]


def test_columns_are_sliced_contiguously_only() -> None:
    c = pairs()
    assert c[1:].to_pylist() == [("b", 1), ("a", 2)]
    assert len(c[:0]) == 0
    assert c.take(np.array([2, 0])).to_pylist() == [("a", 2), ("a", 1)]
    with pytest.raises(TypeError, match="contiguous"):
        c[::2]
    with pytest.raises(ValueError, match="different lengths"):
        Columns(("a", "b"), (pa.array([1]), pa.array([1, 2])))


spaces = st.sampled_from([" ", "\t", "\n", "\x0b", "\x1c", "\x85", "\xa0", "\u2003", "\u3000"])
lines = st.lists(st.text(max_size=10) | st.lists(spaces | st.text(max_size=3)).map("".join))


@settings(max_examples=200, deadline=None)
@given(lines)
def test_a_batch_of_lines_splits_as_str_split(entries: list[str]) -> None:
    words = words_of_lines(entries)
    assert words is not None
    assert words.to_pylist() == [w for e in entries for w in e.split()]


ascii_lines = st.lists(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=12))


@settings(max_examples=300, deadline=None)
@given(ascii_lines)
def test_an_ascii_batch_splits_as_str_split(entries: list[str]) -> None:
    """Every ASCII character, the ten ``str.split`` splits on among them."""
    words = words_of_lines(entries)
    assert words is not None
    assert words.to_pylist() == [w for e in entries for w in e.split()]
    assert words_of_lines([]) is not None


def test_the_split_is_the_same_every_time() -> None:
    """The batch on which Arrow's utf8_split_whitespace kept a separator on the last word
    about one time in two (a word "to " among the counts): split 300 times, it gives the
    same words every time."""
    entries = [
        " ",
        " to ",
        ' don\'t to 日本\u3000say"\u3000say" ',
        " 1 don't ",
        " to to to not\u3000to ",
    ]
    expected = [w for e in entries for w in e.split()]
    for _ in range(300):
        words = words_of_lines(entries)
        assert words is not None
        assert words.to_pylist() == expected


def test_lines_arrow_cannot_hold_are_left_to_python() -> None:
    assert words_of_lines(["a \ud800"]) is None
    assert words_of_lines([1]) is None  # type: ignore[list-item]


@given(
    st.lists(st.sampled_from("abcde"), max_size=30),
    st.dictionaries(st.sampled_from("abcde"), st.integers(0, 9)),
    st.integers(0, 3),
)
def test_running_counts_are_the_counts_so_far_in_input_order(
    keys: list[str], before: dict[str, int], cut: int
) -> None:
    codes, distinct = encode(pa.array(keys, pa.string()))
    assert distinct.to_pylist() == list(dict.fromkeys(keys))  # first appearance
    # plain keys, their dictionary encoding, and a slice of it (whose dictionary holds keys
    # that do not occur, not in order of first appearance) group alike
    encoded = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), distinct)
    for array, rows in ((pa.array(keys, pa.string()), keys), (encoded[cut:], keys[cut:])):
        groups = group(array)
        uniques = groups.distinct.to_pylist()
        assert uniques == list(dict.fromkeys(rows))
        base = np.array([before.get(k, 0) for k in uniques], np.int64)
        seen = Counter(before)
        expected = []
        for k in rows:
            seen[k] += 1
            expected.append(seen[k])
        assert groups.running_counts(base).tolist() == expected
        assert groups.sizes.tolist() == [rows.count(k) for k in uniques]
        last = groups.last_rows()
        assert [rows[i] for i in last] == uniques
        assert all(k not in rows[i + 1 :] for k, i in zip(uniques, last.tolist(), strict=True))


def test_a_subclass_changing_what_a_record_does_keeps_the_per_record_path() -> None:
    """A columnar path stands for the per-record methods of the class defining it: a
    subclass overriding ``process_batch`` (or ``act``) gets its batches as lists."""
    from typing import Any

    from absnb.experiments.paper import FinalCountSink
    from absnb.operators import KeyedCount, Map, Source
    from absnb.operators.base import columnar_path

    class Shouting(KeyedCount):
        def process_batch(self, state: Any, values: Any) -> Any:
            return super().process_batch(state, [v.upper() for v in values])

    class Stripping(Source):
        def act(self, state: None, entry: Any) -> Any:
            return super().act(state, entry.strip())

    assert columnar_path(KeyedCount(), "process_columns")
    assert columnar_path(FinalCountSink(), "process_columns")
    assert columnar_path(Source(split=str.split), "act_columns")
    assert not columnar_path(Shouting(), "process_columns")
    assert not columnar_path(Stripping(split=str.split), "act_columns")
    assert not columnar_path(Map(str), "process_columns")  # Operator's own: no path
