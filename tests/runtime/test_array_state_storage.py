"""Array-backed keyed state against the dict it replaces: the same outputs record by
record, the same contents after any mix of updates, checkpoints (completed or aborted) and
restores from chains in checkpoint storage; a damaged link refused; sizes in the
checkpoint statistics."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absnb.core.array_snapshot import ArraySnapshot
from absnb.core.columns import Columns
from absnb.core.ids import TaskId
from absnb.core.snapshot import TaskSnapshot
from absnb.jobs.paper_topology import KeyedSum, LatestCountSink
from absnb.operators.array_state import MAX_DEPTH, ArrayKeyedState, IntArrayKeyedState
from absnb.operators.library import KeyedCount
from absnb.runtime.host.snapshot_writer import SnapshotWriter
from absnb.runtime.storage.checkpoints import CheckpointStorage, CorruptCheckpointWarning
from absnb.runtime.storage.fs import CommittedCheckpointLostError

JOB = "keyed"
TASK = TaskId("sum", 0, 1)


class Driver:
    """One task with an array state beside one with a dict, fed the same batches; the
    array state's checkpoints go to storage, and what each held at a checkpoint is kept."""

    def __init__(
        self, root: Path, op: KeyedSum | KeyedCount | LatestCountSink, retain: int = 2
    ) -> None:
        self.storage = CheckpointStorage(root, retain=retain)
        self.op = op
        self.state = op.initial_state()
        self.plain: dict = {}
        self.truth: dict[int, dict] = {}
        self.next_id = 1

    def update(self, batch: list) -> None:
        reference = type(self.op)()  # the same operator on a dict
        self.plain, expected = reference.process_batch(self.plain, batch)
        if isinstance(self.op, LatestCountSink) and batch:  # the sink's columnar path
            groups, counts = zip(*batch, strict=True)
            columns = Columns(("group", "count"), (pa.array(groups), pa.array(counts)))
            taken = self.op.process_columns(self.state, columns)
            assert taken is not None
            self.state, outs = taken
        else:
            self.state, outs = self.op.process_batch(self.state, batch)
        assert outs == expected  # every record's running value, in input order
        assert dict(self.state.items()) == self.plain

    def checkpoint(self, *, complete: bool = True) -> ArraySnapshot:
        n, self.next_id = self.next_id, self.next_id + 1
        self.state = self.op.snapshot_state(self.state, n)
        part = self.op.copy_state(self.state)
        assert isinstance(part, ArraySnapshot)
        self.storage.write_task(JOB, TaskSnapshot(TASK, n, part))
        if complete:
            self.storage.complete(JOB, n, [TASK], fingerprint="fp", protocol="abs")
            self.truth[n] = dict(self.plain)
            self.state = self.op.notify_checkpoint_complete(self.state, n)
        return part

    def restore(self) -> int:
        """Restart the task from the newest complete checkpoint (both states)."""
        snapshot = self.storage.latest(JOB, "fp")
        assert snapshot is not None
        self.state = self.op.copy_state(snapshot.tasks[TASK].state)
        assert isinstance(self.state, ArrayKeyedState)
        self.plain = dict(self.truth[snapshot.checkpoint_id])
        assert dict(self.state.items()) == self.plain
        assert {type(k) for k in self.state} == {type(k) for k in self.plain}  # no np.int64
        return snapshot.checkpoint_id


def sums(keys: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(st.tuples(keys, st.integers(-5, 9)), max_size=20)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("update"), st.none()),
        st.sampled_from([("checkpoint", True), ("checkpoint", False), ("restore", None)]),
    ),
    max_size=40,
)


@settings(max_examples=80, deadline=None)
@given(
    ops=operations,
    retain=st.integers(1, 3),
    kind=st.sampled_from(("sum", "count", "latest")),
    incremental=st.booleans(),
    data=st.data(),
)
def test_the_array_state_behaves_as_the_dict_through_checkpoints_and_restores(
    tmp_path_factory: pytest.TempPathFactory, ops, retain, kind, incremental, data
) -> None:
    """Sums by int key (the Figure 5 job), counts by word (word count) or the highest count
    per group (the Figure 5 job's sink, its columnar path), with or without incremental
    snapshots: after any mix of batches, completed and aborted checkpoints and restarts from
    the newest complete one, the array state holds what the dict holds."""
    op: KeyedSum | KeyedCount | LatestCountSink
    if kind == "count":
        op = KeyedCount(array=True, incremental=incremental)
        batches = st.lists(st.text("abcdef", max_size=2), max_size=20)
    elif kind == "sum":
        op = KeyedSum(incremental=incremental, array=True)
        batches = sums(st.integers(-3, 60))
    else:
        op = LatestCountSink(incremental=incremental, array=True)
        batches = st.lists(st.tuples(st.integers(-3, 60), st.integers(1, 30)), max_size=20)
    d = Driver(tmp_path_factory.mktemp("chk"), op, retain=retain)
    for step, arg in ops:
        if step == "update":
            d.update(data.draw(batches))
        elif step == "checkpoint":
            part = d.checkpoint(complete=arg)
            assert part.depth <= MAX_DEPTH
            assert incremental or not part.incremental
        elif d.truth:
            d.restore()
    if d.truth:
        assert d.restore() == max(d.truth)


def test_increments_hold_the_new_keys_and_the_changed_values(tmp_path: Path) -> None:
    d = Driver(tmp_path, KeyedSum(incremental=True, array=True))
    d.update([(k, 1) for k in range(100)])
    first = d.checkpoint()
    d.update([(3, 5), (500, 1), (3, 1)])
    second = d.checkpoint()
    assert (first.incremental, len(first.keys), first.size) == (False, 100, 100)
    assert (second.incremental, list(second.keys), second.start, second.base) == (
        True,
        [500],
        100,
        1,
    )
    assert second.slots is not None
    assert second.slots.tolist() == [3]  # the slot of key 3, changed; then the new key's
    assert second.values.tolist() == [d.plain[3], d.plain[500]]
    d.update([(7, 1)])
    d.checkpoint(complete=False)  # aborted: the next builds on checkpoint 2 still
    d.update([(600, 2)])
    fourth = d.checkpoint()
    assert (list(fourth.keys), fourth.base, fourth.depth) == ([600], 2, 2)
    assert fourth.slots is not None
    assert fourth.slots.tolist() == [7]  # changed under the aborted checkpoint 3
    assert d.restore() == 4
    assert isinstance(d.state, IntArrayKeyedState)  # int keys in a C hash table again


def test_the_sinks_increments_hold_the_counts_raised_and_only_those(tmp_path: Path) -> None:
    """The Figure 5 job's sink keeps the highest count per group: a count no higher than
    the one held changes nothing, so its increment holds only the groups raised."""
    d = Driver(tmp_path, LatestCountSink(incremental=True, array=True))
    d.update([(g, 5) for g in range(100)])
    d.checkpoint()
    d.update([(3, 9), (4, 2), (3, 7), (5, 5), (8, 6)])  # 3 and 8 raised; 4 and 5 not
    second = d.checkpoint()
    assert second.incremental
    assert second.slots is not None
    assert second.slots.tolist() == [3, 8]
    assert second.values.tolist() == [9, 6]
    assert d.restore() == 2
    assert (d.state[3], d.state[4], d.state[8]) == (9, 5, 6)


def test_when_most_values_changed_an_increment_holds_them_all(tmp_path: Path) -> None:
    d = Driver(tmp_path, KeyedSum(incremental=True, array=True))
    d.update([(k, 1) for k in range(100)])
    d.checkpoint()
    d.update([(k, 2) for k in range(60)] + [(1000, 1)])
    part = d.checkpoint()
    assert (part.incremental, part.slots, list(part.keys), len(part.values)) == (
        True,
        None,
        [1000],
        101,
    )
    assert d.restore() == 2


def test_a_chain_longer_than_max_depth_starts_again_with_a_full_snapshot(tmp_path: Path) -> None:
    d = Driver(tmp_path, KeyedCount(array=True, incremental=True), retain=1)
    depths = []
    for i in range(2 * MAX_DEPTH + 3):
        d.update([f"w{i}", "a"])
        depths.append(d.checkpoint().depth)
    assert depths[: MAX_DEPTH + 2] == [*range(MAX_DEPTH + 1), 0]
    assert d.restore() == 2 * MAX_DEPTH + 3
    # retention kept only what the newest needs: its chain down to its full snapshot
    assert len(d.storage.checkpoints(JOB)) == depths[-1] + 1


@pytest.mark.parametrize("how", ["truncate", "corrupt"])
def test_a_damaged_link_is_refused_naming_the_file(tmp_path: Path, how: str) -> None:
    d = Driver(tmp_path, KeyedSum(incremental=True, array=True), retain=3)
    d.update([(k, 1) for k in range(100)])
    d.checkpoint()
    d.update([(1000, 1)])
    d.checkpoint()
    d.update([(2000, 1)])
    d.checkpoint()  # 3 -> 2 -> 1
    path = next((tmp_path / JOB / "chk-1").glob("*.snap"))
    data = path.read_bytes()
    path.write_bytes(data[:-10] if how == "truncate" else data[:-10] + b"x" * 10)
    with pytest.warns(CorruptCheckpointWarning, match=r"chk-1/sum\.snap") as caught:
        assert d.storage.latest(JOB, "fp") is None
    assert len(caught) == 3
    with pytest.raises(CommittedCheckpointLostError, match="its base, checkpoint 1") as error:
        d.storage.latest(JOB, "fp", committed=3)
    assert error.value.path == str(path)


def test_the_statistics_give_each_increments_size_and_the_full_size(tmp_path: Path) -> None:
    """An increment writes the new keys and the changed values; its full size is what a
    full snapshot would write: every key, every value."""
    storage = CheckpointStorage(tmp_path)
    writer = SnapshotWriter(storage, JOB)
    state: ArrayKeyedState = ArrayKeyedState()
    state.accumulate(list(range(10_000)))
    done = []
    for n in (1, 2, 3):
        writer.submit(TaskSnapshot(TASK, n, state.take(n)), 0.0)
        deadline = time.monotonic() + 10
        while len(done) < n:
            assert time.monotonic() < deadline
            done += writer.written(0.05)
        storage.complete(JOB, n, [TASK], fingerprint="fp", protocol="abs")
        state.confirm(n)
        state.accumulate([10_000 + n])
    writer.close()
    full, second, third = (w.stats for w in done)
    assert (full["incremental"], second["incremental"], third["incremental"]) == (False, True, True)
    assert full["full_state_size"] == full["state_size"] > 16 * 10_000
    assert second["state_entries"] == 1
    assert second["full_state_entries"] == 10_001
    assert second["state_size"] < 500  # the new key and its value
    # a full snapshot then: one key and one value more than the first (give or take the
    # pickle's framing, shorter around a short payload)
    assert abs(second["full_state_size"] - (full["state_size"] + 16)) <= 24
    assert abs(third["full_state_size"] - (full["state_size"] + 32)) <= 24


def test_an_array_state_shows_as_the_dict_it_holds_and_never_loses_a_key() -> None:
    state: ArrayKeyedState = ArrayKeyedState({"b": 2, "a": 1})
    assert repr(state) == repr({"b": 2, "a": 1})
    assert state == {"a": 1, "b": 2}
    state["c"] = 5
    assert (state["c"], state.get("z"), len(state), list(state)) == (5, None, 3, ["b", "a", "c"])
    clone = KeyedCount(array=True).copy_state(state)  # not taking a snapshot: a clone
    assert isinstance(clone, ArrayKeyedState)
    clone["a"] = 9
    assert state["a"] == 1
    with pytest.raises(TypeError, match="never removed"):
        del state["a"]
    for _ in range(5):  # grows by doubling past the first 16 slots
        state.accumulate([f"k{i}" for i in range(20)], list(range(20)))
    assert state["k19"] == 5 * 19


def test_an_int_keyed_state_is_a_mapping_of_python_ints_and_clones_apart() -> None:
    state: IntArrayKeyedState = IntArrayKeyedState({5: 1, -2: 3})
    state[2**40] = 7
    assert state == {5: 1, -2: 3, 2**40: 7}
    assert repr(state) == repr({5: 1, -2: 3, 2**40: 7})
    assert (5 in state, "5" in state, state.get(6, 0), list(state)) == (
        True,
        False,
        0,
        [5, -2, 2**40],
    )
    assert all(type(k) is int for k in state)
    clone = KeyedSum(array=True).copy_state(state)
    assert isinstance(clone, IntArrayKeyedState)
    clone.accumulate([5, 99], [10, 1])
    assert (state[5], 99 in state, clone[5], clone[99]) == (1, False, 11, 1)
    with pytest.raises(KeyError):
        state[6]


def test_the_simulator_cannot_restore_an_increment_alone() -> None:
    part = ArraySnapshot([5], ArrayKeyedState({1: 1, 5: 1}).values_array.copy(), 1, 4, 1, 2)
    with pytest.raises(ValueError, match="restore it through CheckpointStorage"):
        KeyedSum(incremental=True, array=True).copy_state(part)
