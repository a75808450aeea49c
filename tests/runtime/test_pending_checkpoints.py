"""The coordinator server's checkpoint bookkeeping, without sockets: triggers by host,
completion only after the durable write, aborts told to every host."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.core.ids import TaskId
from absnb.protocols.coordinator import CheckpointCoordinator
from absnb.runtime.control_plane.messages import Aborted, Ack, Notify, Trigger
from absnb.runtime.control_plane.pending import Event, PendingCheckpoints

SRC0, SRC1 = TaskId("src", 0, 2), TaskId("src", 1, 2)
SINK = TaskId("sink")
TASKS = (SRC0, SRC1, SINK)
TASK_HOST = {SRC0: 1, SRC1: 0, SINK: 0}


class Hosts:
    """What was sent: to every host (``None``) or to one host by id."""

    def __init__(self) -> None:
        self.sent: list[tuple[int | None, Any]] = []

    def broadcast(self, message: Any) -> None:
        self.sent.append((None, message))

    def send(self, host: int, message: Any) -> None:
        self.sent.append((host, message))


def pending(on_complete: Any = None) -> tuple[PendingCheckpoints, Hosts, list[Event]]:
    coordinator = CheckpointCoordinator(TASKS, "job", "fp", "abs", interval=1.0)
    hosts, events = Hosts(), []
    p = PendingCheckpoints(
        coordinator, (SRC0, SRC1), on_complete, lambda: 5.0, events, hosts.broadcast, hosts.send
    )
    return p, hosts, events


def ack(task: TaskId, n: int, declined: str = "") -> Ack:
    return Ack(task, n, f"key-{task}", state_bytes=1, alignment_s=0.0, declined=declined)


def test_a_trigger_goes_to_each_initiator_host_once_in_host_order() -> None:
    p, hosts, events = pending()
    p.trigger(1.0, TASK_HOST, attempt=3)
    assert hosts.sent == [(0, Trigger(1, (SRC1,))), (1, Trigger(1, (SRC0,)))]
    assert events == [(1.0, "triggered", {"checkpoint_id": 1, "attempt": 3})]


def test_initiators_must_be_tasks_of_the_job() -> None:
    coordinator = CheckpointCoordinator(TASKS, "job", "fp", "abs")
    with pytest.raises(ValueError, match="not tasks of job 'job'"):
        PendingCheckpoints(coordinator, (TaskId("x"),), None, float, [], print, print)


@given(st.permutations(TASKS))
def test_the_last_ack_makes_it_durable_then_notifies(order: list[TaskId]) -> None:
    written: list[tuple[int, list[TaskId]]] = []
    p, hosts, events = pending(lambda n, acks: written.append((n, list(acks))))
    p.trigger(1.0, TASK_HOST, attempt=0)
    for i, task in enumerate(order):
        assert not written  # nothing durable before every task acknowledged
        p.acknowledge(ack(task, 1))
        assert (i == len(TASKS) - 1) == bool(written)
    assert written == [(1, list(TASKS))]  # the acks in the coordinator's task order
    assert hosts.sent[-1] == (None, Notify(1))
    assert [kind for _, kind, _ in events][-1] == "completed"
    assert 1 not in p.coordinator.pending
    assert [c.checkpoint_id for c in p.coordinator.completed] == [1]


def test_a_failed_durable_write_aborts_instead_of_completing() -> None:
    def fail(n: int, acks: dict[TaskId, Ack]) -> None:
        raise OSError("disk full")

    p, hosts, events = pending(fail)
    p.trigger(1.0, TASK_HOST, attempt=0)
    for task in TASKS:
        p.acknowledge(ack(task, 1))
    assert hosts.sent[-1] == (None, Aborted(1))
    assert Notify(1) not in [m for _, m in hosts.sent]
    assert events[-1][1] == "aborted"
    assert "disk full" in events[-1][2]["reason"]
    assert [c.checkpoint_id for c in p.coordinator.completed] == []


def test_a_decline_aborts_and_later_acks_are_ignored() -> None:
    written: list[int] = []
    p, hosts, events = pending(lambda n, acks: written.append(n))
    p.trigger(1.0, TASK_HOST, attempt=0)
    p.acknowledge(ack(SRC0, 1, declined="no space"))
    assert hosts.sent[-1] == (None, Aborted(1))
    for task in (SRC1, SINK):
        p.acknowledge(ack(task, 1))
    assert not written
    assert "acknowledged" not in [kind for _, kind, _ in events]


def test_abort_all_without_telling_hosts_only_records_events() -> None:
    p, hosts, events = pending()
    p.trigger(1.0, TASK_HOST, attempt=0)
    sent = list(hosts.sent)
    assert p.abort_all("new attempt", tell_hosts=False) == [1]
    assert hosts.sent == sent
    assert events[-1] == (5.0, "aborted", {"checkpoint_id": 1, "reason": "new attempt"})


def tolerating(limit: int | None) -> tuple[PendingCheckpoints, Hosts, list[Event], list[Any]]:
    """Pending checkpoints whose coordinator tolerates ``limit`` failed checkpoints in a row;
    the last list gets the discarded checkpoints' ids and the stop's error."""
    coordinator = CheckpointCoordinator(
        TASKS, "job", "fp", "abs", interval=1.0, tolerable_failed_checkpoints=limit
    )
    hosts, events, calls = Hosts(), [], []
    p = PendingCheckpoints(
        coordinator,
        (SRC0, SRC1),
        None,
        lambda: 5.0,
        events,
        hosts.broadcast,
        hosts.send,
        on_failed=calls.append,
        stop=calls.append,
    )
    return p, hosts, events, calls


def failed_write(task: TaskId, n: int) -> Ack:
    reason = f"could not write the snapshot of task {task} for checkpoint {n}: No space left"
    return Ack(task, n, "", 0, 0.0, declined=reason, write_failed=True)


def test_a_failed_write_aborts_is_discarded_and_counted_once() -> None:
    p, hosts, events, calls = tolerating(1)
    p.trigger(1.0, TASK_HOST, attempt=0)
    p.acknowledge(failed_write(SRC0, 1))
    p.acknowledge(failed_write(SINK, 1))  # the same checkpoint: counted once
    assert hosts.sent[-1] == (None, Aborted(1))
    assert calls == [1]  # discarded; not stopped
    assert p.coordinator.failed_in_a_row == 1
    assert p.stopped is None
    (aborted,) = [d for _, kind, d in events if kind == "aborted"]
    assert "No space left" in aborted["reason"]
    assert "declined by src[0]" in aborted["reason"]


def test_a_completed_checkpoint_starts_the_count_again() -> None:
    p, _hosts, _events, calls = tolerating(1)
    for n in (1, 3):
        p.trigger(1.0, TASK_HOST, attempt=0)
        p.acknowledge(failed_write(SRC1, n))
        p.trigger(1.0, TASK_HOST, attempt=0)
        for task in TASKS:
            p.acknowledge(ack(task, n + 1))
    assert p.coordinator.failed_checkpoints == [1, 3]
    assert [c.checkpoint_id for c in p.coordinator.completed] == [2, 4]
    assert p.stopped is None
    assert calls == [1, 3]


def test_one_failure_more_than_tolerated_stops_with_the_storage_error() -> None:
    from absnb.runtime.storage.fs import StorageError

    p, _hosts, events, calls = tolerating(2)
    for n in (1, 2):
        p.trigger(1.0, TASK_HOST, attempt=0)
        p.acknowledge(failed_write(SRC0, n))
        assert p.stopped is None
    p.trigger(1.0, TASK_HOST, attempt=0)
    p.acknowledge(failed_write(SRC1, 3))
    assert isinstance(p.stopped, StorageError)
    assert calls == [1, 2, 3, p.stopped]
    text = str(p.stopped)
    assert "checkpoint 3: No space left" in text  # the write's own error first
    assert "3 checkpoints in a row failed (the last 3), more than 2 tolerated" in text
    assert "tolerable_failed_checkpoints" in text
    assert "Free space" in text
    assert events[-1][1] == "stopped"


def test_by_default_the_first_failed_manifest_write_stops_the_run() -> None:
    p, _hosts, _events, calls = tolerating(0)
    p.on_complete = lambda n, acks: (_ for _ in ()).throw(OSError(28, "No space left on device"))
    p.trigger(1.0, TASK_HOST, attempt=0)
    for task in TASKS:
        p.acknowledge(ack(task, 1))
    assert calls[0] == 1
    assert "no failed checkpoint is tolerated" in str(p.stopped)


def test_declines_that_are_no_failed_write_are_not_counted() -> None:
    p, _hosts, _events, calls = tolerating(0)
    p.trigger(1.0, TASK_HOST, attempt=0)
    p.acknowledge(ack(SRC0, 1, declined="subsumed"))
    assert p.stopped is None
    assert calls == []
    assert p.coordinator.failed_in_a_row == 0
