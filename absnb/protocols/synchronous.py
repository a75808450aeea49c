"""Synchronous snapshots, the stop-the-world baseline (paper section 2 and Figure 6).

Naiad-style: (1) halt, (2) snapshot, (3) resume. A source halts when the checkpoint is
triggered and sends a barrier behind its last record; a barrier reaching a task on every
input means that input is drained, so the task snapshots (Alg. 2's alignment, which is
Alg. 1 on acyclic graphs) and halts its own production too. Nothing produces new input
until the coordinator reports the checkpoint complete (notify-checkpoint-complete), so the
whole job stands still for the duration of every checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core.effects import Effect, HaltSource, ResumeSource, SnapshotState
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker
from absnb.protocols.base import SnapshotProtocol, task_handler_args
from absnb.protocols.cyclic import CyclicBarrierHandler

RESUME = ResumeSource()


class SynchronousHandler(CyclicBarrierHandler):
    """Alg. 2's alignment, plus halting from the snapshot until the checkpoint completes."""

    __slots__ = ()

    def on_trigger(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Halt the source (step 1) and send the draining barrier."""
        return _halting(super().on_trigger(checkpoint_id))

    def on_barrier(
        self, channel: ChannelId, message: CheckpointBarrier | Marker
    ) -> Sequence[Effect]:
        """Inputs drained up to the barrier: snapshot (step 2) and stay halted."""
        return _halting(super().on_barrier(channel, message))

    def on_checkpoint_complete(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Step 3: resume."""
        return (RESUME,)

    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """An aborted checkpoint resumes the job too."""
        return (*super().on_checkpoint_aborted(checkpoint_id), RESUME)


def _halting(effects: Sequence[Effect]) -> Sequence[Effect]:
    for e in effects:
        if isinstance(e, SnapshotState):
            return (*effects, HaltSource(e.checkpoint_id))
    return effects


class SynchronousProtocol(SnapshotProtocol):
    """Stop the world: halt the sources, drain, snapshot every task, resume."""

    name = "synchronous"
    title = "Synchronous (stop the world)"
    halts_sources = True
    records_channel_state = True
    channel_state_kind = "backup log"
    logs_loop_inputs = True
    without_channel_state = "synchronous snapshots drain every channel first"

    def handler(self, graph: ExecutionGraph, task: TaskId) -> SynchronousHandler:
        return SynchronousHandler(*task_handler_args(graph, task))
