"""Array snapshots as storage keeps them: encoded compactly (no pickled ints), read back
equal, a truncated or damaged encoding refused saying what is wrong."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absnb.core.array_snapshot import (
    HEAD,
    INT_KEYS,
    PICKLED_KEYS,
    STR_KEYS,
    ArraySnapshot,
    ArraySnapshotError,
    decode,
    merge_array_chain,
)

KEYS = st.one_of(
    st.lists(st.integers(-(2**63), 2**63 - 1), unique=True, max_size=40),
    st.lists(st.integers(-(2**63), 2**63 - 1), unique=True, max_size=40).map(
        lambda ks: np.array(ks, dtype=np.int64)  # an IntArrayKeyedState's keys
    ),
    st.lists(st.text(max_size=8), unique=True, max_size=40),
    st.lists(  # ints past int64, tuples, mixed: pickled
        st.one_of(st.integers(), st.tuples(st.integers(0, 9), st.text(max_size=3))),
        unique=True,
        max_size=20,
    ),
)


def snapshot_of(keys: list, floats: bool, **fields: int | None) -> ArraySnapshot:
    values = np.arange(len(keys), dtype="float64" if floats else "int64") * 3 - 7
    return ArraySnapshot(keys, values, **fields)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(
    keys=KEYS,
    floats=st.booleans(),
    base=st.none() | st.integers(0, 10**6),
    depth=st.integers(0, 8),
    checkpoint=st.none() | st.integers(0, 10**6),
    slots=st.none() | st.lists(st.integers(0, 2), unique=True).map(sorted),
)
def test_an_encoded_snapshot_decodes_to_the_same_one(
    keys, floats, base, depth, checkpoint, slots
) -> None:
    values = snapshot_of([*keys, *(slots or [])], floats).values
    changed = None if slots is None else np.array(slots, dtype=np.int64)
    s = ArraySnapshot(keys, values, 3, base, depth, 9, checkpoint, changed)
    back = pickle.loads(pickle.dumps(s, protocol=5))  # how storage writes it: its encoding
    assert isinstance(back, ArraySnapshot)
    assert type(back.keys) is type(keys)
    if isinstance(keys, np.ndarray):
        assert back.keys.dtype == np.int64
        assert back.keys.tolist() == keys.tolist()
    else:
        assert list(back.keys) == keys
        assert [type(k) for k in back.keys] == [type(k) for k in keys]
    assert back.values.dtype == s.values.dtype
    assert back.values.tolist() == s.values.tolist()
    assert (back.slots is None) == (slots is None)
    assert slots is None or back.slots.tolist() == slots
    assert (back.start, back.base, back.depth, back.chain_entries, back.checkpoint_id) == (
        3,
        base,
        depth,
        9,
        checkpoint,
    )


def test_ints_and_strs_are_stored_as_arrays_not_pickles() -> None:
    n = 1000
    ints = snapshot_of(list(range(n)), False).encode()
    assert HEAD.unpack_from(ints)[3] == INT_KEYS
    assert len(ints) == HEAD.size + 8 * n + 8 * n  # the keys and the values: 8 bytes each
    words = [f"w{i}" for i in range(n)]
    strs = snapshot_of(words, False).encode()
    assert HEAD.unpack_from(strs)[3] == STR_KEYS
    assert len(strs) == HEAD.size + 8 * (n + 1) + sum(map(len, words)) + 8 * n
    assert HEAD.unpack_from(snapshot_of([(1, "a")], False).encode())[3] == PICKLED_KEYS
    assert HEAD.unpack_from(snapshot_of([True], False).encode())[3] == PICKLED_KEYS  # not 1
    assert HEAD.unpack_from(snapshot_of([2**70], False).encode())[3] == PICKLED_KEYS


@settings(max_examples=60, deadline=None)
@given(keys=KEYS, data=st.data())
def test_a_truncated_encoding_is_refused(keys, data) -> None:
    keys = list(keys)
    encoded = snapshot_of(keys, False).encode()
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(ArraySnapshotError, match="truncated"):
        decode(encoded[:cut])


@settings(max_examples=60, deadline=None)
@given(keys=KEYS.filter(lambda ks: len(ks) > 0), data=st.data())
def test_a_damaged_body_fails_its_checksum(keys, data) -> None:
    keys = list(keys)
    encoded = bytearray(snapshot_of(keys, True).encode())
    at = data.draw(st.integers(HEAD.size, len(encoded) - 1))
    encoded[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(ArraySnapshotError, match="CRC-32"):
        decode(bytes(encoded))


def test_a_damaged_header_is_named() -> None:
    encoded = snapshot_of([1, 2], False).encode()
    with pytest.raises(ArraySnapshotError, match="not an array snapshot"):
        decode(b"X" + encoded[1:])
    with pytest.raises(ArraySnapshotError, match="longer than its header says"):
        decode(encoded + b"\0")
    version = HEAD.unpack_from(encoded)
    bumped = HEAD.pack(*version[:1], 99, *version[2:]) + encoded[HEAD.size :]
    with pytest.raises(ArraySnapshotError, match="version 99"):
        decode(bumped)


def test_a_chain_merges_every_links_keys_and_the_newest_values() -> None:
    full = ArraySnapshot(["a", "b"], np.array([1, 2]), 0, None, 0, 2)
    inc = ArraySnapshot(["c"], np.array([5, 2, 9]), 2, 1, 1, 3)
    merged = merge_array_chain([full, inc], 2)
    assert merged.entries() == {"a": 5, "b": 2, "c": 9}
    assert (merged.checkpoint_id, merged.depth, merged.incremental) == (2, 1, False)
    with pytest.raises(ArraySnapshotError, match="starts with a full one"):
        merge_array_chain([inc], 2)
    gap = ArraySnapshot(["c"], np.array([5, 2, 9, 4]), 3, 1, 1, 3)
    with pytest.raises(ArraySnapshotError, match="starts at slot 3, after 2 keys"):
        merge_array_chain([full, gap], 2)
    sparse = ArraySnapshot(["c"], np.array([7, 9]), 2, 1, 1, 3, None, np.array([0]))
    assert merge_array_chain([full, sparse], 2).entries() == {"a": 7, "b": 2, "c": 9}
    outside = ArraySnapshot(["c"], np.array([7, 9]), 2, 1, 1, 3, None, np.array([2]))
    with pytest.raises(ArraySnapshotError, match="changes a slot outside 0-1"):
        merge_array_chain([full, outside], 2)
    ints = [np.array([7, 8]), np.array([9])]
    merged = merge_array_chain(
        [
            ArraySnapshot(ints[0], np.array([1, 2]), 0, None, 0, 2),
            ArraySnapshot(ints[1], inc.values, 2, 1, 1, 3),
        ],
        2,
    )
    assert merged.keys.tolist() == [7, 8, 9]
    assert merged.entries() == {7: 5, 8: 2, 9: 9}
    short = ArraySnapshot(["c"], np.array([5, 2]), 2, 1, 1, 3)
    with pytest.raises(ArraySnapshotError, match="holds 3 keys and 2 values"):
        merge_array_chain([full, short], 2)
