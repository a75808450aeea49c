"""Which barrier a delivery takes ahead of the records queued before it, and delivering it.

A barrier overtakes under unaligned checkpoints (FLIP-76: a barrier is a priority event)
and, under an alignment timeout, when its checkpoint is overdue at the receiving task
(:mod:`absnb.protocols.alignment_timer` decides; even at the head of the channel). An end
of input overtakes nothing and nothing overtakes it. :func:`overtaking_at` says where the
barrier is; :func:`deliver_overtaking` delivers it (the Deliver effect of
:mod:`absnb.sim.rules` asks the one and calls the other).
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from absnb.core.ids import ChannelId, CheckpointId
from absnb.core.messages import (
    RECORD_TYPES,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
)
from absnb.protocols.overtaken import overtaken
from absnb.sim.effects import outcome
from absnb.sim.events import Event
from absnb.sim.state import WorldState
from absnb.task import Send


def overtaking_at(state: WorldState, channel: ChannelId) -> int | None:
    """Where the barrier a delivery of ``channel`` takes ahead of the records queued before
    it is (unaligned, FLIP-76; or of a checkpoint overdue at the task under an alignment
    timeout, even at the head: :mod:`absnb.protocols.alignment_timer`); None: the head is
    delivered in order."""
    queue = state.channels[channel]
    if channel.dst in state.aligning:
        return _overdue_barrier(queue, state.aligning[channel.dst].overdue(state.clock))
    if state.static.overtake and type(queue[0]) in RECORD_TYPES:
        for i, m in enumerate(queue):
            if type(m) is EndOfInput:
                return None  # an end overtakes nothing
            if type(m) not in RECORD_TYPES:
                return i
    return None


def deliver_overtaking(state: WorldState, channel: ChannelId, i: int) -> Event:
    """Deliver the barrier at position ``i`` of ``channel`` ahead of what is queued before it
    (FLIP-76: a barrier is a priority event and overtakes in-flight records)."""
    queue = state.writable_channel(channel)
    barrier = queue[i]
    # ``i``: the first priority event queued (an end of input overtakes nothing)
    assert isinstance(barrier, CheckpointBarrier | CancelCheckpointMarker)
    records = overtaken(islice(queue, i))  # an overdue barrier overtakes markers too
    del queue[i]
    task = state.writable_task(channel.dst)
    sends: list[Send] = []
    controls = task.deliver_overtaking(channel, barrier, records, sends)
    event = Event(state.clock, state.static.deliver[channel], channel.dst, barrier)
    event.overtaken = len(records)
    return outcome(state, task, sends, controls, event)


def _overdue_barrier(queue: Any, overdue: frozenset[CheckpointId]) -> int | None:
    """Where the first barrier of an overdue checkpoint queued in ``queue`` is (it overtakes
    whatever is before it, as an announced barrier on the priority lane does)."""
    if not overdue:
        return None
    for i, m in enumerate(queue):
        kind = type(m)
        if kind is CheckpointBarrier and m.checkpoint_id in overdue:
            return i
        if kind is EndOfInput:
            return None
    return None
