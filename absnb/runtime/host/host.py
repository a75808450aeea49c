"""A host: one process of the real runtime (one Spark task) running some tasks of the job.

Single-threaded: the loop polls the control plane (triggers, notify-checkpoint-complete,
aborts), lets sources emit a batch, delivers what arrived on unblocked inputs to the tasks'
:class:`~absnb.task.StreamTask` (the objects the simulator drives), and carries out what
they return (``Host._after``): controls, then sends, to a local queue when both ends
live here, else over the data plane. A task's snapshot goes to checkpoint storage, then to
the coordinator. An end of input is delivered to its task like any message; a task whose
inputs have all ended finishes and ends its outputs, and joins every later checkpoint it
hears of (:meth:`~absnb.task.StreamTask.join`, FLIP-147); the host ends when all its tasks
have. The barriers of a protocol whose barriers overtake (FLIP-76) take the priority lane
(:mod:`absnb.runtime.data_plane.priority`); a cancellation marker travels in order, as in Flink
(:func:`~absnb.protocols.overtaken.priority_event`). A job whose end cannot travel as
end-of-input (:func:`~absnb.runtime.plan.terminates_by_quiescence`) runs until the coordinator
detects quiescence from the hosts' answers to its probes. Every wait is bounded and listens to the
coordinator: a :class:`~absnb.runtime.control_plane.messages.Stop` ends the host at once with
:class:`HostStopped`, so that an old attempt frees its Spark slot fast.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from absnb.core.events import checkpoint_of
from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import (
    CancelCheckpointMarker,
    EndOfInput,
    Record,
    RecordBatch,
)
from absnb.protocols import get_protocol
from absnb.runtime.control_plane.client import ControlClient, report_setup_failure
from absnb.runtime.control_plane.messages import Ack, Stop, Terminate, Trigger
from absnb.runtime.data_plane.priority import Overtaking
from absnb.runtime.data_plane.transport import DataPlane
from absnb.runtime.events.log import EventLog
from absnb.runtime.events.memory import release_freed
from absnb.runtime.failures import InjectedFailure, Injections, declines
from absnb.runtime.host.alignment import Alignments
from absnb.runtime.host.announce import Announcements
from absnb.runtime.host.carry_out import CarriesOut
from absnb.runtime.host.connect import connect_channels, open_planes
from absnb.runtime.host.inbox import Inbox, take
from absnb.runtime.host.outbox import Outbox
from absnb.runtime.host.pacing import SourcePacing
from absnb.runtime.host.report import host_result
from absnb.runtime.host.restore import restore
from absnb.runtime.host.snapshot_writer import SnapshotWriter, WriteFailed
from absnb.runtime.plan import HostPlan, HostResult, terminates_by_quiescence
from absnb.task import Out, StreamTask

RUN_STOP_WAIT = 0.1
"""Seconds a failing host listens for the coordinator's final Stop before it reports its
error (``Host._run_stopped``)."""


class HostStopped(RuntimeError):
    """The coordinator told this host to stop: its attempt is over or a peer host was lost."""


class RunStopped(HostStopped):
    """The coordinator stopped the whole run (a final
    :class:`~absnb.runtime.control_plane.messages.Stop`): the driver raises why, and the
    host's Spark task ends without failing."""


class Host(CarriesOut):
    """Runs the tasks of one :class:`~absnb.runtime.plan.HostPlan` until they have all finished."""

    def __init__(self, plan: HostPlan) -> None:
        from absnb.runtime.storage.checkpoints import CheckpointStorage

        self.plan = plan
        self.graph = graph = plan.job.graph
        protocol = get_protocol(
            plan.protocol,
            graph,
            allow_deadlock=plan.allow_deadlock,
            alignment_timeout=plan.alignment_timeout,
        )
        self.local = set(plan.tasks)
        # Every task restarts from a checkpoint here: no consumption order to keep.
        self.tasks = {t: StreamTask(graph, t, protocol, history=False) for t in plan.tasks}
        for t, task in self.tasks.items():  # a failure spec's declines (StreamTask.declines)
            task.declines = declines(plan.failures, plan.attempt, str(t))
            task.columnar = plan.columnar
        if plan.columnar and any(o.function.emits_columns() for o in graph.operators.values()):
            load_columns()  # as it sets up, not at the first batch (idle_seconds, pacing)
        self.storage = CheckpointStorage(plan.storage_url, write_latency=plan.storage_latency)
        self.writer = SnapshotWriter(self.storage, plan.job_id)
        self.queues: dict[ChannelId, deque[Any]] = {
            c: deque() for t in plan.tasks for c in graph.inputs[t] if c.src in self.local
        }
        restoring = time.monotonic()
        self.log = EventLog(plan, self.tasks)
        # channel state of channels from other hosts, delivered before what they bring
        self.refill = restore(plan, self.storage, self.tasks, self.queues, self.log)
        self.finished: set[TaskId] = set()
        self.consumed: dict[TaskId, int] = dict.fromkeys(plan.tasks, 0)
        self.aligning = Alignments(self.queues)  # where a channel is blocked (alignment.py)
        self.blocked = self.aligning.blocked  # the local channels held back now
        self.clock = time.monotonic  # the alignment timer's (protocols/alignment_timer.py)
        self.injected = Injections(plan.failures, plan.attempt, self.log.on_fire)
        self.overtake = protocol.barriers_overtake  # barriers take the priority lane
        self.announced = Announcements(self.tasks)  # announced barriers
        self.announce = self.announced.timed and not self.overtake
        self.split = self.overtake or self.announce  # priority events between pieces
        self.inbox = Inbox()
        self.sources = [t for t in plan.tasks if graph.kind(t) in ("source", "process")]
        self.metrics: dict[str, Any] = {"records_in": 0, "records_out": 0, "checkpoints": []}
        self.cpu_started = time.process_time()  # the CPU the host costs (its threads too)
        if plan.attempt > 0:  # reading the checkpoint and restoring every task from it
            self.metrics["restore_seconds"] = time.monotonic() - restoring
        self.quiescence = terminates_by_quiescence(graph)
        self.early: list[Any] = []  # commands that came while the host was connecting
        self.pacing = SourcePacing(plan)

    def attach(self, net: DataPlane, client: ControlClient) -> None:
        """Send and hear through ``net`` and ``client`` from now on."""
        self.net = self.aligning.net = net
        self.client = self.log.client = client
        self.outbox = Outbox(
            self.local,
            self.queues,
            net,
            overtake=self.overtake,
            announced=self.announced if self.announce else None,
            deliver=lambda c, m: self._deliver(c, m, client),
            tally=self._tally,
            clock=lambda: self.clock(),
        )

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> HostResult:
        net, client = open_planes(self.plan)
        self.attach(net, client)
        running = False
        try:

            def check() -> None:  # while connecting: stop at once if the attempt is over
                self.early.extend(self._stopped(client.poll()))

            connect_channels(self.plan, net, client, check)
            # Restored channel state of a channel from another host comes before anything the
            # network brings on it: deliver it first, in order.
            for c, records in self.refill.items():
                for r in records:
                    self._deliver(c, r, client)
            running = True
            return self._loop(client)
        except HostStopped:
            raise
        except BaseException as e:  # the peers hear why, and stop at once
            if self._run_stopped(client, e):  # a peer ended on the final Stop first
                raise RunStopped(f"host {self.plan.host_id}: the run was stopped") from e
            client.failed(e, setup=not running)
            raise
        finally:
            self.log.ship(force=True, last=True)
            self.writer.close()
            net.close()
            client.close()

    def _loop(self, client: ControlClient) -> HostResult:
        plan, net = self.plan, self.net
        started = time.monotonic()
        last_flush = started
        while self.quiescence or len(self.finished) < len(self.tasks):
            commands, self.early = self.early + self._stopped(client.poll()), []
            if any(type(cmd) is Terminate for cmd in commands):
                # Quiescent: nothing to drain, and the checkpoints no longer matter.
                return self._end(client, started, drain=False)
            for cmd in commands:
                self._command(cmd, client)
            if self.writer.pending:
                self._acknowledge(client)
                time.sleep(0)  # let the writer's thread take the GIL between its system calls
            busy = self._emit(client)
            busy = self._local(client) or busy
            self._receive(client, 0.0 if busy else 0.001)
            self._due(client)
            self.log.ship()
            now = time.monotonic()
            if now - last_flush >= plan.flush_every or not busy:
                net.flush()
                last_flush = now
        return self._end(client, started, drain=True)

    def _receive(self, client: ControlClient, timeout: float) -> None:
        """Deliver what the data plane hands out (waiting up to ``timeout`` s: idle): priority
        events first, then frames in pieces, priority events between (:mod:`.inbox`)."""
        began = time.monotonic()
        self.inbox.extend(self._kept(self.net.poll(timeout)))
        self._tally("idle_seconds", (time.monotonic() - began) if timeout else 0.0)
        while self.inbox:
            c, m = self.inbox.take(self.split)
            self._deliver(c, m, client)
            if self.split:
                self._between(client)

    def _local(self, client: ControlClient) -> bool:
        """Deliver what waits in the unblocked local queues; True if anything did."""
        busy = False
        for c, q in self.queues.items():
            if q and c not in self.blocked:
                busy = True
                # All of it: a task fed from the network can put more than a batch a
                # round in a local queue, and a barrier must not wait behind a backlog.
                n = len(q)
                while n and q and c not in self.blocked:
                    m, whole = take(q, self.split)
                    n -= whole
                    self._deliver(c, m, client)
                    if self.split:
                        self._between(client)
        return busy

    def _between(self, client: ControlClient) -> None:
        """Between two pieces (:mod:`absnb.runtime.host.inbox`): triggers, priority events, acks."""
        if self.writer.pending:
            self._acknowledge(client)
        for cmd in self._stopped(client.poll()):
            if type(cmd) is Trigger:
                self._command(cmd, client)
            else:
                self.early.append(cmd)
        for c, m in self._kept(self.net.poll_urgent()):
            self._deliver(c, m, client)
        self._due(client)

    def _due(self, client: ControlClient) -> None:
        """Carry out what the alignment timer decides now (protocols/alignment_timer.py)."""
        for t in [t for t, task in self.tasks.items() if task.timer is not None]:
            out = Out()
            switched, late = self.announced.due(self.tasks[t], self.clock(), out)
            if switched:
                self._tally("switched")
                self.log.add("switched", t)
            self._after(t, out, client)
            for c, m in late:
                self._deliver(c, m, client)

    def _kept(self, received: list[tuple[ChannelId, Any]]) -> list[tuple[ChannelId, Any]]:
        """``received``, its priority barriers overtaking what is held here (or kept)."""
        out = []
        for c, m in received:
            if type(m) is Overtaking:
                m = Overtaking(m.message, (*self.inbox.held(c), *m.overtaken))
                if self.announce:
                    self.announced.keep(c, m, self.clock())
                    continue
            out.append((c, m))
        return out

    def _end(self, client: ControlClient, started: float, drain: bool) -> HostResult:
        """Every task has finished: drain (if ``drain``), report and return the result."""
        net = self.net
        net.flush()
        while drain and (net.pending_output() or self.writer.pending):
            for cmd in self._stopped(client.poll()):
                self._command(cmd, client)
            net.poll(0.001)
            if self.writer.pending:
                self._acknowledge(client, 0.001)
        for task in self.tasks.values():  # a sink pre-commits its last records (end_input)
            task.state = task.fn.end_input(task.state)
        self.log.ship(force=True)
        self.metrics["records_out"] = self.outbox.records_out
        self.metrics["columnar_batches"] = self.outbox.columnar_batches
        self.metrics["cpu_seconds"] = time.process_time() - self.cpu_started
        result = host_result(
            self.plan, self.tasks, self.metrics, self.aligning.lasted, net.stats(), started
        )
        client.finished(result.metrics)
        return result

    def _stopped(self, commands: list[Any]) -> list[Any]:
        """``commands``, unless one of them is Stop: then raise :class:`HostStopped`."""
        for cmd in commands:
            if isinstance(cmd, Stop):
                raise (RunStopped if cmd.final else HostStopped)(
                    f"host {self.plan.host_id} of attempt {self.plan.attempt} was stopped by "
                    f"the coordinator: {cmd.reason or 'no reason given'}"
                )
        return commands

    def _run_stopped(self, client: ControlClient, error: BaseException) -> bool:
        """Whether the coordinator stopped the whole run (a final Stop came, or comes within
        :data:`RUN_STOP_WAIT` s), so that ``error``, what a peer ending on that Stop did to
        this host, is no failure of its own. An injected failure is always one."""
        if isinstance(error, InjectedFailure | KeyboardInterrupt):
            return False
        deadline = time.monotonic() + RUN_STOP_WAIT
        while True:
            try:
                commands = client.poll()
            except Exception:  # the connection is gone: no Stop to read
                return False
            if any(type(c) is Stop and c.final for c in (*self.early, *commands)):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def _emit(self, client: ControlClient) -> bool:
        busy = False
        for t in self.sources:
            if t in self.finished:
                continue
            task = self.tasks[t]
            log = self.plan.job.inputs.get(t, ())
            left = 0 if task.halted else len(log) - task.offset
            n = self.pacing.entries(t, task.offset, left, self.queues, self.net.pending_output())
            if n > 0:
                out = Out()
                task.emit_batch(log[task.offset : task.offset + n], out)
                busy = True
                self.metrics["records_in"] += n
                self._count(t, n)
                self.outbox.send(out.sends)
            if not self.quiescence and task.finished(len(log)):
                self._finish(t)
        return busy

    def _deliver(self, c: ChannelId, m: Any, client: ControlClient) -> None:
        t = c.dst
        kind = type(m)
        self.log.delivered(c, m)
        out = Out()
        task = self.tasks[t]
        if kind is EndOfInput:
            task.end_of_input(c, out)
            self._after(t, out, client)
            if task.finished(len(self.plan.job.inputs.get(t, ()))):
                self._finish(t)
            return
        if kind is RecordBatch or kind is Record:
            batch = kind is RecordBatch
            if batch:
                task.deliver_batch(c, m, out)
            else:
                task.deliver(c, m, out)
            self._after(t, out, client)
            self._count(t, len(m) if batch else 1)
            return
        barrier = m.message if kind is Overtaking else m
        if type(barrier) is CancelCheckpointMarker:
            self._tally("cancellation_markers")
        elif self.announce and kind is not Overtaking:  # in order: its announcement is moot
            self.announced.arrived(c, barrier.checkpoint_id)
        n = checkpoint_of(barrier)
        if kind is Overtaking:
            task.deliver_overtaking(c, barrier, m.overtaken, out)
        else:
            task.deliver(c, m, out)
        self._after(t, out, client)
        self._join(n, client)

    def _after(self, t: TaskId, out: Out, client: ControlClient) -> None:
        """Carry out what ``t`` produced, controls then sends (the one place for it)."""
        if out.controls:
            self.log.controls(t, out.controls)
            self._controls(t, out.controls, client)
        self.outbox.send(out.sends)

    def _join(self, n: int, client: ControlClient) -> None:
        """Every task here cut off from barriers joins checkpoint ``n`` if it has not taken
        part in it (:meth:`~absnb.task.StreamTask.join` decides)."""
        for t in [t for t, task in self.tasks.items() if task.cut_off()]:  # in a fixed order
            out = Out()
            self.tasks[t].join(n, out)
            self._after(t, out, client)

    def _count(self, t: TaskId, n: int) -> None:
        total = self.consumed[t] = self.consumed[t] + n
        self.injected.after_records(str(t), total)

    def _tally(self, counter: str, by: float = 1) -> None:
        self.metrics[counter] = self.metrics.get(counter, 0) + by

    def _acknowledge(self, client: ControlClient, timeout: float = 0.0) -> None:
        """Acknowledge the snapshots written since the last call (durable ones only); decline
        the checkpoint of a snapshot the storage refused (the coordinator aborts it)."""
        for w in self.writer.written(timeout):
            s = w.snapshot
            if isinstance(w, WriteFailed):
                reason = str(w.error)  # could not write the snapshot of task ... : why
                self.log.add("declined", s.task, None, s.checkpoint_id, detail=reason)
                client.decline(s.task, s.checkpoint_id, reason, write_failed=True)
                self._tally("failed_writes")
                continue
            size = w.stats["state_size"] + w.stats["channel_state_size"]
            self.log.ack(s, size)  # the log reaches the driver before the acknowledgement
            client.ack(Ack(s.task, s.checkpoint_id, w.key, size, w.alignment_s, w.stats))
            self.metrics["checkpoints"].append(s.checkpoint_id)

    def _finish(self, t: TaskId) -> None:
        if t in self.finished:
            return
        self.finished.add(t)
        out = Out()
        for c in self.graph.outputs[t]:  # nothing, barriers included, is sent on it after
            self.tasks[t].end_output(c, out)
        self.outbox.send(out.sends)


def load_columns() -> None:
    """Import what columnar batches need (Arrow, NumPy and the kernels: some 0.2 s of CPU
    in a fresh worker)."""
    import pyarrow.compute
    import pyarrow.ipc  # noqa: F401

    import absnb.core.vector_hash
    import absnb.operators.columnar  # noqa: F401


def run_host(plan: HostPlan) -> HostResult:
    """Run one host to the end (what each Spark task of the barrier stage does)."""
    try:
        host = Host(plan)  # restores the tasks: user code and storage run here
    except BaseException as e:
        report_setup_failure(plan, e)
        raise
    try:
        return host.run()
    finally:
        # Spark keeps this worker for its next task: free the tasks' state now, and give
        # the pages back, rather than hold the heap the state grew to while it waits.
        del host
        release_freed()
