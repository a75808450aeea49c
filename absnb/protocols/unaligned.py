"""Unaligned checkpoints (Flink FLIP-76).

Flink's documentation ("Checkpointing under backpressure", *Unaligned checkpoints*):
"Unaligned checkpoints contain in-flight data (i.e., data stored in buffers) as part of
the checkpoint state, allowing checkpoint barriers to overtake these buffers. Thus, the
checkpoint duration becomes independent of the current throughput as checkpoint barriers
are effectively not embedded into the stream of data anymore."

Unaligned (FLIP-76; Flink's ``SingleCheckpointBarrierHandler`` in its unaligned states):

1. The barrier is a priority event: it is consumed ahead of the records queued before it
   on its channel (:meth:`~UnalignedBarrierHandler.on_overtaking_barrier` receives those
   ``overtaken`` records).
2. On the first barrier of checkpoint n the task snapshots its state at once, forwards the
   barrier (which overtakes its queued output in turn, at the next task) and starts
   recording its other inputs, never blocking any.
3. The state of an input channel c is what the barrier on c overtook, preceded by the
   records consumed on c between the snapshot and that barrier (before the snapshot for
   the first channel: none): exactly the records sent before the barrier and not
   reflected in the task's state. In the simulator one queue models the sender's output
   buffer, the network and the receiver's input buffer, so the queued output a task's
   barrier overtakes is recorded, as Flink's output buffers are, in the state of that
   channel.
4. When the barrier has arrived on every input the task acknowledges. Recovery re-injects
   each channel state, in order, ahead of anything else on its channel.

ABS with an alignment timeout starts aligned and switches to this mode at a task whose
alignment lasts too long: :mod:`absnb.protocols.aligned_timeout`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from absnb.core.effects import (
    Acknowledge,
    BroadcastEvent,
    Effect,
    RecordChannelState,
    SnapshotState,
)
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Record, RecordBatch, as_records
from absnb.protocols.aligning import (
    AligningHandler,
    CollectingBarriers,
    InProgress,
    Recorded,
    WaitingForFirstBarrier,
)
from absnb.protocols.base import NO_EFFECTS, SnapshotProtocol, task_handler_args


@dataclass(frozen=True, slots=True)
class RecordingInFlight:
    """Unaligned phase: the task's state of ``checkpoint_id`` is taken; the inputs in
    ``missing`` have not delivered their barrier and are being recorded."""

    checkpoint_id: CheckpointId
    missing: tuple[ChannelId, ...]

    def barrier_received(
        self, checkpoint_id: CheckpointId, channel: ChannelId | None
    ) -> RecordingInFlight:
        """The barrier of ``channel``, one of :attr:`missing`, arrived: it is recorded no
        longer (its channel state is complete)."""
        return RecordingInFlight(self.checkpoint_id, tuple(c for c in self.missing if c != channel))

    def waiting_on(self, inputs: tuple[ChannelId, ...]) -> tuple[ChannelId, ...]:
        """The inputs whose barrier has not arrived."""
        return self.missing


class UnalignedBarrierHandler(AligningHandler):
    """FLIP-76 at one task.

    Attributes:
        recorded: the records consumed on each input in ``missing`` since the snapshot.
    """

    __slots__ = ("recorded",)
    recorded_fields: ClassVar[tuple[str, ...]] = ("recorded",)

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
    ) -> None:
        super().__init__(task, inputs, loop_inputs, initiator)
        self.recorded: Recorded = {}

    # -- barriers ----------------------------------------------------------------------------
    def on_overtaking_barrier(
        self,
        channel: ChannelId,
        message: CheckpointBarrier,
        overtaken: tuple[Record | RecordBatch, ...],
    ) -> Sequence[Effect]:
        """A barrier that overtook ``overtaken`` on ``channel`` (FLIP-76 priority event; under
        an alignment timeout, a barrier of a checkpoint overdue here:
        :mod:`absnb.protocols.alignment_timer`)."""
        return self._on_barrier(channel, message.checkpoint_id, overtaken, late=True)

    def _barrier(
        self,
        state: WaitingForFirstBarrier | CollectingBarriers | InProgress,
        channel: ChannelId | None,
        n: CheckpointId,
        overtaken: tuple[Record | RecordBatch, ...],
        late: bool,
        effects: list[Effect],
    ) -> Sequence[Effect]:
        """FLIP-76: snapshot on the first barrier, forward it, record the other inputs; a
        later barrier closes the recording of its input."""
        if isinstance(state, RecordingInFlight):
            return self._close(channel, overtaken, state, effects)
        assert isinstance(
            state, WaitingForFirstBarrier | CollectingBarriers
        )  # RecordingInFlight is its only other state
        received = state.barrier_received(n, channel).received
        return self._go_unaligned(n, received, overtaken, channel, effects)

    def _go_unaligned(
        self,
        n: CheckpointId,
        received: frozenset[ChannelId | None],
        overtaken: tuple[Record | RecordBatch, ...],
        channel: ChannelId | None,
        effects: list[Effect],
    ) -> list[Effect]:
        effects += [SnapshotState(n), BroadcastEvent(CheckpointBarrier(n))]
        for c in self.inputs:
            if c in received:  # barrier in: its state is what that barrier overtook
                effects.append(RecordChannelState(n, c, overtaken if c == channel else ()))
        missing = tuple(c for c in self.inputs if c not in received and c in self.expected)
        if missing:
            self.state = RecordingInFlight(n, missing)
            self.recorded = {c: [] for c in missing}
        else:
            self._finish(n)
            effects.append(Acknowledge(n))
        return effects

    def _close(
        self,
        channel: ChannelId | None,
        overtaken: tuple[Record | RecordBatch, ...],
        state: RecordingInFlight,
        effects: list[Effect],
    ) -> list[Effect]:
        if channel is None or channel not in state.missing:
            return effects  # a second barrier on one channel cannot happen; Nil is ignored
        n = state.checkpoint_id
        records = (*self.recorded.pop(channel), *overtaken)
        effects.append(RecordChannelState(n, channel, records))
        recording = state.barrier_received(n, channel)
        if recording.missing:
            self.state = recording
        else:
            self._finish(n)
            effects.append(Acknowledge(n))
        return effects

    def on_end_of_input(self, channel: ChannelId) -> Sequence[Effect]:
        """An ended channel counts as aligned, and its in-flight data is complete (FLIP-147):
        it closes the channel for a checkpoint being recorded or aligned."""
        state = self.state
        if isinstance(state, RecordingInFlight) and channel in state.missing:
            self.expected = self.expected - {channel}
            return self._close(channel, (), state, [])
        return self._aligned_at_end(channel)

    # -- records -----------------------------------------------------------------------------
    def on_record(self, channel: ChannelId, record: Record) -> Sequence[Effect]:
        """Record ``record`` if its channel's barrier is still missing."""
        rs = self.recorded.get(channel)
        if rs is not None:
            rs.append(record)
        return NO_EFFECTS

    def on_records(self, channel: ChannelId, batch: RecordBatch) -> Sequence[Effect]:
        """:meth:`on_record` of each record of ``batch`` (recorded as it came)."""
        rs = self.recorded.get(channel)
        if rs is not None:
            rs.append(batch)
        return NO_EFFECTS

    # -- views -------------------------------------------------------------------------------
    def aligning(self) -> bool:
        return isinstance(self.state, CollectingBarriers)

    def recorded_channels(self) -> tuple[ChannelId, ...]:
        return tuple(self.recorded)

    def recorded_count(self, channel: ChannelId) -> list[tuple[CheckpointId, int]]:
        state = self.state
        if not isinstance(state, RecordingInFlight) or channel not in self.recorded:
            return []
        return [(state.checkpoint_id, len(as_records(self.recorded[channel])))]

    def _how(self, checkpoint_id: CheckpointId) -> str:
        """How the task came to record ``checkpoint_id``'s in-flight data, for views."""
        return ""

    def describe(self) -> str:
        state = self.state
        if isinstance(state, CollectingBarriers):
            got = len([c for c in state.received if c is not None])
            return f"aligning checkpoint {state.checkpoint_id} ({got}/{len(self.inputs)} barriers)"
        if isinstance(state, RecordingInFlight):
            rec = sum(len(as_records(rs)) for rs in self.recorded.values())
            return (
                f"checkpoint {state.checkpoint_id} {self._how(state.checkpoint_id)}recording "
                f"in-flight data of {', '.join(map(str, state.missing))} ({rec} recorded)"
            )
        return "waiting for first barrier"


class UnalignedProtocol(SnapshotProtocol):
    """FLIP-76 unaligned checkpoints: barriers overtake records, which become channel state."""

    name = "unaligned"
    title = "Unaligned checkpoints (FLIP-76)"
    short_title = "Unaligned checkpoints"
    records_channel_state = True
    channel_state_kind = "in-flight data"
    without_channel_state = "no records were in flight"
    blocks_inputs = False
    barriers_overtake = True

    def handler(self, graph: ExecutionGraph, task: TaskId) -> UnalignedBarrierHandler:
        return UnalignedBarrierHandler(*task_handler_args(graph, task))
