"""Where a host's tasks' sends go: to a local queue when both ends of the channel live on
this host, else over the data plane; a barrier that overtakes (FLIP-76) takes the priority
lane, locally by being delivered at once ahead of what its queue holds, and an announced
barrier (an alignment timeout without overtaking) goes twice, announced then in order."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, cast

from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import RECORD_TYPES, CheckpointBarrier, Record, RecordBatch
from absnb.protocols.overtaken import overtaken, priority_event
from absnb.runtime.data_plane.priority import Overtaking
from absnb.runtime.data_plane.transport import DataPlane
from absnb.runtime.host.announce import Announcements
from absnb.task import Send


class Outbox:
    """Sends for one host (:meth:`send`), counting the records sent (``records_out``) and
    the batches sent as columns (``columnar_batches``).

    Args:
        local: the tasks of this host.
        queues: the local channels' queues, by channel.
        net: the data plane, for the other channels.
        overtake: the protocol's barriers overtake (the priority lane).
        announced: the host's announced barriers (None: no alignment timeout to announce
            barriers for).
        deliver: delivers a message to its task at once (a local barrier that overtakes).
        tally: adds to a host's count by name (``dropped_barriers``).
        clock: the alignment timer's clock.
    """

    def __init__(
        self,
        local: set[TaskId],
        queues: dict[ChannelId, deque[Any]],
        net: DataPlane,
        *,
        overtake: bool,
        announced: Announcements | None,
        deliver: Callable[[ChannelId, Any], None],
        tally: Callable[[str, int], None],
        clock: Callable[[], float],
    ) -> None:
        self.local, self.queues, self.net = local, queues, net
        self.overtake, self.announced = overtake, announced
        self.deliver, self.tally, self.clock = deliver, tally, clock
        self.records_out = 0
        self.columnar_batches = 0

    def send(self, sends: Iterable[Send]) -> None:
        """Send each of ``sends``, in order."""
        net, queues, overtake, announced = self.net, self.queues, self.overtake, self.announced
        out = columns = 0
        for c, m in sends:
            kind = type(m)
            urgent = priority_event(m, overtake)  # never a cancellation marker
            announce = announced is not None and kind is CheckpointBarrier
            q = queues.get(c)
            if q is not None and c.src in self.local:
                if urgent and isinstance(m, CheckpointBarrier):  # a local priority lane
                    self.deliver(c, Overtaking(m, overtaken(q)))  # ahead of what q holds
                    continue
                if announced is not None and isinstance(m, CheckpointBarrier):
                    announced.keep(c, Overtaking(m, overtaken(q)), self.clock())
                q.append(m)
            else:
                try:
                    if urgent or announce:
                        net.send_priority(c, m)
                    if not urgent:
                        net.send(c, m)
                except ConnectionError:
                    # The receiver has ended: a barrier for it no longer matters (its host
                    # finished, or failed and the attempt fails); a record must not be lost.
                    if type(m) in RECORD_TYPES:
                        raise
                    self.tally("dropped_barriers", 1)
            if kind is RecordBatch:
                batch = cast("RecordBatch", m)
                out += len(batch)
                columns += type(batch.values) is not list
            else:
                out += kind is Record
        self.records_out += out
        self.columnar_batches += columns
