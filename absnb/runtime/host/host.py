"""A host: one process of the real runtime (one Spark task) running some tasks of the job.

Single-threaded: the loop polls the control plane (triggers, notify-checkpoint-complete,
aborts), lets sources emit a batch, delivers what arrived on unblocked inputs to the tasks'
:class:`~absnb.task.StreamTask` (the objects the simulator drives), and carries out what
they return (``Host._after``): controls, then sends, to a local queue when both ends
live here, else over the data plane. A task's snapshot goes to checkpoint storage, then to
the coordinator. An end of input is delivered to its task like any message; a task whose
inputs have all ended finishes and ends its outputs, and joins every later checkpoint it
hears of (:meth:`~absnb.task.StreamTask.join`, FLIP-147). Once all its tasks have finished,
the host tells the coordinator so and goes on serving its commands until it says
:class:`~absnb.runtime.control_plane.messages.Finish`: the job's final checkpoint, if one is
due, has completed (:mod:`absnb.runtime.control_plane.final_checkpoint`). The barriers of
a protocol whose barriers overtake (FLIP-76) take the priority lane
(:mod:`absnb.runtime.data_plane.priority`); a cancellation marker travels in order, as in
Flink (:func:`~absnb.protocols.overtaken.priority_event`). A job whose end cannot travel as
end-of-input (:func:`~absnb.runtime.plan.terminates_by_quiescence`) runs until the coordinator
detects quiescence from the hosts' answers to its probes. Every wait is bounded and listens to the
coordinator: a :class:`~absnb.runtime.control_plane.messages.Stop` ends the host at once with
:class:`~absnb.runtime.host.stopping.HostStopped`, so that an old attempt frees its Spark slot fast
(:mod:`absnb.runtime.host.stopping`). This module is the loop; what a host is made of is
:mod:`absnb.runtime.host.parts`, what it carries out :mod:`absnb.runtime.host.carry_out`.
"""

from __future__ import annotations

import time
from typing import Any

from absnb.core.events import checkpoint_of
from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import CancelCheckpointMarker, EndOfInput, Record, RecordBatch
from absnb.runtime.control_plane.client import ControlClient, report_setup_failure
from absnb.runtime.control_plane.messages import Command, Finish, Terminate, Trigger
from absnb.runtime.data_plane.priority import Overtaking
from absnb.runtime.events.memory import release_freed
from absnb.runtime.host.carry_out import CarriesOut
from absnb.runtime.host.inbox import take
from absnb.runtime.host.report import host_result
from absnb.runtime.host.stopping import HostStopped, RunStopped, run_stopped, stopped
from absnb.runtime.plan import HostPlan, HostResult
from absnb.task import Out

__all__ = ["Host", "HostStopped", "RunStopped", "run_host"]


class Host(CarriesOut):
    """Runs the tasks of one :class:`~absnb.runtime.plan.HostPlan` until they have all
    finished and the coordinator says to finish (what it is made of:
    :class:`~absnb.runtime.host.parts.HostParts`)."""

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> HostResult:
        net, client = self.open()
        running = False
        try:

            def check() -> None:  # while connecting: stop at once if the attempt is over
                self.early.extend(self._stopped(client.poll()))

            self.connect(check)
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
            if run_stopped(client, self.early, e):  # a peer ended on the final Stop first
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
        while True:
            commands, self.early = self.early + self._stopped(client.poll()), []
            if any(type(cmd) is Terminate for cmd in commands):
                # Quiescent: nothing to drain, and the checkpoints no longer matter.
                return self._end(client, started, drain=False)
            for cmd in commands:
                self._command(cmd, client)
            if any(type(cmd) is Finish for cmd in commands):  # the final checkpoint is done
                return self._end(client, started, drain=True)
            if not (self.ended or self.quiescence) and len(self.finished) == len(self.tasks):
                self._report_ended(client)
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

    def _receive(self, client: ControlClient, timeout: float) -> None:
        """Deliver what the data plane hands out (waiting up to ``timeout`` s: idle): priority
        events first, then frames in pieces, priority events between (:mod:`.inbox`)."""
        began = time.monotonic()
        self.inbox.extend(self._kept(self.net.poll(timeout)))
        self._tally("idle_seconds", (time.monotonic() - began) if timeout else 0.0)
        if self.announce:  # a barrier announced after its alignment timed out overtakes now
            self._due(client)
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
        """The host is done (told to ``Finish``, or quiescent): drain (if ``drain``), report
        and return the result."""
        net = self.net
        net.flush()
        while drain and (net.pending_output() or self.writer.pending):
            for cmd in self._stopped(client.poll()):
                self._command(cmd, client)
            net.poll(0.001)
            if self.writer.pending:
                self._acknowledge(client, 0.001)
        self.log.ship(force=True)
        self.metrics["records_out"] = self.outbox.records_out
        self.metrics["columnar_batches"] = self.outbox.columnar_batches
        self.metrics["cpu_seconds"] = time.process_time() - self.cpu_started
        result = host_result(
            self.plan, self.tasks, self.metrics, self.aligning.lasted, net.stats(), started
        )
        client.finished(result.metrics)
        return result

    def _stopped(self, commands: list[Command]) -> list[Command]:
        """``commands``, unless one of them is Stop (:func:`~.stopping.stopped` raises)."""
        return stopped(self.plan, commands)

    def _emit(self, client: ControlClient) -> bool:
        busy = False
        for t in self.sources:
            if t in self.finished:
                continue
            task = self.tasks[t]
            log = self.plan.job.inputs.get(t, ())
            left = 0 if task.halted else len(log) - task.offset
            n = self.pacing.entries(
                t, task.offset, left, self.queues, self.net.pending_output(), self.notified
            )
            if n > 0:
                out = Out()
                task.emit_batch(log[task.offset : task.offset + n], out)
                busy = True
                self.metrics["records_in"] += n
                self._count(t, n)
                self.outbox.send(out.sends)
            if not self.quiescence and task.finished(len(log)):
                self._finish(t, client)
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
                self._finish(t, client)
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

    def _finish(self, t: TaskId, client: ControlClient) -> None:
        if t in self.finished:
            return
        self.finished.add(t)
        out = Out()
        self.tasks[t].finish(out)  # its input ends (end_input), then each output
        self._after(t, out, client)


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
