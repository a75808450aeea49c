"""The control plane: registration, address book, triggers, acks, notify, attempts, auth."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from absnb.core.ids import TaskId
from absnb.protocols.coordinator import CheckpointCoordinator
from absnb.runtime.connections.wire import new_secret
from absnb.runtime.control_plane.client import ControlClient
from absnb.runtime.control_plane.messages import (
    Aborted,
    Ack,
    AddressBook,
    ControlError,
    Finish,
    Notify,
    Stop,
    Trigger,
)
from absnb.runtime.control_plane.server import CoordinatorServer

SRC = TaskId("src")
OP0, OP1 = TaskId("op", 0, 2), TaskId("op", 1, 2)
SINK = TaskId("sink")
TASKS = (SRC, OP0, OP1, SINK)
# host 0 holds the only initiator
HOST_TASKS = {0: (SRC,), 1: (OP0,), 2: (OP1, SINK)}
SECRET = new_secret()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def wait_for(condition: Callable[[], Any], timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def collect(client: ControlClient, until: Callable[[list[Any]], bool], timeout=3.0) -> list[Any]:
    """Poll ``client`` until ``until(messages so far)``."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while not until(got):
        if time.monotonic() > deadline:
            raise AssertionError(f"only got {got}")
        got += client.poll()
        time.sleep(0.005)
    return got


def closed(client: ControlClient, timeout: float = 3.0) -> bool:
    """True once ``client.poll()`` says the server closed the connection."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.poll()
        except ControlError as e:
            return "closed the control connection" in str(e)
        time.sleep(0.005)
    return False


def quiet(client: ControlClient, seconds: float = 0.15) -> list[Any]:
    """Everything ``client`` receives within ``seconds``."""
    got: list[Any] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got += client.poll()
        time.sleep(0.01)
    return got


class Job:
    """A started server with a fake clock, and the clients of its hosts."""

    def __init__(self, max_concurrent: int | None = 1, **kwargs: Any) -> None:
        self.clock = FakeClock()
        self.completions: list[tuple[int, dict[TaskId, Ack]]] = []
        self.order: list[tuple[str, int]] = []
        self.coordinator = CheckpointCoordinator(
            TASKS,
            "job",
            "fp",
            "abs",
            interval=1.0,
            max_concurrent=max_concurrent,
            # periodic triggers overlap as far as max_concurrent allows (two when unlimited)
            periodic_concurrent=2 if max_concurrent is None else max_concurrent,
        )
        kwargs.setdefault("on_complete", self.on_complete)
        self.server = CoordinatorServer(
            self.coordinator,
            SECRET,
            hosts=3,
            initiators=[SRC],
            bind_host="127.0.0.1",
            clock=self.clock,
            **kwargs,
        )
        self.server.start()
        self.clients: list[ControlClient] = []

    def close(self) -> None:
        for c in self.clients:
            c.close(linger=0.5)
        self.server.stop()
        assert self.server._thread is not None
        assert not self.server._thread.is_alive()

    def on_complete(self, checkpoint_id: int, acks: dict[TaskId, Ack]) -> None:
        self.order.append(("complete", checkpoint_id))
        self.completions.append((checkpoint_id, acks))

    def client(self, host: int, attempt: int = 0, secret: bytes = SECRET) -> ControlClient:
        c = ControlClient(
            self.server.address,
            secret,
            host_id=host,
            attempt=attempt,
            tasks=HOST_TASKS[host],
            data_address=("10.0.0.1", 7000 + host),
            timeout=3,
        )
        self.clients.append(c)
        return c

    def register_all(self, attempt: int = 0) -> tuple[list[ControlClient], list[AddressBook]]:
        clients = [self.client(h, attempt) for h in HOST_TASKS]
        with ThreadPoolExecutor(len(clients)) as pool:
            books = list(pool.map(ControlClient.register, clients))
        return clients, books

    def trigger(self) -> int:
        """Advance the fake clock past the interval; the id host 0 is triggered with."""
        self.clock.now += 1.5
        (msg,) = collect(self.clients_by_host(0), bool)
        assert isinstance(msg, Trigger)
        return msg.checkpoint_id

    def clients_by_host(self, host: int) -> ControlClient:
        return next(c for c in reversed(self.clients) if c.host_id == host and c.book)

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [d for _, k, d in list(self.server.events) if k == kind]


def ack(task: TaskId, n: int, size: int = 10) -> Ack:
    return Ack(task, n, f"chk-{n}/{task}", size, 0.25, {"buffered": 0})


@pytest.fixture
def job() -> Iterator[Job]:
    j = Job()
    yield j
    j.close()


def test_registration_sends_the_address_book_to_every_host(job: Job) -> None:
    _, books = job.register_all()
    expected = AddressBook(
        attempt=0,
        hosts={0: ("10.0.0.1", 7000), 1: ("10.0.0.1", 7001), 2: ("10.0.0.1", 7002)},
        task_host={SRC: 0, OP0: 1, OP1: 2, SINK: 2},
        restore_checkpoint=0,
    )
    assert books == [expected] * 3
    assert job.server.address[0] == "127.0.0.1"


def test_no_address_book_until_every_host_registered(job: Job) -> None:
    c = job.client(0)
    c.timeout = 0.3
    with pytest.raises(TimeoutError, match=r"no address book within 0\.3 s"):
        c.register()


def test_periodic_trigger_reaches_only_the_initiator_hosts(job: Job) -> None:
    clients, _ = job.register_all()
    job.clock.now = 0.9  # within the interval: not due
    assert [quiet(c) for c in clients] == [[], [], []]
    job.clock.now = 1.5
    assert collect(clients[0], bool) == [Trigger(1, (SRC,))]
    assert quiet(clients[1]) == quiet(clients[2]) == []
    assert job.events("triggered") == [{"checkpoint_id": 1, "attempt": 0}]
    job.clock.now = 5.0  # one pending at a time: no second trigger
    assert quiet(clients[0]) == []


def test_acks_from_every_task_complete_then_every_host_is_notified(job: Job) -> None:
    clients, _ = job.register_all()
    n = job.trigger()
    job.clock.now = 2.0
    acks = {t: ack(t, n, size=i) for i, t in enumerate(TASKS)}
    for c in clients:
        for t in c.tasks:
            c.ack(acks[t])
    for c in clients:
        assert collect(c, bool) == [Notify(n)]
        job.order.append(("notify", c.host_id))
    assert job.completions == [(n, acks)]
    assert list(job.completions[0][1]) == list(TASKS)  # in the coordinator's task order
    assert job.order == [("complete", n), ("notify", 0), ("notify", 1), ("notify", 2)]
    assert job.coordinator.latest().checkpoint_id == n
    assert not job.coordinator.pending
    acknowledged = job.events("acknowledged")
    assert [(d["task"], d["state_bytes"], d["alignment_s"]) for d in acknowledged] == [
        (t, i, 0.25) for i, t in enumerate(TASKS)
    ]
    # where each task's snapshot lies in storage, as the host acknowledged it
    assert [d["snapshot_key"] for d in acknowledged] == [f"chk-{n}/{t}" for t in TASKS]
    assert job.events("completed") == [{"checkpoint_id": n, "duration": 0.5}]
    # The next trigger is due an interval after the last one.
    assert job.trigger() == n + 1


def test_a_missing_ack_keeps_the_checkpoint_pending(job: Job) -> None:
    clients, _ = job.register_all()
    n = job.trigger()
    for t in (SRC, OP0, OP1):  # never SINK
        job.clients_by_host(HOST_TASKS_OF[t]).ack(ack(t, n))
    wait_for(lambda: len(job.events("acknowledged")) == 3)
    assert [quiet(c) for c in clients] == [[], [], []]
    assert list(job.coordinator.pending) == [n]
    assert job.completions == []
    assert job.coordinator.latest() is None


HOST_TASKS_OF = {t: h for h, ts in HOST_TASKS.items() for t in ts}


def test_acks_of_a_checkpoint_that_is_not_pending_are_ignored(job: Job) -> None:
    clients, _ = job.register_all()
    clients[0].ack(ack(SRC, 99))
    n = job.trigger()
    for c in clients:
        for t in c.tasks:
            c.ack(ack(t, n))
    assert collect(clients[0], bool) == [Notify(n)]
    assert [d["checkpoint_id"] for d in job.events("acknowledged")] == [n] * 4


def test_a_newer_completed_checkpoint_subsumes_older_pending_ones() -> None:
    job = Job(max_concurrent=None)
    try:
        clients, _ = job.register_all()
        first = job.trigger()
        second = job.trigger()
        for c in clients:
            for t in c.tasks:
                c.ack(ack(t, second))
        for c in clients:
            assert collect(c, lambda got: Notify(second) in got) == [
                Aborted(first),
                Notify(second),
            ]
        assert [d["checkpoint_id"] for d in job.events("aborted")] == [first]
        assert [n for n, _ in job.completions] == [second]
    finally:
        job.close()


def test_a_checkpoint_completes_when_its_manifest_write_returns() -> None:
    """The end time, the notify and the min pause follow the durable write; while the write
    runs the checkpoint is not completed, so a crash then restores the previous one."""
    during: list[tuple[Any, list[Any], list[dict[str, Any]]]] = []

    def write_manifest(n: int, acks: dict[TaskId, Ack]) -> None:
        during.append(
            (
                job.coordinator.latest(),
                [m for c in clients for m in c.poll()],
                job.events("completed"),
            )
        )
        job.clock.now += 0.1  # a remote store's write latency

    job = Job(on_complete=write_manifest)
    try:
        clients, _ = job.register_all()
        n = job.trigger()  # at 1.5
        job.clock.now = 2.0
        for c in clients:
            for t in c.tasks:
                c.ack(ack(t, n))
        for c in clients:
            assert collect(c, bool) == [Notify(n)]
        # during the write: nothing completed (recovery's restore point is still the
        # previous checkpoint), no host notified, no completion recorded
        assert during == [(None, [], [])]
        assert job.events("completed") == [{"checkpoint_id": n, "duration": pytest.approx(0.6)}]
        assert job.coordinator.latest().checkpoint_id == n
        assert job.coordinator.last_completed == pytest.approx(2.1)  # the min pause's start
    finally:
        job.close()


def test_a_failing_on_complete_aborts_the_checkpoint() -> None:
    def fail(n: int, acks: dict[TaskId, Ack]) -> None:
        raise OSError("disk full")

    job = Job(on_complete=fail)
    try:
        clients, _ = job.register_all()
        n = job.trigger()
        for c in clients:
            for t in c.tasks:
                c.ack(ack(t, n))
        for c in clients:
            assert collect(c, bool) == [Aborted(n)]
        assert job.coordinator.latest() is None
        assert n in job.coordinator.aborted
        (aborted,) = job.events("aborted")
        assert "disk full" in aborted["reason"]
    finally:
        job.close()


def test_new_attempt_aborts_pending_stops_old_hosts_and_refuses_old_registrations(
    job: Job,
) -> None:
    old, _ = job.register_all()
    n = job.trigger()
    old[0].ack(ack(SRC, n))
    wait_for(lambda: job.events("acknowledged"))
    job.server.new_attempt(1, restore_checkpoint=7)
    # Hosts of the old attempt that are still connected hear Aborted, then Stop, then
    # the connection is closed.
    for c in old:
        assert collect(c, lambda got: Stop() in got) == [Aborted(n), Stop()]
        assert closed(c)
    assert job.coordinator.pending == {}
    assert job.coordinator.aborted == [n]
    assert job.events("aborted") == [{"checkpoint_id": n, "reason": "new attempt"}]
    late = job.client(0, attempt=0)
    with pytest.raises(ControlError, match=r"attempt 0 .* current attempt is 1"):
        late.register()
    _, books = job.register_all(attempt=1)
    assert {(b.attempt, b.restore_checkpoint) for b in books} == {(1, 7)}
    assert job.trigger() == n + 1  # checkpoint ids are never reused
    with pytest.raises(ValueError, match="older than the current attempt"):
        job.server.new_attempt(0, 0)


def test_a_fenced_attempt_completes_no_checkpoint_before_the_next_attempt(job: Job) -> None:
    # The driver fences a failed attempt before it reads storage for the checkpoint to
    # restore: acknowledgements still on their way must not complete a checkpoint (write
    # its manifest) after that read.
    old, _ = job.register_all()
    n = job.trigger()
    for c in old[1:]:
        for t in c.tasks:
            c.ack(ack(t, n))
    wait_for(lambda: len(job.events("acknowledged")) == len(TASKS) - len(old[0].tasks))
    job.server.fence()
    for t in old[0].tasks:  # the last acknowledgement arrives after the fence
        old[0].ack(ack(t, n))
    assert collect(old[0], bool) == [Aborted(n)]
    job.clock.now += 5  # no trigger while fenced
    assert quiet(old[0]) == []
    assert job.completions == []
    assert job.coordinator.pending == {}
    assert job.coordinator.aborted == [n]
    assert job.events("completed") == []
    assert job.events("aborted") == [{"checkpoint_id": n, "reason": "new attempt"}]
    job.server.new_attempt(1, restore_checkpoint=0)
    job.register_all(attempt=1)
    assert job.trigger() == n + 1  # the next attempt checkpoints again


def test_a_wrong_secret_is_refused_and_the_server_keeps_serving() -> None:
    job = Job(handshake_timeout=0.3)
    try:
        silent = socket.create_connection(job.server.address)  # never answers the nonce
        intruder = job.client(0, secret=b"not the secret")
        with pytest.raises(ControlError, match="job's secret"):
            intruder.register()
        garbage = socket.create_connection(job.server.address)
        garbage.sendall(b"x" * 100)
        assert garbage.recv(64)  # the nonce
        garbage.settimeout(3)
        # refused: closed without a word (a reset, as the garbage was left unread)
        with contextlib.suppress(ConnectionResetError):
            assert garbage.recv(4096) == b""
        _, books = job.register_all()
        assert len(books) == 3
        assert job.events("refused") == []
        silent.close()
        garbage.close()
    finally:
        job.close()


def test_unknown_tasks_and_duplicate_hosts_are_refused(job: Job) -> None:
    stranger = ControlClient(
        job.server.address,
        SECRET,
        host_id=5,
        attempt=0,
        tasks=(TaskId("nope"),),
        data_address=("h", 1),
        timeout=3,
    )
    job.clients.append(stranger)
    with pytest.raises(ControlError, match=r"not tasks of job 'job' \(\['nope'\]\)"):
        stranger.register()
    first = job.client(1)
    with ThreadPoolExecutor(3) as pool:
        pending = [pool.submit(first.register)]
        wait_for(lambda: job.server._registered)
        with pytest.raises(ControlError, match="host 1 of attempt 0 has already registered"):
            job.client(1).register()
        pending += [pool.submit(job.client(h).register) for h in (0, 2)]
        assert [p.result().attempt for p in pending] == [0, 0, 0]
    assert [d["reason"][:6] for d in job.events("refused")] == ["host 5", "host 1"]


def test_wait_finished_returns_every_hosts_metrics(job: Job) -> None:
    clients, _ = job.register_all()
    for c in clients[:2]:
        c.finished({"records": c.host_id * 10})
    with pytest.raises(TimeoutError, match="1 of 3 hosts of attempt 0 did not finish"):
        job.server.wait_finished(0.2)
    clients[2].finished({"records": 20})
    clients[2].close()
    assert job.server.wait_finished(3) == {
        0: {"records": 0},
        1: {"records": 10},
        2: {"records": 20},
    }
    job.clock.now = 10.0  # a finished attempt is not triggered
    assert quiet(clients[0]) == []


def test_a_host_lost_before_it_finished_stops_its_peers_and_fails_wait_finished(
    job: Job,
) -> None:
    clients, _ = job.register_all()
    clients[1].close()
    with pytest.raises(ControlError, match=r"hosts \[1\] of attempt 0 disconnected"):
        job.server.wait_finished(3)
    job.clock.now = 10.0  # a broken attempt is not triggered
    for peer in (clients[0], clients[2]):
        (stop,) = quiet(peer)  # told to stop at once, rather than wait for the lost host
        assert isinstance(stop, Stop)
        assert stop.reason == "host 1 of attempt 0 was lost"


def test_the_first_failure_a_host_reports_is_why_the_attempt_failed(job: Job) -> None:
    clients, _ = job.register_all()
    clients[2].failed(RuntimeError("injected failure of count[1]: after 3 records"))
    for peer in (clients[0], clients[1]):
        (stop,) = quiet(peer)
        assert stop.reason == (
            "host 2 of attempt 0 failed: RuntimeError: injected failure of count[1]: "
            "after 3 records"
        )
    clients[0].failed(RuntimeError("a later error"))  # a consequence, not the cause
    assert closed(clients[0])  # the server has read it
    assert job.server.failures == {0: "RuntimeError: injected failure of count[1]: after 3 records"}


def test_a_failure_that_only_follows_from_a_peer_gives_way_to_the_cause(job: Job) -> None:
    # Under load the host whose channel was closed under it may report first.
    clients, _ = job.register_all()
    clients[0].failed(ConnectionError("output channel source[0]->count[1] is closed"))
    assert closed(clients[0])
    clients[2].failed(RuntimeError("injected failure of count[1]: after 3 records"))
    assert closed(clients[2])
    clients[1].failed(ConnectionError("input channel source[1]->count[1] lost"))
    assert closed(clients[1])
    assert job.server.failures == {0: "RuntimeError: injected failure of count[1]: after 3 records"}
    error, _setup = job.server.causes.exceptions[0]
    assert "injected failure" in str(error)


def test_stop_sends_stop_and_ends_the_thread() -> None:
    job = Job()
    clients, _ = job.register_all()
    address = job.server.address
    job.server.stop()
    assert job.server._thread is not None
    assert not job.server._thread.is_alive()
    for c in clients:
        assert collect(c, bool) == [Stop()]
        assert closed(c)
        c.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=1)
    job.server.stop()  # idempotent


def test_a_server_that_never_started_stops_cleanly() -> None:
    coordinator = CheckpointCoordinator(TASKS, "job", "fp", "abs", interval=1.0)
    server = CoordinatorServer(coordinator, SECRET, hosts=1, initiators=[SRC])
    server.new_attempt(0, 0)
    server.stop()
    with pytest.raises(ValueError, match="not tasks of job"):
        CoordinatorServer(coordinator, SECRET, hosts=1, initiators=[TaskId("x")])


def test_a_coordinator_without_the_secret_is_refused_before_anything_is_unpickled(
    impostor: Any, unpickled: list[str]
) -> None:
    from absnb.runtime.control_plane.messages import FRAME_KIND

    address, server = impostor(FRAME_KIND)
    client = ControlClient(
        address, SECRET, host_id=0, attempt=0, tasks=(SRC,), data_address=("127.0.0.1", 1)
    )
    with pytest.raises(ControlError, match="does not know the job secret"):
        client.register()
    client.close()
    server.join(5)
    assert unpickled == []


def test_quiescence_needs_two_equal_rounds_of_idle_hosts_and_balanced_channels() -> None:
    from absnb.core.ids import ChannelId
    from absnb.runtime.control_plane.messages import Probe, Report, Terminate

    c = ChannelId(SRC, OP0)
    quiet = {0: (True, {c: 5}, {}), 1: (True, {}, {c: 5}), 2: (True, {}, {})}
    in_transit = {**quiet, 1: (True, {}, {c: 3})}
    busy = {**quiet, 0: (False, {c: 5}, {})}
    moved = {0: (True, {c: 6}, {}), 1: (True, {}, {c: 6}), 2: (True, {}, {})}
    job = Job(quiescence=True, probe_interval=0.0)
    try:
        clients, _ = job.register_all()
        # quiet rounds reset by: records in transit, a busy host, counts that moved
        for reports in (in_transit, quiet, busy, quiet, moved, moved):
            for client in clients:
                (probe,) = collect(client, bool)  # never Terminate before the last round
                assert isinstance(probe, Probe)
                idle, sent, received = reports[client.host_id]
                client.report(Report(client.host_id, 0, probe.round, idle, sent, received))
        for client in clients:
            assert collect(client, bool) == [Terminate()]
        assert [d["round"] for d in job.events("terminated")] == [6]
        assert job.server.terminated
    finally:
        job.close()


def test_no_wait_for_a_cause_once_every_host_of_the_attempt_is_gone(job: Job) -> None:
    # A host killed by SIGKILL never reports: once every connection of the attempt has
    # closed, nobody can, so the restart does not wait out the timeout for a cause.
    clients, _ = job.register_all()
    assert job.server.failure(0, timeout=0.3) is None  # live hosts: it waits the timeout out
    began = time.monotonic()
    for c in clients:
        c.close(linger=0.5)
    assert job.server.failure(0, timeout=30.0) is None
    assert time.monotonic() - began < 5.0


def test_a_cause_still_on_its_way_is_waited_for_while_a_host_is_connected(job: Job) -> None:
    clients, _ = job.register_all()
    clients[0].close(linger=0.5)  # host 0 gone without a word; hosts 1 and 2 still there
    with ThreadPoolExecutor(1) as pool:
        cause = pool.submit(job.server.failure, 0, 10.0)
        time.sleep(0.2)
        assert not cause.done()
        clients[2].failed(RuntimeError("injected failure of count[1]: after 3 records"))
        error, setup = cause.result(timeout=5)
    assert "injected failure" in str(error)
    assert not setup


# -- the final checkpoint (FLIP-147; absnb.runtime.control_plane.final_checkpoint) ------------
def test_hosts_that_ended_wait_for_the_final_checkpoint_then_finish(job: Job) -> None:
    clients, _ = job.register_all()
    clients[0].ended(0, 0)
    clients[1].ended(0, 0)
    assert [quiet(c) for c in clients] == [[], [], []]  # host 2 still runs
    clients[2].ended(2, 0)  # its sink holds its last transactions uncommitted
    # every host hears of it: the finished tasks join it, no barrier reaches them
    assert collect(clients[0], bool) == [Trigger(1, (SRC,))]
    assert collect(clients[1], bool) == collect(clients[2], bool) == [Trigger(1, ())]
    assert job.events("triggered") == [{"checkpoint_id": 1, "attempt": 0, "final": True}]
    for c in clients:
        for t in HOST_TASKS[c.host_id]:
            c.ack(ack(t, 1))
    assert [collect(c, bool) for c in clients] == [[Notify(1)]] * 3
    clients[0].ended(0, 1)
    clients[2].ended(0, 1)
    assert quiet(clients[0]) == []  # host 1 has yet to carry out the notification
    clients[1].ended(0, 1)
    assert [collect(c, bool) for c in clients] == [[Finish()]] * 3
    assert job.events("finishing") == [{"attempt": 0}]
    job.clock.now = 10.0  # nothing more is triggered
    assert quiet(clients[0]) == []


def test_hosts_with_nothing_uncommitted_finish_at_once(job: Job) -> None:
    clients, _ = job.register_all()
    for c in clients:
        c.ended(0, 0)
    assert [collect(c, bool) for c in clients] == [[Finish()]] * 3
    assert job.events("triggered") == []


def test_a_host_that_ended_joins_the_pending_and_later_checkpoints(job: Job) -> None:
    clients, _ = job.register_all()
    n = job.trigger()
    clients[1].ended(0, 0)
    assert collect(clients[1], bool) == [Trigger(n, ())]  # pending when it ended
    for c in clients:
        for t in HOST_TASKS[c.host_id]:
            c.ack(ack(t, n))
    assert [collect(c, bool) for c in clients] == [[Notify(n)]] * 3
    job.clock.now += 2.0  # the next periodic checkpoint reaches it too
    assert collect(clients[1], bool) == [Trigger(n + 1, ())]
    assert collect(clients[0], bool) == [Trigger(n + 1, (SRC,))]


def test_one_final_checkpoint_an_attempt(job: Job) -> None:
    """A sink that still holds output uncommitted after the final checkpoint (a sink that
    does not commit) is not waited for again: the hosts finish."""
    clients, _ = job.register_all()
    for c in clients:
        c.ended(1, 0)
    for c in clients:
        (trigger,) = collect(c, bool)
        for t in HOST_TASKS[c.host_id]:
            c.ack(ack(t, trigger.checkpoint_id))
    assert [collect(c, bool) for c in clients] == [[Notify(1)]] * 3
    for c in clients:
        c.ended(1, 1)
    assert [collect(c, bool) for c in clients] == [[Finish()]] * 3
    assert len(job.events("triggered")) == 1
