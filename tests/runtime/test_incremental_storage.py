"""Incremental snapshots of keyed state in checkpoint storage: chains read back whole,
retention keeping every base a retained checkpoint needs, damaged bases refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absnb.core.ids import TaskId
from absnb.core.incremental import IncrementalState
from absnb.core.snapshot import TaskSnapshot
from absnb.jobs.paper_topology import KeyedSum
from absnb.operators.keyed_state import KeyedState
from absnb.runtime.storage.checkpoints import CheckpointStorage, CorruptCheckpointWarning
from absnb.runtime.storage.fs import CommittedCheckpointLostError, StorageError

JOB = "keyed"
TASK = TaskId("sum", 0, 1)
OP = KeyedSum(incremental=True)


class Driver:
    """One incremental task, its storage, and what its state was at each checkpoint."""

    def __init__(self, root: Path, retain: int = 2) -> None:
        self.storage = CheckpointStorage(root, retain=retain)
        self.state = OP.initial_state()
        self.truth: dict[int, dict[int, int]] = {}
        self.next_id = 1

    def update(self, pairs: list[tuple[int, int]]) -> None:
        self.state, _ = OP.process_batch(self.state, pairs)

    def checkpoint(self, *, complete: bool = True) -> IncrementalState:
        """Take, write and (unless not ``complete``) complete and confirm a checkpoint."""
        n, self.next_id = self.next_id, self.next_id + 1
        self.state = OP.snapshot_state(self.state, n)
        part = OP.copy_state(self.state)
        self.storage.write_task(JOB, TaskSnapshot(TASK, n, part))
        if complete:
            self.storage.complete(JOB, n, [TASK], fingerprint="fp", protocol="abs")
            self.truth[n] = dict(self.state)
            self.state = OP.notify_checkpoint_complete(self.state, n)
        return part

    def restored(self, committed: int | None = None) -> tuple[int, dict[int, int]]:
        snapshot = self.storage.latest(JOB, "fp", committed=committed)
        assert snapshot is not None
        return snapshot.checkpoint_id, dict(OP.copy_state(snapshot.tasks[TASK].state))


def test_snapshots_after_the_first_hold_only_the_changed_keys(tmp_path: Path) -> None:
    d = Driver(tmp_path)
    d.update([(k, 1) for k in range(100)])
    first = d.checkpoint()
    d.update([(3, 5), (7, 1), (3, 1)])
    second = d.checkpoint()
    assert (first.incremental, len(first.entries), first.size) == (False, 100, 100)
    assert second.incremental
    assert second.base == 1
    assert second.entries == {3: 7, 7: 2}
    assert (second.depth, second.chain_entries, second.size) == (1, 102, 100)
    assert d.restored() == (2, d.truth[2])


def test_a_snapshot_builds_on_the_last_confirmed_checkpoint_not_an_aborted_one(
    tmp_path: Path,
) -> None:
    d = Driver(tmp_path)
    d.update([(k, 1) for k in range(50)])
    d.checkpoint()
    d.update([(1, 1)])
    d.checkpoint(complete=False)  # aborted: never confirmed
    d.update([(2, 1)])
    third = d.checkpoint()
    assert third.base == 1
    assert third.entries == {1: 2, 2: 2}  # the aborted snapshot's change too
    assert d.restored() == (3, d.truth[3])


def test_retention_keeps_the_base_a_retained_checkpoint_needs(tmp_path: Path) -> None:
    d = Driver(tmp_path, retain=1)
    d.update([(k, 1) for k in range(1000)])
    d.checkpoint()
    for i in range(4):
        d.update([(i, 1)])
        d.checkpoint()
    # retain=1 keeps checkpoint 5, and the chain 5 -> 4 -> 3 -> 2 -> 1 it builds on
    assert d.storage.checkpoints(JOB) == [1, 2, 3, 4, 5]
    assert d.restored() == (5, d.truth[5])
    d.update([(k, 2) for k in range(1000)])  # everything changed: a full snapshot
    assert not d.checkpoint().incremental
    assert d.storage.checkpoints(JOB) == [6]  # no checkpoint needs the old chain now
    assert d.restored() == (6, d.truth[6])


def _damage(tmp_path: Path, checkpoint_id: int, how: str) -> Path:
    path = next((tmp_path / JOB / f"chk-{checkpoint_id}").glob("*.snap"))
    data = path.read_bytes()
    path.write_bytes(data[:-10] if how == "truncate" else data[:-10] + b"x" * 10)
    return path


@pytest.mark.parametrize("how", ["truncate", "corrupt"])
def test_a_damaged_base_is_refused_naming_the_file(tmp_path: Path, how: str) -> None:
    d = Driver(tmp_path, retain=3)
    d.update([(k, 1) for k in range(100)])
    d.checkpoint()
    d.update([(1, 1)])
    d.checkpoint()
    d.update([(2, 1)])
    d.checkpoint()  # 3 -> 2 -> 1
    path = _damage(tmp_path, 1, how)
    # checkpoints 3 and 2 both build on it: no checkpoint is usable
    with pytest.warns(CorruptCheckpointWarning, match=r"chk-1/sum\.snap") as caught:
        assert d.storage.latest(JOB, "fp") is None
    assert len(caught) == 3
    with pytest.raises(CommittedCheckpointLostError, match="its base, checkpoint 1") as error:
        d.storage.latest(JOB, "fp", committed=3)
    assert error.value.path == str(path)
    assert error.value.checkpoint_id == 3


def test_a_snapshot_on_a_base_that_is_not_complete_cannot_complete(tmp_path: Path) -> None:
    storage = CheckpointStorage(tmp_path)
    part = IncrementalState({1: 1}, base=4, depth=1, chain_entries=2, size=2)
    storage.write_task(JOB, TaskSnapshot(TASK, 5, part))
    with pytest.raises(StorageError, match="builds on checkpoint 4, which is not complete"):
        storage.complete(JOB, 5, [TASK], fingerprint="fp", protocol="abs")


def test_the_simulator_cannot_restore_an_increment_alone() -> None:
    part = IncrementalState({1: 1}, base=4, depth=1, chain_entries=2, size=2)
    with pytest.raises(ValueError, match="restore it through CheckpointStorage"):
        OP.copy_state(part)


def test_keyed_state_keeps_its_keys_and_clones_with_its_changes() -> None:
    state = KeyedState({1: 1, 2: 2, 3: 3})
    state.note([(1, 1)])
    clone = OP.copy_state(state)  # not taking a snapshot: a clone of a task
    assert isinstance(clone, KeyedState)
    assert clone == state
    assert clone.changed == {1: 1}
    with pytest.raises(TypeError, match="never removed"):
        del state[1]


operations = st.lists(
    st.one_of(
        st.lists(st.tuples(st.integers(0, 40), st.integers(1, 3)), max_size=12).map(
            lambda pairs: ("update", pairs)
        ),
        st.sampled_from([("checkpoint", True), ("checkpoint", False)]),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(ops=operations, retain=st.integers(1, 3))
def test_every_restore_equals_the_state_at_its_checkpoint(
    tmp_path_factory: pytest.TempPathFactory, ops: list, retain: int
) -> None:
    """Any mix of updates, completed and aborted checkpoints: the newest complete one
    restores exactly the state the task had when it took it (exactly-once needs no less),
    whatever retention removed."""
    d = Driver(tmp_path_factory.mktemp("chk"), retain=retain)
    for kind, arg in ops:
        if kind == "update":
            d.update(arg)
        else:
            d.checkpoint(complete=arg)
    if d.truth:
        newest = max(d.truth)
        assert d.restored() == (newest, d.truth[newest])
        assert len(d.storage.checkpoints(JOB)) >= min(retain, len(d.truth))


def test_noting_stays_about_the_state_size_and_gives_up_when_most_keys_changed(
    tmp_path: Path,
) -> None:
    d = Driver(tmp_path)
    d.update([(k, 1) for k in range(1000)])
    d.checkpoint()
    for _ in range(20):  # 6,000 updates of three keys
        d.update([(1, 1), (2, 1), (3, 1)] * 100)
    assert len(d.state.changed) <= len(d.state) + 4096 + 300
    assert d.checkpoint().entries.keys() == {1, 2, 3}
    d.update([(k, 1) for k in range(900)] * 6)  # most keys changed
    assert d.state.changed == {}  # noting stopped
    part = d.checkpoint()
    assert not part.incremental
    assert d.restored() == (3, d.truth[3])


def test_retention_follows_each_task_along_its_own_chain(tmp_path: Path) -> None:
    """Two tasks whose full snapshots fall in different checkpoints: checkpoint 4 needs
    task a's chain down to 3 and task b's down to 2, not checkpoint 1 (which a chain of
    a reaches only through b's checkpoint 2)."""
    storage = CheckpointStorage(tmp_path, retain=1)
    a, b = TaskId("sum", 0, 2), TaskId("sum", 1, 2)
    full = IncrementalState({1: 1}, None, 0, 1, 1)
    chains = {  # checkpoint: (task a's base, task b's base); None: a full snapshot
        1: (None, None),
        2: (1, None),
        3: (None, 2),
        4: (3, 3),
    }
    for n, bases in chains.items():
        for task, base in zip((a, b), bases, strict=True):
            part = full if base is None else IncrementalState({1: n}, base, 1, 2, 1)
            storage.write_task(JOB, TaskSnapshot(task, n, part))
        storage.complete(JOB, n, [a, b], fingerprint="fp", protocol="abs")
    assert storage.checkpoints(JOB) == [2, 3, 4]
    restored = storage.latest(JOB)
    assert restored is not None
    assert restored.tasks[a].state.entries == {1: 4}
    assert restored.tasks[b].state.entries == {1: 4}


def test_a_key_changed_under_an_unconfirmed_checkpoint_and_again_keeps_its_latest_value(
    tmp_path: Path,
) -> None:
    d = Driver(tmp_path)
    d.update([(k, 1) for k in range(100)])
    d.checkpoint()  # the base
    d.update([(1, 5), (2, 5)])
    d.checkpoint(complete=False)  # aborted: its changes stay pending
    d.update([(1, 7)])
    part = d.checkpoint()  # merges the pending changes with the new ones
    assert part.incremental
    assert part.entries == {1: 13, 2: 6}
    assert d.restored() == (3, d.truth[3])
