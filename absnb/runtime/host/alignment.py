"""Where a host blocks a channel during alignment, and how long each alignment lasts.

The protocol decides (ABS Alg. 1, line 8: ``block(c)``; the task returns a
:class:`~absnb.core.effects.Block` or :class:`~absnb.core.effects.Unblock` control), and
``Host._after`` hands it here. A channel whose both ends live on
this host is held in its local queue (the host's loop skips a blocked queue); any other is
blocked in the data plane, which stops reading it and leaves the sender to its flow
control (:meth:`~absnb.runtime.data_plane.transport.DataPlane.block`). An alignment lasts from the
first input a task blocks for a checkpoint to the snapshot that ends it (Flink's "alignment
duration" of a subtask), a metric in wall-clock seconds. When an alignment times out is
not decided here: :mod:`absnb.protocols.alignment_timer` does (:mod:`absnb.runtime.host.announce`).
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Protocol

from absnb.core.ids import ChannelId, TaskId


class Blocks(Protocol):
    """What blocks a remote channel: the data plane."""

    def block(self, channel: ChannelId) -> None: ...

    def unblock(self, channel: ChannelId) -> None: ...


class Alignments:
    """The inputs the tasks of one host hold back, and how long each of them aligns.

    Args:
        local: the channels both of whose ends live on this host (held in local queues).

    Attributes:
        blocked: the local channels blocked now.
        net: the data plane, once the host has one (remote channels block there).
    """

    def __init__(self, local: Collection[ChannelId]) -> None:
        self.local = frozenset(local)
        self.blocked: set[ChannelId] = set()
        self.net: Blocks | None = None
        self.started: dict[TaskId, float] = {}
        self.lasted: dict[TaskId, float] = {}

    def block(self, t: TaskId, channel: ChannelId) -> None:
        """``t`` blocks ``channel``: its alignment began now, unless it had already."""
        self.started.setdefault(t, time.monotonic())
        if channel in self.local:
            self.blocked.add(channel)
        elif self.net is not None:
            self.net.block(channel)

    def unblock(self, channel: ChannelId) -> None:
        """``channel`` is released: what is held on it flows again."""
        if channel in self.local:
            self.blocked.discard(channel)
        elif self.net is not None:
            self.net.unblock(channel)

    def snapshot(self, t: TaskId) -> float:
        """``t`` took its snapshot: its alignment (0 if it did not align) in seconds."""
        began = self.started.pop(t, None)
        lasted = self.lasted[t] = time.monotonic() - began if began is not None else 0.0
        return lasted

    def last(self, t: TaskId) -> float:
        """The last alignment of ``t`` in seconds (0 if it never aligned)."""
        return self.lasted.get(t, 0.0)
