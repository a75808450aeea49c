"""ABS with an alignment timeout.

Flink's ``execution.checkpointing.aligned-checkpoint-timeout``: "checkpoints will start
aligned. If during checkpointing, the checkpoint start delay exceeds this timeout, alignment
will timeout and checkpoint barrier will start working as unaligned checkpoint". The task
aligns as in Alg. 1 (lines 7-9, blocking the inputs the barrier came on); when the runtime
reports that its alignment has lasted ``alignment_timeout`` (steps in the simulator, seconds
on Spark) it switches (:meth:`AlignedWithTimeoutHandler.on_alignment_timeout`): snapshot
now, forward the barrier, unblock, and record the inputs whose barrier is still missing, as
unaligned checkpoints do (:mod:`absnb.protocols.unaligned`). A barrier still queued when its
checkpoint is older than the timeout overtakes the records before it (the simulator delivers
it so), which switches the task too. An alignment that ends in time is Alg. 1's and records
no channel.

When a checkpoint is overdue at a task is decided by :mod:`absnb.protocols.alignment_timer`
(the task's :meth:`~absnb.task.StreamTask.tick`), on the clock its runtime gives.
"""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core.effects import Block, Effect, Unblock
from absnb.core.errors import ProtocolSettingError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import Record, RecordBatch
from absnb.protocols.aligning import CollectingBarriers, InProgress, WaitingForFirstBarrier
from absnb.protocols.base import NO_EFFECTS, SnapshotProtocol, task_handler_args
from absnb.protocols.unaligned import RecordingInFlight, UnalignedBarrierHandler

DEFAULT_ALIGNMENT_TIMEOUT = 10.0
"""Steps in the simulator (seconds on Spark) an alignment may last before it switches."""


class AlignedWithTimeoutHandler(UnalignedBarrierHandler):
    """ABS Alg. 1 at one task that switches to unaligned when its alignment times out
    (Flink: ``AlternatingCollectingBarriers`` -> ``AlternatingCollectingBarriersUnaligned``).

    Attributes:
        switched: the checkpoints this task switched from aligned to unaligned (for views).
    """

    __slots__ = ("switched",)

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
    ) -> None:
        super().__init__(task, inputs, loop_inputs, initiator)
        self.switched: tuple[CheckpointId, ...] = ()

    def _barrier(
        self,
        state: WaitingForFirstBarrier | CollectingBarriers | InProgress,
        channel: ChannelId | None,
        n: CheckpointId,
        overtaken: tuple[Record | RecordBatch, ...],
        late: bool,
        effects: list[Effect],
    ) -> Sequence[Effect]:
        """Alg. 1's alignment (lines 7-15), unless the barrier is ``late``: the runtime let it
        overtake, as its checkpoint is overdue here (Flink: an announced barrier processed
        as unaligned once the alignment timed out), which switches the task."""
        if isinstance(state, RecordingInFlight):
            return self._close(channel, overtaken, state, effects)
        assert isinstance(
            state, WaitingForFirstBarrier | CollectingBarriers
        )  # RecordingInFlight is its only other state
        collecting = state.barrier_received(n, channel)
        if late:
            self.switched = (*self.switched, n)
            if isinstance(state, CollectingBarriers):
                effects.extend(Unblock(c) for c in self.inputs if c in state.received)
            return self._go_unaligned(n, collecting.received, overtaken, channel, effects)
        if collecting.aligned(self.expected):
            return self._aligned(n, collecting, channel, effects)  # Alg. 1, lines 10-15
        self.state = collecting  # Alg. 1, lines 7-9
        if channel is not None:
            effects.append(Block(channel))
        return effects

    def on_alignment_timeout(self) -> Sequence[Effect]:
        """The task's alignment has lasted the timeout: switch to unaligned: snapshot now,
        forward the barrier, unblock, and record the inputs whose barrier is missing."""
        state = self.state
        if not isinstance(state, CollectingBarriers):
            return NO_EFFECTS
        n = state.checkpoint_id
        self.switched = (*self.switched, n)
        effects: list[Effect] = [Unblock(c) for c in self.inputs if c in state.received]
        return self._go_unaligned(n, state.received, (), None, effects)

    def _how(self, checkpoint_id: CheckpointId) -> str:
        return "switched to unaligned, " if checkpoint_id in self.switched else ""


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

    def handler(self, graph: ExecutionGraph, task: TaskId) -> AlignedWithTimeoutHandler:
        return AlignedWithTimeoutHandler(*task_handler_args(graph, task))

    def __repr__(self) -> str:
        return f"<protocol {self.name} alignment_timeout={self.alignment_timeout}>"
