"""ABS for acyclic graphs: paper Algorithm 1 (Flink's aligned checkpoints).

On a barrier on input c the task blocks c (Alg. 1, lines 7-9); once barriers have arrived
on every input (line 10) it broadcasts the barrier (line 12), takes its snapshot (line 13)
and unblocks every input (lines 14-15). Records go through the user function (lines
18-22). The global snapshot holds task states only.
"""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core.effects import Block, Effect
from absnb.core.errors import CyclicGraphError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import Record, RecordBatch
from absnb.protocols.aligning import (
    NIL,
    WAITING,
    AligningHandler,
    CollectingBarriers,
    InProgress,
    WaitingForFirstBarrier,
)
from absnb.protocols.base import SnapshotProtocol, task_handler_args

__all__ = [
    "NIL",
    "WAITING",
    "AlignedBarrierHandler",
    "AlignedProtocol",
    "CollectingBarriers",
    "WaitingForFirstBarrier",
]


class AlignedBarrierHandler(AligningHandler):
    """Paper Alg. 1 at one task (:class:`~absnb.protocols.aligning.AligningHandler` keeps
    the expected inputs, ignores stale barriers and gives up subsumed checkpoints)."""

    __slots__ = ()

    def _barrier(
        self,
        state: WaitingForFirstBarrier | CollectingBarriers | InProgress,
        channel: ChannelId | None,
        n: CheckpointId,
        overtaken: tuple[Record | RecordBatch, ...],
        late: bool,
        effects: list[Effect],
    ) -> Sequence[Effect]:
        """Alg. 1, lines 6-15."""
        assert isinstance(
            state, WaitingForFirstBarrier | CollectingBarriers
        )  # Alg. 1 has no state past alignment
        collecting = state.barrier_received(n, channel)
        if collecting.aligned(self.expected):
            return self._aligned(n, collecting, channel, effects)  # lines 10-15
        # Alg. 1, lines 7-9: block the input the barrier came on (not Nil).
        self.state = collecting
        if channel is not None:
            effects.append(Block(channel))
        return effects

    def on_end_of_input(self, channel: ChannelId) -> Sequence[Effect]:
        """An ended channel counts as aligned for this and every later checkpoint (FLIP-147:
        "checkpoint barriers are considered received on finished channels")."""
        return self._aligned_at_end(channel)

    def describe(self) -> str:
        state = self.state
        if isinstance(state, CollectingBarriers):
            got = len([c for c in state.received if c is not None])
            return f"aligning checkpoint {state.checkpoint_id} ({got}/{len(self.inputs)} barriers)"
        return "waiting for first barrier"


class AlignedProtocol(SnapshotProtocol):
    """ABS Algorithm 1: barriers, alignment by blocking, task states only."""

    name = "abs"
    title = "ABS (Algorithm 1, acyclic)"
    short_title = "ABS Algorithm 1"
    without_channel_state = "ABS records no channel state"

    def __init__(self, allow_deadlock: bool = False) -> None:
        self.allow_deadlock = allow_deadlock

    def check(self, graph: ExecutionGraph) -> None:
        if graph.is_cyclic and not self.allow_deadlock:
            loops = ", ".join(sorted(f"{s}->{d}" for s, d in graph.back_edge_operators))
            raise CyclicGraphError(
                f"ABS Algorithm 1 deadlocks on job {graph.name!r}, which has cycles (back-edges: "
                f"{loops}): a loop head waits for a barrier that must first pass through itself. "
                "Use protocol 'abs-cyclic' (Algorithm 2), or pass allow_deadlock=True "
                "(--allow-deadlock) to run it anyway and watch the deadlock."
            )

    def handler(self, graph: ExecutionGraph, task: TaskId) -> AlignedBarrierHandler:
        return AlignedBarrierHandler(*task_handler_args(graph, task))
