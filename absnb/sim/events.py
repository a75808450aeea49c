"""What one step did: the event the trace keeps for every action applied."""

from __future__ import annotations

from dataclasses import dataclass

from absnb.core.format import show_message
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import OnChannel
from absnb.i18n import gettext as _
from absnb.sim.actions import Action
from absnb.task import Send


@dataclass(slots=True)
class Event:
    """One step of a run.

    Attributes:
        step: the world's clock before the step (0, 1, 2, ...).
        action: the action applied.
        task: the task that acted (receiver, emitter, initiator, failed task), if one did.
        message: the message delivered, for a delivery.
        sent: every message sent in the step, with its channel, in order.
        blocked, unblocked: channels blocked and unblocked in the step.
        snapshots: ``(task, checkpoint id)`` for every task state recorded in the step.
        completed, aborted: checkpoints that completed or were aborted in the step.
        dropped: True when the delivered record was a duplicate and dropped.
        restored: for a recovery, the checkpoint restored (0: the initial state), and
            the tasks that restarted.
        overtaken: for a barrier delivered ahead of queued records (unaligned
            checkpoints), how many records it overtook.
        switched: tasks whose alignment reached the alignment timeout in the step and
            that switched to unaligned.
    """

    step: int
    action: Action
    task: TaskId | None = None
    message: OnChannel | None = None
    sent: tuple[Send, ...] = ()
    blocked: tuple[ChannelId, ...] = ()
    unblocked: tuple[ChannelId, ...] = ()
    snapshots: tuple[tuple[TaskId, CheckpointId], ...] = ()
    completed: tuple[CheckpointId, ...] = ()
    aborted: tuple[CheckpointId, ...] = ()
    dropped: bool = False
    restored: tuple[CheckpointId, tuple[TaskId, ...]] | None = None
    overtaken: int = 0
    switched: tuple[TaskId, ...] = ()

    def describe(self) -> str:
        """One line for a trace log, in the language set."""
        parts = [f"{self.step}: {self.action}"]
        if self.message is not None:
            parts.append(f"[{show_message(self.message)}]")
        if self.dropped:
            parts.append(_("(duplicate, dropped)"))
        if self.overtaken:
            parts.append(_("(overtook {n} records)").format(n=self.overtaken))
        parts.extend(_("{task} switches to unaligned").format(task=t) for t in self.switched)
        parts.extend(_("block {channel}").format(channel=c) for c in self.blocked)
        parts.extend(_("unblock {channel}").format(channel=c) for c in self.unblocked)
        parts.extend(
            _("{task} records state for {n}").format(task=t, n=n) for t, n in self.snapshots
        )
        parts.extend(_("checkpoint {n} complete").format(n=n) for n in self.completed)
        parts.extend(_("checkpoint {n} aborted").format(n=n) for n in self.aborted)
        if self.restored is not None:
            n, tasks = self.restored
            what = _("checkpoint {n}").format(n=n) if n else _("the initial state")
            parts.append(_("restored {k} tasks from {what}").format(k=len(tasks), what=what))
        return " ".join(parts)
