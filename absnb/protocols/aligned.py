"""ABS for acyclic graphs: paper Algorithm 1 (Flink's aligned checkpoints).

On a barrier on input c the task blocks c (Alg. 1, lines 7-9); once barriers have arrived
on every input (line 10) it broadcasts the barrier (line 12), takes its snapshot (line 13)
and unblocks every input (lines 14-15). Records go through the user function (lines
18-22). The global snapshot holds task states only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from absnb.core.effects import (
    Acknowledge,
    Block,
    BroadcastEvent,
    Effect,
    SnapshotState,
    Unblock,
)
from absnb.core.errors import CyclicGraphError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker
from absnb.protocols.base import (
    NO_EFFECTS,
    BarrierHandler,
    SnapshotProtocol,
    Waiting,
    abort_subsumed,
    as_barrier,
    task_handler_args,
)

NIL: ChannelId | None = None
"""The paper's "Nil" input: the coordinator injects barriers into an initiator through it."""


@dataclass(frozen=True, slots=True)
class WaitingForFirstBarrier:
    """No barrier of a new checkpoint has arrived yet."""


@dataclass(frozen=True, slots=True)
class CollectingBarriers:
    """Barriers of ``checkpoint_id`` have arrived on ``received``; those inputs are blocked."""

    checkpoint_id: CheckpointId
    received: frozenset[ChannelId | None]


AlignmentState = WaitingForFirstBarrier | CollectingBarriers
WAITING = WaitingForFirstBarrier()


class AlignedBarrierHandler(BarrierHandler):
    """Paper Alg. 1 at one task.

    Attributes:
        state: the named alignment state.
        last: the highest checkpoint id finished or aborted here; older barriers are stale
            and ignored (they can reach a task after an abort).
    """

    __slots__ = ("expected", "last", "state")

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
    ) -> None:
        super().__init__(task, inputs, loop_inputs, initiator)
        self.expected: frozenset[ChannelId | None] = frozenset(
            (*self.inputs, NIL) if self.initiator else self.inputs
        )
        self.state: AlignmentState = WAITING
        self.last: CheckpointId = 0

    def on_trigger(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Barrier on the Nil input (Alg. 1, line 7: the coordinator's injection, never blocked)."""
        return self._on_barrier(NIL, CheckpointBarrier(checkpoint_id))

    def on_barrier(
        self, channel: ChannelId, message: CheckpointBarrier | Marker
    ) -> Sequence[Effect]:
        """Alg. 1, lines 6-15."""
        return self._on_barrier(channel, as_barrier(message, self.task))

    def _on_barrier(
        self, channel: ChannelId | None, barrier: CheckpointBarrier
    ) -> Sequence[Effect]:
        n = barrier.checkpoint_id
        if n <= self.last:
            return NO_EFFECTS
        effects: list[Effect] = []
        state = self.state
        if isinstance(state, CollectingBarriers):
            if n < state.checkpoint_id:
                return NO_EFFECTS
            if n > state.checkpoint_id:
                # A newer checkpoint overtook this one (possible only after an abort): give
                # up the older alignment and report it aborted, as Flink does.
                effects.extend(Unblock(c) for c in self.inputs if c in state.received)
                effects.extend(abort_subsumed(state.checkpoint_id, n))
                state = WAITING
        received = (
            state.received | {channel}
            if isinstance(state, CollectingBarriers)
            else frozenset((channel,))
        )
        if received >= self.expected:
            # Alg. 1, lines 10-15: all barriers in: broadcast, snapshot, unblock all.
            self.state = WAITING
            self.last = n
            effects.append(BroadcastEvent(barrier))
            effects.append(SnapshotState(n))
            effects.append(Acknowledge(n))
            effects.extend(Unblock(c) for c in self.inputs if c in received and c != channel)
            return effects
        # Alg. 1, lines 7-9: block the input the barrier came on (not Nil).
        self.state = CollectingBarriers(n, received)
        if channel is not None:
            effects.append(Block(channel))
        return effects

    def on_end_of_input(self, channel: ChannelId) -> Sequence[Effect]:
        """An ended channel counts as aligned for this and every later checkpoint (FLIP-147:
        "checkpoint barriers are considered received on finished channels")."""
        self.expected = self.expected - {channel}
        state = self.state
        if isinstance(state, CollectingBarriers) and state.received >= self.expected:
            received = state.received - {NIL}
            self.state = WAITING
            self.last = state.checkpoint_id
            n = state.checkpoint_id
            return [
                BroadcastEvent(CheckpointBarrier(n)),
                SnapshotState(n),
                Acknowledge(n),
                *(Unblock(c) for c in self.inputs if c in received),
            ]
        return NO_EFFECTS

    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Drop the alignment of ``checkpoint_id`` and unblock its inputs."""
        self.last = max(self.last, checkpoint_id)
        state = self.state
        if isinstance(state, CollectingBarriers) and state.checkpoint_id <= checkpoint_id:
            self.state = WAITING
            return [Unblock(c) for c in self.inputs if c in state.received]
        return NO_EFFECTS

    def latest_checkpoint_id(self) -> CheckpointId:
        """The checkpoint being aligned, else the last one finished or aborted here."""
        state = self.state
        return state.checkpoint_id if isinstance(state, CollectingBarriers) else self.last

    def waiting(self) -> list[Waiting]:
        """The inputs whose barrier has not arrived, and the blocked ones."""
        state = self.state
        if not isinstance(state, CollectingBarriers):
            return []
        missing = tuple(c for c in self.inputs if c not in state.received)
        blocked = tuple(c for c in self.inputs if c in state.received)
        return [Waiting(self.task, state.checkpoint_id, missing, blocked)]

    def clone(self) -> AlignedBarrierHandler:
        new = AlignedBarrierHandler.__new__(AlignedBarrierHandler)
        new.task, new.inputs, new.loop_inputs, new.initiator = (
            self.task,
            self.inputs,
            self.loop_inputs,
            self.initiator,
        )
        new.expected, new.state, new.last = self.expected, self.state, self.last
        return new

    def key(self) -> object:
        return (self.state, self.last, self.expected)

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
