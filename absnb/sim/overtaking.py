"""Which barrier a delivery takes ahead of the records queued before it, and delivering it.

A barrier overtakes under unaligned checkpoints (FLIP-76: a barrier is a priority event)
and, under an alignment timeout, when its checkpoint is overdue at the receiving task
(:mod:`absnb.protocols.alignment_timer` decides; even at the head of the channel); where,
:func:`~absnb.protocols.overtaken.overtaking_position` says for every runtime (a
cancellation marker is never a priority event, an end of input is overtaken by nothing).
:func:`overtaking_at` says where the
barrier is; :func:`deliver_overtaking` delivers it (the Deliver effect of
:mod:`absnb.sim.rules` asks the one and calls the other).
"""

from __future__ import annotations

from itertools import islice

from absnb.core.ids import ChannelId
from absnb.core.messages import CheckpointBarrier
from absnb.protocols.overtaken import overtaken, overtaking_position
from absnb.sim.effects import outcome
from absnb.sim.events import Event
from absnb.sim.state import WorldState
from absnb.task import Out


def overtaking_at(state: WorldState, channel: ChannelId) -> int | None:
    """Where the barrier a delivery of ``channel`` takes ahead of the messages queued before
    it is (a priority event under unaligned, FLIP-76; or a barrier of a checkpoint overdue at
    the task under an alignment timeout, even at the head:
    :func:`~absnb.protocols.overtaken.overtaking_position` decides); None: the head is
    delivered in order."""
    queue = state.channels[channel]
    timer = state.tasks[channel.dst].timer
    if timer is not None:
        overdue = timer.overdue(state.clock)
        return overtaking_position(queue, False, overdue) if overdue else None
    if state.static.overtake and type(queue[0]) is not CheckpointBarrier:
        return overtaking_position(queue, True)
    return None


def deliver_overtaking(state: WorldState, channel: ChannelId, i: int) -> Event:
    """Deliver the barrier at position ``i`` of ``channel`` ahead of what is queued before it
    (FLIP-76: a barrier is a priority event and overtakes in-flight records)."""
    queue = state.writable_channel(channel)
    barrier = queue[i]
    assert isinstance(barrier, CheckpointBarrier)  # ``i``: found by overtaking_at
    records = overtaken(islice(queue, i))  # it overtakes cancellation markers too
    del queue[i]
    task = state.writable_task(channel.dst)
    out = Out()
    task.deliver_overtaking(channel, barrier, records, out)
    event = Event(state.clock, state.static.deliver[channel], channel.dst, barrier)
    event.overtaken = len(records)
    return outcome(state, task, out, event)
