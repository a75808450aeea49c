"""The Spark host in the differential test: the task's host, fed by a second host running
the inputs' tasks through a stand-in for the data plane (:class:`_Plane`), and taking what
arrives as its loop does. No Spark, no sockets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from absnb.core.messages import RECORD_TYPES, Record, RecordBatch, as_records
from absnb.core.snapshot import TaskSnapshot
from absnb.runtime.data_plane.priority import PRIORITY_TYPES, received
from absnb.runtime.host.host import Host
from absnb.runtime.plan import HostPlan
from absnb.task import Out, StreamTask
from tests.differential.drivers import INPUTS, TIMEOUT, Driver, job, shown


class HostDriver(Driver):
    """The Spark host of the task (and ``out``), fed by a second host running the inputs'
    tasks: what that host sends (:meth:`Outbox.send`: the priority lane or in order)
    crosses a :class:`_Plane` and is taken by the task's host as its loop takes it
    (:meth:`Host._receive`, :meth:`Host._between`, :meth:`Host._due`). No Spark, no
    sockets."""

    def __init__(
        self, protocol: str, timeout: float | None, tmp: str, operator: str = "identity"
    ) -> None:
        super().__init__()
        graph = job(operator).graph
        (self.task,) = graph.tasks_of("task")
        inputs = tuple(t for t in graph.tasks if graph.kind(t) == "source")
        self.host, self.sender = (
            Host(_plan(protocol, timeout, tmp, i, tasks, operator))
            for i, tasks in enumerate((tuple(t for t in graph.tasks if t not in inputs), inputs))
        )
        self.plane = plane = _Plane()
        host = self.host
        host.writer = _Writer(self)  # type: ignore[assignment]
        self.client = _Client(self)
        host.attach(plane, self.client)  # type: ignore[arg-type]
        self.sender.attach(plane, self.client)  # type: ignore[arg-type]
        dispatch = host.outbox.send

        def dispatched(sends: list[Any]) -> None:  # what the task sends, as the host sends it
            for c, m in sends:
                if c.src == self.task:  # a batch as its records, as the others send them
                    self.log.extend(
                        map(shown, as_records((m,)) if type(m) is RecordBatch else (m,))
                    )
            dispatch(sends)

        host.outbox.send = dispatched  # type: ignore[method-assign]
        self.now = 0.0
        host.clock = lambda: self.now  # type: ignore[method-assign]
        self.channels = {n: graph.channel(f"{n}->task") for n in INPUTS}
        self.names = {c: n for n, c in self.channels.items()}
        self.out = graph.channel("task->out")
        self.seq = dict.fromkeys(INPUTS, 0)

    def blocked(self) -> set[str]:
        return {self.names[c] for c in self.plane.blocked if c in self.names}

    def push(self, name: str, m: Any) -> None:
        if type(m) is Record:
            self.seq[name] += 1
            m = Record(m.value, self.seq[name])
        self.sender.outbox.send([(self.channels[name], m)])

    def push_batch(self, name: str, values: list[Any]) -> None:
        """``values`` as one batch of records (one frame), as a source sends them."""
        self.sender.outbox.send([(self.channels[name], RecordBatch(values, self.seq[name] + 1))])
        self.seq[name] += len(values)

    def process(self) -> None:
        client = self.client
        self.host._due(client)  # type: ignore[arg-type]
        while self.plane.ready():
            self.host._receive(client, 0.0)  # type: ignore[arg-type]
            self.host._due(client)  # type: ignore[arg-type]
            self._record()

    def tick(self) -> None:
        """Time passes; the host heard of what reached its priority lane before."""
        self.host._between(self.client)  # type: ignore[arg-type]
        self.now += TIMEOUT
        self.host._due(self.client)  # type: ignore[arg-type]
        self._record()

    def run(self, act: Callable[[StreamTask, Out], None]) -> None:
        out = Out()
        act(self.host.tasks[self.task], out)
        self.host._after(self.task, out, self.client)  # type: ignore[arg-type]
        self._record()

    def _record(self) -> None:
        self.host.queues[self.out].clear()  # the sink is not under test


def _plan(
    protocol: str, timeout: float | None, tmp: str, host_id: int, tasks: Any, operator: str
) -> HostPlan:
    return HostPlan(
        job(operator),
        protocol,
        host_id=host_id,
        tasks=tasks,
        secret=b"",
        coordinator=("127.0.0.1", 0),
        storage_url=tmp,
        job_id="differential",
        alignment_timeout=timeout,
    )


class _Plane:
    """Stands in for the data plane between the two hosts, without sockets: what the sender
    sends arrives at once, one message a frame. A priority frame becomes what the receiver's
    data plane hands out for it (:func:`~absnb.runtime.data_plane.priority.received`, given the
    frames buffered on its channel); :meth:`poll` hands out the priority events first, then the
    buffered messages of unblocked channels in arrival order, up to the first that is no
    record (so that the host may block a channel before anything behind it is handed out:
    :meth:`~absnb.runtime.data_plane.transport.DataPlane.poll`)."""

    def __init__(self) -> None:
        self.frames: list[tuple[Any, Any]] = []
        self.urgent: list[tuple[Any, Any]] = []
        self.blocked: set[Any] = set()
        self.arriving: list[Callable[[], None]] = []
        """Sends made while the receiving host is busy: the first time it looks at its
        priority lane (:meth:`poll_urgent`)."""

    def send(self, c: Any, m: Any) -> None:
        self.frames.append((c, m))

    def send_priority(self, c: Any, m: Any) -> None:
        if type(m) not in PRIORITY_TYPES:
            raise ValueError(f"only barriers take the priority lane, not {m!r}")
        urgent = received((m, ()), [[x] for cx, x in self.frames if cx == c])
        assert urgent is not None
        self.urgent.append((c, urgent))

    def ready(self) -> bool:
        return bool(self.urgent) or any(c not in self.blocked for c, _ in self.frames)

    def poll(self, timeout: float = 0.0) -> list[tuple[Any, Any]]:
        handed, self.urgent = self.urgent, []
        kept: list[tuple[Any, Any]] = []
        for i, (c, m) in enumerate(self.frames):
            if c in self.blocked:
                kept.append((c, m))
                continue
            handed.append((c, m))
            if type(m) not in RECORD_TYPES:
                kept.extend(self.frames[i + 1 :])
                break
        self.frames = kept
        return handed

    def poll_urgent(self) -> list[tuple[Any, Any]]:
        while self.arriving:
            self.arriving.pop(0)()
        urgent, self.urgent = self.urgent, []
        return urgent

    def block(self, c: Any) -> None:
        self.blocked.add(c)

    def unblock(self, c: Any) -> None:
        self.blocked.discard(c)


class _Writer:
    """Stands in for the host's snapshot writer: the snapshot goes to the driver's log."""

    pending = 0

    def __init__(self, driver: HostDriver) -> None:
        self.driver = driver

    def submit(self, snapshot: TaskSnapshot, alignment_s: float) -> None:
        if snapshot.task == self.driver.task:
            self.driver.snapshot(snapshot, self.driver.names)

    def close(self) -> None:
        pass


class _Client:
    """Stands in for the host's control client: no commands; a decline goes to the log."""

    def __init__(self, driver: HostDriver) -> None:
        self.driver = driver

    def poll(self) -> list[Any]:
        return []

    def decline(self, task: Any, checkpoint_id: int, reason: str) -> None:
        if task == self.driver.task:
            self.driver.log.append(("decline", checkpoint_id))
