"""Announced barriers: how an aligned checkpoint with an alignment timeout switches to
unaligned on Spark without waiting for barriers stuck behind a backlog.

Flink (``execution.checkpointing.aligned-checkpoint-timeout``): "checkpoints will start
aligned. If during checkpointing, the checkpoint start delay exceeds this timeout,
alignment will timeout and checkpoint barrier will start working as unaligned checkpoint".
Flink's sender puts an announcement of each barrier on the priority lane and the barrier
itself in order; the receiver processes the barrier in order, unless the alignment times
out, when it processes the announced barrier as an unaligned one, overtaking the buffers in
front of it.

Here a host sends such a barrier twice: first on the priority lane (an
:class:`~absnb.runtime.data_plane.priority.Overtaking` at the receiver, with every record between
the receiver's consumption and the barrier), then in order. The receiving host keeps the
announcement (:meth:`Announcements.keep`) and drops it when the barrier arrives in order
(:meth:`Announcements.arrived`). When a checkpoint is overdue at a task is decided by
:mod:`absnb.protocols.alignment_timer`, the one rule the simulator follows too, here on the
host's clock in seconds: an announcement (or a trigger) is when the task hears of a
checkpoint (:meth:`~absnb.task.StreamTask.hear`), and :meth:`Announcements.due` says
whether the task switched to unaligned and which announcements to deliver as overtaking
barriers now.
:meth:`~absnb.task.StreamTask.deliver_overtaking` leaves out the records the task consumed
since the announcement, so the channel state is what is still in front of the barrier; the
in-order barrier is ignored when it comes.
"""

from __future__ import annotations

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.runtime.data_plane.priority import Overtaking
from absnb.task import Out, StreamTask


class Announcements:
    """The announced barriers a host keeps, per input channel in arrival order; each task's
    alignment timer is its own (:attr:`~absnb.task.StreamTask.timer`).

    Args:
        tasks: the host's tasks; they are timed if their protocol has an alignment timeout.
    """

    def __init__(self, tasks: dict[TaskId, StreamTask]) -> None:
        self.tasks = tasks
        self.timed = any(task.untimed is not None for task in tasks.values())
        self.kept: dict[ChannelId, list[Overtaking]] = {}

    def keep(self, channel: ChannelId, announced: Overtaking, now: float) -> None:
        """A barrier was announced on ``channel`` at ``now``: its task hears of it."""
        self.kept.setdefault(channel, []).append(announced)
        self.tasks[channel.dst].hear(announced.message.checkpoint_id, now)

    def arrived(self, channel: ChannelId, checkpoint_id: CheckpointId) -> None:
        """A barrier arrived in order on ``channel``: its announcement (and older ones) is
        no longer needed."""
        kept = self.kept.get(channel)
        if kept:
            kept[:] = [a for a in kept if a.message.checkpoint_id > checkpoint_id]
            if not kept:
                del self.kept[channel]

    def due(
        self, task: StreamTask, now: float, out: Out
    ) -> tuple[bool, list[tuple[ChannelId, Overtaking]]]:
        """What ``task``'s alignment timer decides at ``now``
        (:meth:`~absnb.task.StreamTask.tick`, which puts a switch's sends and controls in
        ``out``): whether it switched to unaligned, and the announcements (in the order of its
        inputs) to deliver as overtaking barriers now, forgotten here."""
        switched, overdue = task.tick(now, out)
        late: list[tuple[ChannelId, Overtaking]] = []
        for c in task.inputs if overdue and self.kept else ():
            kept = self.kept.pop(c, [])
            late.extend((c, a) for a in kept if a.message.checkpoint_id in overdue)
            later = [a for a in kept if a.message.checkpoint_id not in overdue]
            if later:
                self.kept[c] = later
        return switched, late
