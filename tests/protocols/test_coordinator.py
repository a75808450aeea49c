"""The checkpoint coordinator: trigger, acknowledge, complete, subsume, abort."""

from __future__ import annotations

import pytest

from absnb import CheckpointCoordinator, TaskId, TaskSnapshot
from absnb.core.errors import ProtocolError

TASKS = (TaskId("src"), TaskId("op", 0, 2), TaskId("op", 1, 2))


def coordinator(**kwargs) -> CheckpointCoordinator:
    return CheckpointCoordinator(TASKS, "job", "fp", "abs", **kwargs)


def ack(c: CheckpointCoordinator, n: int, task: TaskId, now: float = 0):
    """The checkpoint the acknowledgement completed (None: it completed none)."""
    return c.acknowledge(TaskSnapshot(task, n, state=f"{task}@{n}"), now).completed


def ack_all(c: CheckpointCoordinator, n: int, now: float = 0):
    results = [ack(c, n, t, now) for t in TASKS]
    assert results[:-1] == [None] * (len(TASKS) - 1)
    return results[-1]


def test_trigger_ids_grow_by_one() -> None:
    c = coordinator(max_concurrent=None)
    assert [c.trigger(t) for t in (3, 5, 9)] == [1, 2, 3]
    assert sorted(c.pending) == [1, 2, 3]
    assert c.pending[2].triggered_at == 5


def test_ids_are_never_reused_after_an_abort() -> None:
    c = coordinator()
    assert c.trigger(0) == 1
    assert c.abort_all() == [1]
    assert c.trigger(1) == 2


def test_is_due_after_more_than_the_interval() -> None:
    c = coordinator(interval=5)
    assert not c.is_due(5)  # exactly the interval since the start (time 0): not yet
    assert c.is_due(6)
    assert c.trigger(6) == 1
    # Pending, and one at a time: not due however long it takes.
    assert not c.is_due(100)
    assert ack_all(c, 1, now=8) is not None
    assert not c.is_due(11)
    assert c.is_due(12)


def test_is_due_waits_min_pause_after_a_completion() -> None:
    c = coordinator(interval=5, min_pause=10)
    c.trigger(6)
    ack_all(c, 1, now=8)
    assert not c.is_due(12)  # interval has passed, the pause has not
    assert not c.is_due(18)  # exactly min_pause: not yet
    assert c.is_due(19)


def test_no_interval_is_never_due() -> None:
    c = coordinator(interval=None)
    assert c.can_trigger()
    assert not c.is_due(10**9)


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_max_concurrent(limit: int) -> None:
    c = coordinator(max_concurrent=limit, interval=0)
    for i in range(limit):
        assert c.can_trigger()
        assert c.is_due(i + 1)
        c.trigger(i + 1)
    assert not c.can_trigger()
    assert not c.is_due(1000)
    c.abort_all()
    assert c.can_trigger()


def test_unlimited_concurrency() -> None:
    c = coordinator(max_concurrent=None)
    for i in range(10):
        c.trigger(i)
    assert c.can_trigger()


def test_completes_only_when_every_task_acknowledged() -> None:
    c = coordinator()
    c.trigger(2)
    assert ack(c, 1, TASKS[2], now=3) is None
    assert ack(c, 1, TASKS[0], now=4) is None
    assert ack(c, 1, TASKS[0], now=5) is None  # twice from one task still counts once
    assert c.completed == []
    assert 1 in c.pending
    done = ack(c, 1, TASKS[1], now=7)
    assert done is not None
    assert done.checkpoint_id == 1
    assert (done.triggered_at, done.completed_at) == (2, 7)
    snap = done.snapshot
    assert (snap.job, snap.fingerprint, snap.protocol) == ("job", "fp", "abs")
    assert list(snap.tasks) == list(TASKS)
    assert snap.task_states == {t: f"{t}@1" for t in TASKS}
    assert c.pending == {}
    assert c.latest() is done
    assert c.last_completed == 7


def test_acknowledgement_of_unknown_checkpoint_is_ignored() -> None:
    c = coordinator()
    c.trigger(0)
    assert ack(c, 2, TASKS[0]) is None
    assert ack(c, 0, TASKS[0]) is None
    assert list(c.pending[1].acknowledged) == []


def test_completion_subsumes_older_pending_checkpoints() -> None:
    c = coordinator(max_concurrent=None)
    c.trigger(0)
    c.trigger(1)
    c.trigger(2)
    ack(c, 1, TASKS[0])  # 1 is part-way
    done = ack_all(c, 2)
    assert done is not None
    assert done.checkpoint_id == 2
    assert c.aborted == [1]
    assert sorted(c.pending) == [3]  # newer ones stay pending
    # Late parts of the subsumed checkpoint are ignored.
    assert ack(c, 1, TASKS[1]) is None
    assert ack(c, 1, TASKS[2]) is None
    assert [x.checkpoint_id for x in c.completed] == [2]
    assert ack_all(c, 3).checkpoint_id == 3
    assert c.latest().checkpoint_id == 3
    assert c.aborted == [1]


def test_acknowledge_returns_what_it_subsumed() -> None:
    """The caller learns the subsumed checkpoints from the answer, not by diffing lists."""
    c = coordinator(max_concurrent=None)
    for now in (0, 1, 2, 3):
        c.trigger(now)
    for t in TASKS[:-1]:
        assert c.acknowledge(TaskSnapshot(t, 3, state=None), 4).subsumed == ()
    decided = c.acknowledge(TaskSnapshot(TASKS[-1], 3, state=None), 5)
    assert decided.completed is not None
    assert decided.completed.checkpoint_id == 3
    assert decided.subsumed == (1, 2)
    assert sorted(c.pending) == [4]


def test_a_failed_store_uncompletes_the_checkpoint() -> None:
    c = coordinator()
    c.trigger(0)
    first = ack_all(c, 1)
    c.trigger(1)
    ack_all(c, 2)
    c.store_failed(2)
    assert [x.checkpoint_id for x in c.completed] == [1]
    assert c.latest() is first  # recovery restores the last durable checkpoint
    assert c.aborted == [2]
    with pytest.raises(ProtocolError, match="neither fully acknowledged nor completed"):
        c.store_failed(3)


def test_a_fully_acknowledged_checkpoint_completes_only_when_told() -> None:
    c = coordinator(max_concurrent=None, interval=1, min_pause=2)
    c.trigger(0)
    c.trigger(1)
    with pytest.raises(ProtocolError, match="not fully acknowledged"):
        c.complete(2, 3)
    ready = [c.acknowledge_task(TaskSnapshot(t, 2, state=None), 3) for t in TASKS]
    assert ready == [False] * (len(TASKS) - 1) + [True]
    # fully acknowledged but not durable yet: still pending, nothing subsumed or completed
    assert sorted(c.pending) == [1, 2]
    assert c.latest() is None
    assert c.last_completed is None
    decided = c.complete(2, 3.5)
    assert decided.completed is not None
    assert decided.completed.checkpoint_id == 2
    assert decided.subsumed == (1,)
    assert c.last_completed == 3.5  # the min pause counts from the durable completion
    assert not c.is_due(5.5)
    assert c.is_due(5.6)


def test_a_failed_store_of_a_fully_acknowledged_checkpoint_aborts_it() -> None:
    c = coordinator()
    c.trigger(0)
    assert [c.acknowledge_task(TaskSnapshot(t, 1, state=None), 1) for t in TASKS][-1]
    c.store_failed(1)
    assert c.pending == {}
    assert c.completed == []
    assert c.aborted == [1]
    with pytest.raises(ProtocolError, match="not fully acknowledged"):
        c.complete(1, 2)


def test_abort_all() -> None:
    c = coordinator(max_concurrent=None)
    for t in range(3):
        c.trigger(t)
    ack(c, 2, TASKS[0])
    assert c.abort_all() == [1, 2, 3]
    assert c.pending == {}
    assert c.aborted == [1, 2, 3]
    for t in TASKS:
        assert ack(c, 2, t) is None
    assert c.completed == []
    assert c.abort_all() == []


def test_latest() -> None:
    c = coordinator(max_concurrent=None)
    assert c.latest() is None
    c.trigger(0)
    assert c.latest() is None
    first = ack_all(c, 1)
    assert c.latest() is first
    c.trigger(1)
    c.abort_all()
    assert c.latest() is first  # an aborted checkpoint never becomes the latest


def test_clone_is_independent() -> None:
    c = coordinator(max_concurrent=None, interval=3)
    c.trigger(4)
    ack(c, 1, TASKS[0])
    twin = c.clone()
    assert twin.key() == c.key()
    # Acknowledge, trigger and complete in the twin; the original does not move.
    ack(twin, 1, TASKS[1])
    assert twin.trigger(5) == 2
    assert ack(twin, 1, TASKS[2]) is not None
    assert list(c.pending) == [1]
    assert list(c.pending[1].acknowledged) == [TASKS[0]]
    assert c.completed == []
    assert c.next_id == 2
    assert c.last_trigger == 4
    assert twin.key() != c.key()
    # And the other way round.
    c.abort_all()
    assert c.aborted == [1]
    assert twin.aborted == []
    assert list(twin.pending) == [2]


def test_acknowledgement_from_a_stranger_is_refused() -> None:
    from absnb.core.errors import ProtocolError
    from absnb.core.ids import TaskId
    from absnb.core.snapshot import TaskSnapshot
    from absnb.protocols.coordinator import CheckpointCoordinator

    a, b = TaskId("a"), TaskId("b")
    coordinator = CheckpointCoordinator((a,), "job", "fp", "abs")
    n = coordinator.trigger(0)
    with pytest.raises(ProtocolError, match="not a task of job"):
        coordinator.acknowledge(TaskSnapshot(b, n, state=None), 1)
    assert coordinator.pending[n].acknowledged == {}


def test_for_graph_refuses_a_max_concurrent_word_naming_it() -> None:
    import absnb
    from absnb.core.errors import ProtocolSettingError
    from absnb.protocols import get_protocol

    graph = absnb.word_count().graph
    with pytest.raises(ProtocolSettingError, match="'protocol' for the protocol's own, not 'two'"):
        CheckpointCoordinator.for_graph(graph, get_protocol("abs", graph), max_concurrent="two")
    with pytest.raises(ProtocolSettingError, match="'protocol' for the protocol's own, not 'two'"):
        absnb.World(absnb.word_count(), "abs", max_concurrent="two")
    own = CheckpointCoordinator.for_graph(graph, get_protocol("abs", graph))
    assert own.max_concurrent == get_protocol("abs", graph).max_concurrent


def _history(c: CheckpointCoordinator) -> tuple[object, ...]:
    return (
        [d.checkpoint_id for d in c.completed],
        list(c.aborted),
        list(c.declined),
        list(c.expired),
    )


def test_a_clone_shares_no_history_change() -> None:
    """A clone shares the completed, aborted, declined and expired lists: every change the
    original makes afterwards (each kind of write) leaves the clone's as they were."""
    c = coordinator(max_concurrent=None, timeout=5)
    clones = []

    def step(change) -> None:
        twin = c.clone()
        clones.append((twin, _history(twin)))
        change()

    step(lambda: c.trigger(0))  # 1
    step(lambda: c.trigger(1))  # 2
    step(lambda: ack_all(c, 2, 2))  # completes 2, subsumes 1
    step(lambda: c.trigger(3))  # 3
    step(lambda: c.decline(3, TASKS[1], "restoring"))
    step(lambda: c.trigger(4))  # 4
    step(lambda: c.expire(10))
    step(lambda: c.trigger(11))  # 5
    step(lambda: [c.acknowledge_task(TaskSnapshot(t, 5, state=0), 11) for t in TASKS])
    step(lambda: c.store_failed(5))  # fully acknowledged, not completed
    step(lambda: c.store_failed(2))  # completed
    step(lambda: c.trigger(12))  # 6
    step(c.abort_all)
    assert _history(c) == ([], [1, 3, 4, 5, 2, 6], [(3, TASKS[1], "restoring")], [4])
    for twin, then in clones:
        assert _history(twin) == then


def test_tolerable_failed_checkpoints_counts_failures_in_a_row() -> None:
    from absnb.core.errors import ProtocolSettingError

    c = CheckpointCoordinator((TaskId("a"),), "job", "fp", "abs", tolerable_failed_checkpoints=1)
    assert not c.failed(1)
    assert c.failed(2)  # the second in a row is one more than tolerated
    unlimited = CheckpointCoordinator((TaskId("a"),), "job", "fp", "abs")
    assert not any(unlimited.failed(n) for n in range(1, 50))
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ProtocolSettingError, match="tolerable_failed_checkpoints"):
            CheckpointCoordinator(
                (TaskId("a"),), "j", "fp", "abs", tolerable_failed_checkpoints=bad
            )
