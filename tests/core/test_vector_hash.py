"""The vectorised hash is ``stable_hash`` exactly, so that a key reaches the same subtask
whether its batch is routed as columns or record by record."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absnb.core import vector_hash
from absnb.core.columns import column
from absnb.core.graph import Hash, identity, stable_hash
from absnb.core.vector_hash import cached_hashes, stable_hashes, subtasks, subtasks_of_words
from absnb.routing import by_key

# printable ASCII with quotes and backslashes, control characters, non-ASCII of every plane
text = st.text(
    alphabet=st.one_of(
        st.sampled_from("'\"\\ \t\nab"),
        st.characters(codec="utf-8"),
        st.characters(max_codepoint=0x7F),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(text, max_size=40), st.integers(0, 5))
def test_string_hashes_are_stable_hash(words: list[str], cut: int) -> None:
    array = pa.array(words, pa.string())
    assert stable_hashes(array).tolist() == [stable_hash(w) for w in words]
    sliced = array.slice(min(cut, len(words)))  # an array that starts inside its buffers
    assert stable_hashes(sliced).tolist() == [stable_hash(w) for w in sliced.to_pylist()]
    assert stable_hashes(array.cast(pa.large_string())).tolist() == [stable_hash(w) for w in words]


@pytest.mark.parametrize(
    "words",
    [
        ["0\x1f", ""],  # found by the test above: a trailing empty key cut the run short
        ["a'", "", ""],  # its single quote must still pick double quotes
        ["a\"'", ""],  # both quotes: escaped by repr
        ["", "b\\", "", "c", ""],
    ],
)
def test_an_empty_key_does_not_hide_what_its_neighbour_holds(words: list[str]) -> None:
    array = pa.array(words, pa.string())
    assert stable_hashes(array).tolist() == [stable_hash(w) for w in words]


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=30))
def test_int_hashes_are_stable_hash(keys: list[int]) -> None:
    assert stable_hashes(pa.array(keys, pa.int64())).tolist() == [stable_hash(k) for k in keys]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(["to", "be", "don't", "日本", "a\\b", ""]) | text, max_size=40),
    st.integers(1, 9),
)
def test_a_column_goes_where_its_records_go(words: list[str], n: int) -> None:
    """The subtasks of a column are those ``Hash.split`` sends each record to."""
    array = pa.array(words, pa.string())
    expected = Hash(identity).split(words, 0, n, 0)
    for picks in (subtasks(array, n), subtasks_of_words(array, n)):
        assert [
            [w for w, i in zip(words, picks.tolist(), strict=True) if i == s] for s in range(n)
        ] == expected


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(["to", "be", "don't", "日本", "a\\b", ""]) | text, max_size=40),
    st.integers(1, 5),
)
def test_a_batch_split_by_key_goes_where_its_records_go(words: list[str], n: int) -> None:
    """Each part of :func:`by_key` holds the records ``Hash.split`` sends its subtask, as a
    dictionary array of its own distinct keys in order of first appearance."""
    parts = by_key(column(pa.array(words, pa.string())), n)
    expected = Hash(identity).split(words, 0, n, 0)
    assert [p.to_pylist() for p in parts] == expected
    for part, rows in zip(parts, expected, strict=True):
        if rows:
            assert part.arrays[0].dictionary.to_pylist() == list(dict.fromkeys(rows))


def test_the_hash_cache_is_stable_hash_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_hash, "CACHED", 4)
    monkeypatch.setattr(vector_hash, "_hashes", {})
    for words in (["a", "b"], ["b", "c", "d"], [f"w{i}" for i in range(40)], ["a"]):
        array = pa.array(words)
        assert cached_hashes(array).tolist() == [stable_hash(w) for w in words]
        assert len(vector_hash._hashes) <= 4


def test_the_quoting_repr_does_is_followed() -> None:
    """``repr`` quotes with ' unless the str holds ' and no "; escapes \\ and both quotes."""
    words = ["don't", 'say "hi"', "both ' and \"", "back\\slash", "", "tab\t", "é", "\x7f"]
    assert stable_hashes(pa.array(words)).tolist() == [stable_hash(w) for w in words]
