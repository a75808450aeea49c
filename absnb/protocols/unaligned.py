"""Unaligned checkpoints (Flink FLIP-76) and aligned checkpoints with an alignment timeout.

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

Aligned with an alignment timeout (Flink: ``execution.checkpointing.aligned-checkpoint-timeout``,
"checkpoints will start aligned. If during checkpointing, the checkpoint start delay exceeds
this timeout, alignment will timeout and checkpoint barrier will start working as unaligned
checkpoint"): the task aligns as in Alg. 1 (lines 7-9, blocking the inputs the barrier came
on); when the runtime reports that its alignment has lasted ``alignment_timeout`` (steps in
the simulator, seconds on Spark) it switches
(:meth:`~UnalignedBarrierHandler.on_alignment_timeout`): snapshot now, forward the barrier, unblock,
and record the inputs whose barrier is still missing, as above. A barrier still queued when its
checkpoint is older than the timeout overtakes the records before it (the simulator delivers it so),
which switches the task too. An alignment that ends in time is Alg. 1's and records no channel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from absnb.core.effects import (
    Acknowledge,
    Block,
    BroadcastEvent,
    Effect,
    RecordChannelState,
    SnapshotState,
    Unblock,
)
from absnb.core.errors import ProtocolSettingError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker, Record, RecordBatch, as_records
from absnb.protocols.aligned import NIL, WAITING, CollectingBarriers, WaitingForFirstBarrier
from absnb.protocols.base import (
    NO_EFFECTS,
    BarrierHandler,
    SnapshotProtocol,
    Waiting,
    abort_subsumed,
    as_barrier,
    task_handler_args,
)


@dataclass(frozen=True, slots=True)
class RecordingInFlight:
    """Unaligned phase: the task's state of ``checkpoint_id`` is taken; the inputs in
    ``missing`` have not delivered their barrier and are being recorded."""

    checkpoint_id: CheckpointId
    missing: tuple[ChannelId, ...]


UnalignedState = WaitingForFirstBarrier | CollectingBarriers | RecordingInFlight
"""``CollectingBarriers`` (Alg. 1's, imported) is the aligned phase of the timeout mode."""


class UnalignedBarrierHandler(BarrierHandler):
    """FLIP-76 at one task; with ``aligned_first`` it starts aligned and switches on timeout.

    Attributes:
        state: the named state.
        recorded: the records consumed on each input in ``missing`` since the snapshot.
        last: the highest checkpoint id taken or dropped here; older barriers are ignored.
        switched: checkpoints this task switched from aligned to unaligned (for views).
    """

    __slots__ = ("aligned_first", "expected", "last", "recorded", "state", "switched")

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
        *,
        aligned_first: bool = False,
    ) -> None:
        super().__init__(task, inputs, loop_inputs, initiator)
        self.aligned_first = aligned_first
        self.expected: frozenset[ChannelId | None] = frozenset(
            (*self.inputs, NIL) if self.initiator else self.inputs
        )
        self.state: UnalignedState = WAITING
        self.recorded: dict[ChannelId, list[Record | RecordBatch]] = {}
        self.last: CheckpointId = 0
        self.switched: tuple[CheckpointId, ...] = ()

    # -- barriers ----------------------------------------------------------------------------
    def on_trigger(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """The coordinator's barrier at an initiator (never blocked, nothing overtaken)."""
        return self._barrier(NIL, checkpoint_id, ())

    def on_barrier(
        self, channel: ChannelId, message: CheckpointBarrier | Marker
    ) -> Sequence[Effect]:
        """A barrier at the head of ``channel`` (it overtook nothing)."""
        return self._barrier(channel, as_barrier(message, self.task).checkpoint_id, ())

    def on_overtaking_barrier(
        self,
        channel: ChannelId,
        message: CheckpointBarrier,
        overtaken: tuple[Record | RecordBatch, ...],
    ) -> Sequence[Effect]:
        """A barrier that overtook ``overtaken`` on ``channel`` (FLIP-76 priority event; with
        ``aligned_first``, a barrier of a checkpoint overdue here, which switches the task:
        :mod:`absnb.protocols.alignment_timer`)."""
        return self._barrier(channel, message.checkpoint_id, overtaken, late=True)

    def _barrier(
        self,
        channel: ChannelId | None,
        n: CheckpointId,
        overtaken: tuple[Record | RecordBatch, ...],
        late: bool = False,
    ) -> Sequence[Effect]:
        if n <= self.last:
            return NO_EFFECTS
        effects: list[Effect] = []
        state = self.state
        current = state.checkpoint_id if not isinstance(state, WaitingForFirstBarrier) else None
        if current is not None and n < current:
            return NO_EFFECTS  # a late barrier of a checkpoint this task gave up
        if current is not None and n > current:
            # A newer checkpoint overtook this one (after an abort): give the old one up
            # and report it aborted (Flink: cancelSubsumedCheckpoint).
            effects.extend(self._drop())
            effects.extend(abort_subsumed(current, n))
            state = WAITING
        if isinstance(state, RecordingInFlight):
            return self._close(channel, overtaken, state, effects)
        if self.aligned_first and late:
            # The runtime let this barrier overtake: its checkpoint is overdue here (Flink:
            # an announced barrier processed as unaligned once the alignment timed out).
            self.switched = (*self.switched, n)
            if isinstance(state, CollectingBarriers):
                effects.extend(Unblock(c) for c in self.inputs if c in state.received)
                received = state.received | {channel}
            else:
                received = frozenset((channel,))
            return self._go_unaligned(n, received, overtaken, channel, effects)
        received = (
            state.received | {channel}
            if isinstance(state, CollectingBarriers)
            else frozenset((channel,))
        )
        if not self.aligned_first:
            # FLIP-76: snapshot on the first barrier, forward it, record the other inputs.
            return self._go_unaligned(n, received, overtaken, channel, effects)
        if received >= self.expected:
            # Alg. 1, lines 10-15: aligned in time.
            self.state = WAITING
            self.last = n
            effects += [BroadcastEvent(CheckpointBarrier(n)), SnapshotState(n), Acknowledge(n)]
            effects.extend(Unblock(c) for c in self.inputs if c in received and c != channel)
            return effects
        self.state = CollectingBarriers(n, received)  # Alg. 1, lines 7-9
        if channel is not None:
            effects.append(Block(channel))
        return effects

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
            self.state = WAITING
            self.last = n
            effects.append(Acknowledge(n))
        return effects

    def _close(
        self,
        channel: ChannelId | None,
        overtaken: tuple[Record | RecordBatch, ...],
        state: RecordingInFlight,
        effects: list[Effect],
    ) -> list[Effect]:
        if channel not in state.missing:
            return effects  # a second barrier on one channel cannot happen; Nil is ignored
        n = state.checkpoint_id
        records = (*self.recorded.pop(channel), *overtaken)
        effects.append(RecordChannelState(n, channel, records))
        missing = tuple(c for c in state.missing if c != channel)
        if missing:
            self.state = RecordingInFlight(n, missing)
        else:
            self.state = WAITING
            self.last = n
            effects.append(Acknowledge(n))
        return effects

    def on_end_of_input(self, channel: ChannelId) -> Sequence[Effect]:
        """An ended channel counts as aligned, and its in-flight data is complete (FLIP-147):
        it closes the channel for a checkpoint being recorded or aligned."""
        self.expected = self.expected - {channel}
        state = self.state
        if isinstance(state, RecordingInFlight) and channel in state.missing:
            return self._close(channel, (), state, [])
        if isinstance(state, CollectingBarriers) and state.received >= self.expected:
            n = state.checkpoint_id
            self.state = WAITING
            self.last = n
            return [
                BroadcastEvent(CheckpointBarrier(n)),
                SnapshotState(n),
                Acknowledge(n),
                *(Unblock(c) for c in self.inputs if c in state.received),
            ]
        return NO_EFFECTS

    def on_alignment_timeout(self) -> Sequence[Effect]:
        """The runtime says this task's alignment has lasted the timeout: switch to unaligned
        (Flink: ``AlternatingCollectingBarriers`` -> ``AlternatingCollectingBarriersUnaligned``).
        """
        state = self.state
        if not isinstance(state, CollectingBarriers):
            return NO_EFFECTS
        n = state.checkpoint_id
        self.switched = (*self.switched, n)
        effects: list[Effect] = [Unblock(c) for c in self.inputs if c in state.received]
        return self._go_unaligned(n, state.received, (), None, effects)

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

    # -- coordinator -------------------------------------------------------------------------
    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Drop ``checkpoint_id`` (and older) here: stop recording, unblock."""
        self.last = max(self.last, checkpoint_id)
        state = self.state
        if isinstance(state, WaitingForFirstBarrier) or state.checkpoint_id > checkpoint_id:
            return NO_EFFECTS
        return self._drop()

    def _drop(self) -> list[Effect]:
        state = self.state
        self.state = WAITING
        self.recorded = {}
        if isinstance(state, CollectingBarriers):
            return [Unblock(c) for c in self.inputs if c in state.received]
        return []

    # -- views -------------------------------------------------------------------------------
    def latest_checkpoint_id(self) -> CheckpointId:
        """The checkpoint being aligned or recorded, else the last one finished here."""
        state = self.state
        return self.last if isinstance(state, WaitingForFirstBarrier) else state.checkpoint_id

    def waiting(self) -> list[Waiting]:
        state = self.state
        if isinstance(state, CollectingBarriers):
            missing = tuple(c for c in self.inputs if c not in state.received)
            blocked = tuple(c for c in self.inputs if c in state.received)
            return [Waiting(self.task, state.checkpoint_id, missing, blocked)]
        if isinstance(state, RecordingInFlight):
            return [Waiting(self.task, state.checkpoint_id, state.missing, ())]
        return []

    def aligning(self) -> bool:
        return isinstance(self.state, CollectingBarriers)

    def recorded_channels(self) -> tuple[ChannelId, ...]:
        return tuple(self.recorded)

    def recorded_count(self, channel: ChannelId) -> list[tuple[CheckpointId, int]]:
        state = self.state
        if not isinstance(state, RecordingInFlight) or channel not in self.recorded:
            return []
        return [(state.checkpoint_id, len(as_records(self.recorded[channel])))]

    def clone(self) -> UnalignedBarrierHandler:
        new = UnalignedBarrierHandler.__new__(UnalignedBarrierHandler)
        new.task, new.inputs, new.loop_inputs, new.initiator = (
            self.task,
            self.inputs,
            self.loop_inputs,
            self.initiator,
        )
        new.aligned_first, new.expected, new.state = self.aligned_first, self.expected, self.state
        new.recorded = {c: list(rs) for c, rs in self.recorded.items()}
        new.last, new.switched = self.last, self.switched
        return new

    def key(self) -> object:
        recorded = tuple((c, as_records(rs)) for c, rs in self.recorded.items())
        return (self.state, recorded, self.last, self.expected)

    def describe(self) -> str:
        state = self.state
        if isinstance(state, CollectingBarriers):
            got = len([c for c in state.received if c is not None])
            return f"aligning checkpoint {state.checkpoint_id} ({got}/{len(self.inputs)} barriers)"
        if isinstance(state, RecordingInFlight):
            rec = sum(len(as_records(rs)) for rs in self.recorded.values())
            how = "switched to unaligned, " if state.checkpoint_id in self.switched else ""
            return (
                f"checkpoint {state.checkpoint_id} {how}recording in-flight data of "
                f"{', '.join(map(str, state.missing))} ({rec} recorded)"
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


DEFAULT_ALIGNMENT_TIMEOUT = 10.0
"""Steps in the simulator (seconds on Spark) an alignment may last before it switches."""


class AlignedWithTimeoutProtocol(SnapshotProtocol):
    """ABS Alg. 1 that switches to unaligned at a task whose alignment exceeds a timeout.

    Args:
        alignment_timeout: how long an alignment may last at one task (simulator steps,
            seconds on Spark) before the task switches to unaligned; 0 switches at once.
    """

    name = "abs-timeout"
    title = "ABS with alignment timeout"
    short_title = "ABS with alignment timeout"
    records_channel_state = True
    channel_state_kind = "in-flight data"
    without_channel_state = "every alignment finished within the timeout"

    def __init__(self, alignment_timeout: float = DEFAULT_ALIGNMENT_TIMEOUT, **_: object) -> None:
        if (
            isinstance(alignment_timeout, bool)
            or not isinstance(alignment_timeout, (int, float))
            or not alignment_timeout >= 0
        ):
            raise ProtocolSettingError(
                f"alignment_timeout must be a number >= 0 (simulator steps, seconds on "
                f"Spark), not {alignment_timeout!r}"
            )
        self.alignment_timeout = alignment_timeout

    def handler(self, graph: ExecutionGraph, task: TaskId) -> UnalignedBarrierHandler:
        return UnalignedBarrierHandler(*task_handler_args(graph, task), aligned_first=True)

    def __repr__(self) -> str:
        return f"<protocol {self.name} alignment_timeout={self.alignment_timeout}>"
