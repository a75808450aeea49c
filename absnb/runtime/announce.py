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
:class:`~absnb.runtime.priority.Overtaking` at the receiver, with every record between the
receiver's consumption and the barrier), then in order. The receiving host keeps the
announcement (:meth:`Announcements.keep`) and drops it when the barrier arrives in order
(:meth:`Announcements.arrived`); it delivers it as an overtaking barrier once its
checkpoint's alignment has timed out at the task (:meth:`Announcements.due`): the task
switched to unaligned and records the channel, or the announcement is older than the
timeout. :meth:`~absnb.task.StreamTask.deliver_overtaking` leaves out the records the task
consumed since the announcement, so the channel state is what is still in front of the
barrier; the in-order barrier is ignored when it comes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from absnb.core.ids import ChannelId, TaskId
from absnb.runtime.priority import Overtaking
from absnb.task import StreamTask


class Announcements:
    """The announced barriers a host keeps, per input channel, with when they came."""

    def __init__(self) -> None:
        self.kept: dict[ChannelId, tuple[Overtaking, float]] = {}

    def keep(self, channel: ChannelId, announced: Overtaking) -> None:
        """A barrier was announced on ``channel`` (a newer one replaces an older one)."""
        self.kept[channel] = (announced, time.monotonic())

    def arrived(self, channel: ChannelId, checkpoint_id: int) -> None:
        """A barrier arrived in order on ``channel``: its announcement (or an older one's)
        is no longer needed."""
        got = self.kept.get(channel)
        if got is not None and got[0].message.checkpoint_id <= checkpoint_id:
            del self.kept[channel]

    def due(
        self, tasks: Mapping[TaskId, StreamTask], timeout: float
    ) -> list[tuple[ChannelId, Overtaking]]:
        """The announcements to deliver as overtaking barriers now (and forget): those
        older than ``timeout`` seconds, and those of a checkpoint their task is recording
        the channel for, having switched to unaligned."""
        now = time.monotonic()
        out = []
        for c, (announced, at) in list(self.kept.items()):
            n = announced.message.checkpoint_id
            recording = any(
                w.checkpoint_id == n and not w.blocked and c in w.channels
                for w in tasks[c.dst].handler.waiting()
            )
            if recording or now - at >= timeout:
                del self.kept[c]
                out.append((c, announced))
        return out
