"""No snapshots at all: the baseline, and what recovery falls back to (a restart from scratch)."""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core.effects import Effect
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker
from absnb.protocols.base import NO_EFFECTS, BarrierHandler, SnapshotProtocol, task_handler_args


class NoSnapshotHandler(BarrierHandler):
    """Ignores every trigger and barrier."""

    __slots__ = ()

    def on_trigger(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        return NO_EFFECTS

    def on_barrier(
        self, channel: ChannelId, message: CheckpointBarrier | Marker
    ) -> Sequence[Effect]:
        return NO_EFFECTS

    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        return NO_EFFECTS

    def clone(self) -> NoSnapshotHandler:
        return self  # stateless

    def key(self) -> object:
        return None

    def describe(self) -> str:
        return "no snapshots"


class NoSnapshots(SnapshotProtocol):
    """No checkpoints are ever taken; a failure restarts the job from the beginning."""

    name = "none"
    title = "No snapshots"
    max_concurrent = 0
    blocks_inputs = False
    may_be_declined = False
    exactly_once = False
    without_channel_state = "no snapshots are taken"

    def check(self, graph: ExecutionGraph) -> None:
        """A two-phase-commit sink commits only when a checkpoint completes (Flink's
        ``TwoPhaseCommitSinkFunction``): without checkpoints its output would never become
        visible, so such a job is refused here rather than left empty."""
        from absnb.core.errors import ProtocolSettingError
        from absnb.protocols.two_phase_commit import TwoPhaseCommitSink

        sinks = [str(t) for t in graph.tasks if isinstance(graph.function(t), TwoPhaseCommitSink)]
        if sinks:
            raise ProtocolSettingError(
                f"protocol 'none' takes no checkpoints, and {', '.join(sinks)} commit(s) "
                "output only when one completes (a two-phase-commit sink): nothing would "
                "ever become visible. Use a snapshot protocol ('abs', 'unaligned', "
                "'chandy-lamport', ...) or a sink without transactions."
            )

    def handler(self, graph: ExecutionGraph, task: TaskId) -> NoSnapshotHandler:
        return NoSnapshotHandler(*task_handler_args(graph, task))
