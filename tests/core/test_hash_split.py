"""``Hash.split`` (a batch at once, cached picks, C loops) sends every record where
``Hash.targets`` sends it alone, in order, for every parallelism and kind of key; both
agree with ``stable_hash``, from the cache or not."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from absnb.core import graph
from absnb.core.graph import Hash, identity, stable_hash

KEYS = st.one_of(
    st.text(max_size=4),
    st.integers(-(2**40), 2**40),
    st.booleans(),
    st.tuples(st.text(max_size=2), st.integers(0, 9)),
    st.lists(st.integers(0, 3), max_size=2),  # unhashable: no cache
)


def first(pair: Any) -> Any:
    """The key of a pair: its first item."""
    return pair[0]


def _one_by_one(h: Hash, values: list[Any], n: int) -> list[list[Any]]:
    buckets: list[list[Any]] = [[] for _ in range(n)]
    for v in values:
        (i,) = h.targets(v, 0, n, 0)
        buckets[i].append(v)
    return buckets


@given(st.lists(KEYS, max_size=40), st.sampled_from([1, 2, 3, 8, 9, 31]))
def test_split_is_targets_of_each_record(values: list[Any], n: int) -> None:
    h = Hash(identity)
    assert h.split(values, 0, n, 0) == _one_by_one(h, values, n)
    assert h.split(values, 0, n, 0) == _one_by_one(h, values, n)  # from the cache now


@given(st.lists(st.tuples(KEYS, st.integers()), max_size=40), st.sampled_from([2, 5, 12]))
def test_split_with_a_key_function(values: list[Any], n: int) -> None:
    h = Hash(first)
    assert h.split(values, 0, n, 0) == _one_by_one(h, values, n)


def test_equal_keys_of_other_types_are_not_confused_by_the_cache() -> None:
    """1, 1.0 and True are equal but hash apart (repr); only str keys are cached."""
    h = Hash(identity)
    for values in (["1", 1, 1.0, True], [True, 1.0, 1, "1"]):
        for n in (2, 3, 16):
            assert h.split(values, 0, n, 0) == _one_by_one(h, values, n)


@given(st.lists(KEYS, max_size=40), st.sampled_from([1, 2, 3, 7]))
def test_targets_is_the_stable_hash_cached_or_not(values: list[Any], n: int) -> None:
    h = Hash(identity)
    expected = [(stable_hash(v) % n,) for v in values]
    assert [h.targets(v, 0, n, 0) for v in values] == expected
    assert [h.targets(v, 0, n, 0) for v in values] == expected  # from the cache now


def test_a_full_cache_is_emptied_and_refilled(monkeypatch: Any) -> None:
    monkeypatch.setattr(graph, "_SUBTASKS_MAX", 3)
    monkeypatch.setattr(graph, "_SUBTASKS", {})
    words = [f"w{i}" for i in range(10)]
    for _ in range(2):
        assert [graph.subtask(w, 5) for w in words] == [stable_hash(w) % 5 for w in words]
        assert len(graph._SUBTASKS[5]) <= 3
