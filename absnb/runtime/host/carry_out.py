"""What a host carries out, one table each: the coordinator's commands to its tasks
(trigger, notify-checkpoint-complete, abort, probe) and the controls its tasks return
(block, unblock, snapshot, acknowledge, drop, decline), and, once a task's snapshot is
written, its acknowledgement to the coordinator (``CarriesOut._acknowledge``); once its
tasks have all finished, that they ended and what its sinks hold uncommitted
(``CarriesOut._report_ended``, FLIP-147). The tasks decide
(:class:`~absnb.task.StreamTask`); the host only does what they say."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from absnb.core.effects import Block, Decline, SnapshotState, Unblock
from absnb.core.ids import TaskId
from absnb.core.snapshot import TaskSnapshot
from absnb.runtime.control_plane.client import ControlClient
from absnb.runtime.control_plane.messages import (
    Aborted,
    Ack,
    Command,
    Finish,
    Notify,
    Probe,
    Terminate,
    Trigger,
)
from absnb.runtime.failures import committing_to
from absnb.runtime.host.parts import HostParts
from absnb.runtime.host.report import probe_report
from absnb.runtime.host.snapshot_writer import WriteFailed
from absnb.task import Control, Dropped, Out, uncommitted


class CarriesOut(HostParts):
    """The host's two tables (a base of :class:`~absnb.runtime.host.host.Host`)."""

    _after: Callable[[TaskId, Out, ControlClient], None]
    _join: Callable[[int, ControlClient], None]

    def _command(self, cmd: Command, client: ControlClient) -> None:
        """Carry out one control-plane command (not Stop)."""
        COMMANDS[type(cmd)](self, cmd, client)

    def _controls(self, t: TaskId, controls: Sequence[Control], client: ControlClient) -> None:
        """Carry out what task ``t`` returned."""
        for ctl in controls:
            CONTROLS[type(ctl)](self, t, ctl, client)

    # -- commands ----------------------------------------------------------------------------
    def _trigger(self, cmd: Trigger, client: ControlClient) -> None:
        n = cmd.checkpoint_id
        for t, task in self.tasks.items():
            if t in cmd.tasks:
                out = Out()
                task.trigger(n, out, self.clock())
                self.log.command(t, n, False)
                self._after(t, out, client)
        self._join(n, client)

    def _notify(self, cmd: Notify, client: ControlClient) -> None:
        n = cmd.checkpoint_id
        for t, task in self.tasks.items():
            out = Out()
            committing = committing_to(task.state, n)
            self.injected.notified(str(t), n, after_commit=False, committing=committing)
            task.checkpoint_complete(n, out)
            self.injected.notified(str(t), n, after_commit=True, committing=committing)
            self.log.command(t, n, True)
            self._after(t, out, client)
        self.notified = max(self.notified, n)
        if self.ended:  # the coordinator waits to hear what is left uncommitted now
            self._report_ended(client)

    def _aborted(self, cmd: Aborted, client: ControlClient) -> None:
        n = cmd.checkpoint_id
        for t, task in self.tasks.items():
            out = Out()
            task.checkpoint_aborted(n, out)
            self.log.command(t, n, False)
            self._after(t, out, client)

    def _probe(self, cmd: Probe, client: ControlClient) -> None:
        client.report(probe_report(self.plan, self.tasks, self.queues, cmd.round))

    def _report_ended(self, client: ControlClient) -> None:
        """Every task here has finished: tell the coordinator, with the output the sinks
        hold uncommitted as of the newest notification carried out (it decides the final
        checkpoint, FLIP-147); the host then waits for ``Finish``."""
        self.ended = True
        client.ended(uncommitted(self.tasks.values()), self.notified)

    # -- controls ----------------------------------------------------------------------------
    def _block(self, t: TaskId, ctl: Block, client: ControlClient) -> None:
        self.aligning.block(t, ctl.channel)  # ABS Alg. 1, line 8

    def _unblock(self, t: TaskId, ctl: Unblock, client: ControlClient) -> None:
        self.aligning.unblock(ctl.channel)

    def _snapshot_state(self, t: TaskId, ctl: SnapshotState, client: ControlClient) -> None:
        self.aligning.snapshot(t)
        self.injected.during_checkpoint(str(t), ctl.checkpoint_id)

    def _task_snapshot(self, t: TaskId, ctl: TaskSnapshot, client: ControlClient) -> None:
        self.writer.submit(ctl, self.aligning.last(t))  # written, then acknowledged

    def _dropped(self, t: TaskId, ctl: Dropped, client: ControlClient) -> None:
        self._tally("dropped")

    def _decline(self, t: TaskId, ctl: Decline, client: ControlClient) -> None:
        client.decline(t, ctl.checkpoint_id, ctl.reason)  # the coordinator aborts it
        self._tally("declined")

    # -- what the snapshot writer has written ------------------------------------------------
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


COMMANDS: dict[type, Callable[[Any, Any, ControlClient], None]] = {
    Trigger: CarriesOut._trigger,
    Notify: CarriesOut._notify,
    Aborted: CarriesOut._aborted,
    Probe: CarriesOut._probe,
    Terminate: lambda host, cmd, client: None,  # the loop ends on it
    Finish: lambda host, cmd, client: None,  # the loop ends on it
}
CONTROLS: dict[type, Callable[[Any, TaskId, Any, ControlClient], None]] = {
    Block: CarriesOut._block,
    Unblock: CarriesOut._unblock,
    SnapshotState: CarriesOut._snapshot_state,
    TaskSnapshot: CarriesOut._task_snapshot,
    Dropped: CarriesOut._dropped,
    Decline: CarriesOut._decline,
}
