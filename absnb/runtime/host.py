"""A host: one process of the real runtime (one Spark task) running some tasks of the job.

Single-threaded: the loop polls the control plane (triggers, notify-checkpoint-complete,
aborts), lets sources emit a batch, delivers what arrived on unblocked inputs to the
tasks' :class:`~absnb.task.StreamTask` (the same objects the simulator drives), and sends
what they emit: to a local queue when both ends live here, else over the data plane.
A task's acknowledged snapshot goes to checkpoint storage, then to the coordinator.
A source that has emitted its whole input sends :class:`EndOfInput`; a task that has it on
every input finishes and sends it on; the host ends when all its tasks have finished.
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from absnb.core.effects import Block, SnapshotState, Unblock
from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import EndOfInput, Message
from absnb.core.snapshot import TaskSnapshot
from absnb.jobs.base import Job
from absnb.protocols import get_protocol
from absnb.runtime.wire import dumps
from absnb.task import Dropped, StreamTask

END = EndOfInput()


class InjectedFailure(RuntimeError):
    """A failure injected on purpose (teaching and tests)."""


@dataclass(frozen=True)
class Failure:
    """Make ``task`` fail in attempt ``attempt``: after it has consumed ``after_records``
    records, or when it takes its part of checkpoint ``during_checkpoint``.

    ``kind`` ``raise`` raises in the task's Python worker; ``kill`` kills the worker with
    SIGKILL, as a crashed machine would.
    """

    task: str
    after_records: int | None = None
    during_checkpoint: int | None = None
    kind: Literal["raise", "kill"] = "raise"
    attempt: int = 0

    def fire(self, reason: str) -> None:
        if self.kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise InjectedFailure(f"injected failure of {self.task}: {reason}")


@dataclass
class HostPlan:
    """Everything one host needs; built by the driver, shipped to the executor."""

    job: Job
    protocol: str
    host_id: int
    tasks: tuple[TaskId, ...]
    secret: bytes
    coordinator: tuple[str, int]
    storage_url: str
    job_id: str
    attempt: int = 0
    restore: int = 0
    failures: tuple[Failure, ...] = ()
    allow_deadlock: bool = False
    advertise_host: str = "127.0.0.1"
    source_batch: int = 512
    flush_every: float = 0.005
    max_unsent_bytes: int = 1 << 20


@dataclass
class HostResult:
    """What a host returns: its tasks' final states and its measurements."""

    host_id: int
    attempt: int
    states: dict[TaskId, Any]
    metrics: dict[str, Any] = field(default_factory=dict)


class Host:
    """Runs the tasks of one :class:`HostPlan` until they have all finished."""

    def __init__(self, plan: HostPlan) -> None:
        from absnb.runtime.storage import CheckpointStorage

        self.plan = plan
        job = plan.job
        self.graph = graph = job.graph
        protocol = get_protocol(plan.protocol, graph, allow_deadlock=plan.allow_deadlock)
        self.local = set(plan.tasks)
        self.tasks = {t: StreamTask(graph, t, protocol) for t in plan.tasks}
        self.storage = CheckpointStorage(plan.storage_url)
        self.queues: dict[ChannelId, deque[Message]] = {
            c: deque() for t in plan.tasks for c in graph.inputs[t] if c.src in self.local
        }
        self.refill: dict[ChannelId, Sequence[Any]] = {}
        if plan.restore:
            self._restore()
        self.blocked: set[ChannelId] = set()
        self.ended: set[ChannelId] = set()
        self.finished: set[TaskId] = set()
        self.consumed: dict[TaskId, int] = dict.fromkeys(plan.tasks, 0)
        self.align_start: dict[TaskId, float] = {}
        self.alignment: dict[TaskId, float] = {}
        self.failures = [f for f in plan.failures if f.attempt == plan.attempt]
        self.sources = [t for t in plan.tasks if graph.kind(t) in ("source", "process")]
        self.metrics: dict[str, Any] = {"records_in": 0, "records_out": 0, "checkpoints": []}

    def _restore(self) -> None:
        snapshot = self.storage.latest(self.plan.job_id, self.graph.fingerprint)
        if snapshot is None or snapshot.checkpoint_id != self.plan.restore:
            found = snapshot.checkpoint_id if snapshot else "none"
            raise RuntimeError(
                f"host {self.plan.host_id} was told to restore checkpoint {self.plan.restore} "
                f"but storage has {found}"
            )
        for t, task in self.tasks.items():
            task.restore(snapshot.tasks[t])
        for c, records in snapshot.channel_states.items():
            # Chandy-Lamport channel state and Alg. 2 backup logs go back in transit first.
            if c.dst in self.local and c.src in self.local:
                self.queues[c].extend(records)
            elif c.dst in self.local:
                self.refill[c] = records

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> HostResult:
        from absnb.runtime.control import ControlClient
        from absnb.runtime.transport import DataPlane

        plan, graph = self.plan, self.graph
        remote_in = [c for t in plan.tasks for c in graph.inputs[t] if c.src not in self.local]
        remote_out = [c for t in plan.tasks for c in graph.outputs[t] if c.dst not in self.local]
        self.net = net = DataPlane(
            plan.secret, advertise_host=plan.advertise_host, attempt=plan.attempt
        )
        # Refilled channel state of a remote channel is delivered from a local queue first.
        for c in list(self.queues):
            if c.src not in self.local and c not in remote_in:
                remote_in.append(c)
        net.expect_inputs(remote_in)
        client = ControlClient(
            plan.coordinator,
            plan.secret,
            host_id=plan.host_id,
            attempt=plan.attempt,
            tasks=plan.tasks,
            data_address=net.address,
        )
        book = client.register()
        net.connect_outputs({c: book.hosts[book.task_host[c.dst]] for c in remote_out})
        net.wait_ready()
        # Restored channel state of a channel from another host comes before anything the
        # network brings on it: deliver it first, in order.
        for c, records in self.refill.items():
            for r in records:
                self._deliver(c, r, client)
        started = time.monotonic()
        last_flush = started
        try:
            while len(self.finished) < len(self.tasks):
                for cmd in client.poll():
                    if self._command(cmd, client):
                        return self._result(started)
                busy = self._emit(client)
                for c, q in self.queues.items():
                    if q and c not in self.blocked:
                        busy = True
                        for _ in range(min(len(q), plan.source_batch)):
                            if c in self.blocked:
                                break
                            self._deliver(c, q.popleft(), client)
                for c, m in net.poll(0.0 if busy else 0.001):
                    self._deliver(c, m, client)
                now = time.monotonic()
                if now - last_flush >= plan.flush_every or not busy:
                    net.flush()
                    last_flush = now
            net.flush()
            while net.pending_output():
                net.poll(0.001)
            client.finished(self._result(started).metrics)
            return self._result(started)
        finally:
            net.close()
            client.close()

    def _command(self, cmd: Any, client: Any) -> bool:
        """Apply one control-plane command to the local tasks; True for Stop."""
        from absnb.runtime.control import Notify, Stop, Trigger

        if isinstance(cmd, Stop):
            return True
        n = cmd.checkpoint_id
        for t, task in self.tasks.items():
            sends: list = []
            if isinstance(cmd, Trigger):
                if t not in cmd.tasks or t in self.finished:
                    continue
                controls = task.trigger(n, sends)
            elif isinstance(cmd, Notify):
                controls = task.checkpoint_complete(n, sends)
            else:  # Aborted
                controls = task.checkpoint_aborted(n, sends)
            self._controls(t, controls, client)
            self._dispatch(sends)
        return False

    def _result(self, started: float) -> HostResult:
        self.metrics["seconds"] = time.monotonic() - started
        self.metrics["alignment"] = dict(self.alignment)
        self.metrics["net"] = self.net.stats()
        return HostResult(
            self.plan.host_id,
            self.plan.attempt,
            {t: task.state for t, task in self.tasks.items()},
            self.metrics,
        )

    def _emit(self, client: Any) -> bool:
        busy = False
        for t in self.sources:
            task = self.tasks[t]
            log = self.plan.job.inputs.get(t, ())
            if t in self.finished:
                continue
            if self._backlogged(t):
                continue
            sends: list = []
            n = 0
            while not task.halted and task.offset < len(log) and n < self.plan.source_batch:
                task.emit(log[task.offset], sends)
                n += 1
            if n:
                busy = True
                self.metrics["records_in"] += n
                self._count(t, n)
                self._dispatch(sends)
            if task.offset >= len(log) and not self.graph.inputs[t]:
                self._finish(t)
        return busy

    def _backlogged(self, t: TaskId) -> bool:
        """Backpressure: a source waits while what it sent is still queued here (local
        queues, unsent network bytes), so that barriers never wait behind a long backlog
        and alignment stays short."""
        limit = 2 * self.plan.source_batch
        for c in self.graph.outputs[t]:
            q = self.queues.get(c)
            if q is not None and len(q) > limit:
                return True
        return self.net.pending_output() > self.plan.max_unsent_bytes

    def _deliver(self, c: ChannelId, m: Message, client: Any) -> None:
        t = c.dst
        if type(m) is EndOfInput:
            self.ended.add(c)
            if all(i in self.ended for i in self.graph.inputs[t]):
                self._finish(t)
            return
        sends: list = []
        controls = self.tasks[t].deliver(c, m, sends)
        if controls:
            self._controls(t, controls, client)
        if sends:
            self._dispatch(sends)
        self._count(t, 1)

    def _count(self, t: TaskId, n: int) -> None:
        total = self.consumed[t] = self.consumed[t] + n
        for f in self.failures:
            if f.after_records is not None and f.task == str(t) and total >= f.after_records:
                f.fire(f"after {total} records")

    def _dispatch(self, sends: list) -> None:
        net, queues = self.net, self.queues
        out = 0
        for c, m in sends:
            q = queues.get(c)
            if q is not None and c.src in self.local:
                q.append(m)
            else:
                net.send(c, m)
            out += 1
        self.metrics["records_out"] += out

    def _controls(self, t: TaskId, controls: Sequence[Any], client: Any) -> None:
        from absnb.runtime.control import Ack

        for ctl in controls:
            kind = type(ctl)
            if kind is Block:
                self.align_start.setdefault(t, time.monotonic())
                if ctl.channel in self.queues and ctl.channel.src in self.local:
                    self.blocked.add(ctl.channel)
                else:
                    self.net.block(ctl.channel)
            elif kind is Unblock:
                self.blocked.discard(ctl.channel)
                if ctl.channel.src not in self.local:
                    self.net.unblock(ctl.channel)
            elif kind is SnapshotState:
                began = self.align_start.pop(t, None)
                self.alignment[t] = time.monotonic() - began if began is not None else 0.0
                for f in self.failures:
                    if f.during_checkpoint == ctl.checkpoint_id and f.task == str(t):
                        f.fire(f"during checkpoint {ctl.checkpoint_id}")
            elif kind is TaskSnapshot:
                key = self.storage.write_task(self.plan.job_id, ctl)
                size = len(dumps(ctl.state)) + sum(
                    len(dumps(rs)) for rs in ctl.channel_states.values()
                )
                client.ack(Ack(t, ctl.checkpoint_id, key, size, self.alignment.get(t, 0.0), {}))
                self.metrics["checkpoints"].append(ctl.checkpoint_id)
            elif kind is Dropped:
                self.metrics["dropped"] = self.metrics.get("dropped", 0) + 1

    def _finish(self, t: TaskId) -> None:
        if t in self.finished:
            return
        self.finished.add(t)
        self._dispatch([(c, END) for c in self.graph.outputs[t]])


def run_host(plan: HostPlan) -> HostResult:
    """Run one host to the end (what each Spark task of the barrier stage does)."""
    return Host(plan).run()
