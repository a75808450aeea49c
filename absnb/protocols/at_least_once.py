"""At-least-once barrier tracking (Flink's ``CheckpointBarrierTracker``).

Flink's documentation ("Checkpointing", *Exactly Once vs. At Least Once*): "alignment may
add latency to the streaming program [...] Flink has a switch to skip the stream alignment
during a checkpoint. Checkpoint snapshots are still drawn as soon as an operator has seen
the checkpoint barrier from each input", and records that arrive after a barrier on one
input while others are still missing are processed at once, so after a failure "some
records may be replayed and processed twice".

A task never blocks an input. It counts the barriers of each pending checkpoint; when the
barrier of checkpoint n has arrived on every input (the coordinator's injection counting as
the input of an initiator) it snapshots, forwards the barrier and acknowledges
(``CheckpointBarrierTracker.processBarrier``: "all barriers received, trigger checkpoint").
Reaching checkpoint n drops every older pending one at the task, as the tracker does, since
a newer completed checkpoint subsumes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core.effects import Acknowledge, BroadcastEvent, Effect, SnapshotState
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker
from absnb.protocols.base import (
    NO_EFFECTS,
    BarrierHandler,
    SnapshotProtocol,
    Waiting,
    as_barrier,
    task_handler_args,
)

NIL: ChannelId | None = None
"""The coordinator's injection at an initiator, counted like an input (Alg. 1's "Nil")."""


class BarrierTrackerHandler(BarrierHandler):
    """Flink's ``CheckpointBarrierTracker`` at one task.

    Attributes:
        pending: for each checkpoint whose barriers are arriving, the inputs they arrived on
            (Flink: ``CheckpointBarrierCount``), oldest first.
        last: the highest checkpoint id taken or dropped here; older barriers are ignored.
        newest: the highest checkpoint id ever tracked here (Flink:
            ``latestPendingCheckpointID``): a first barrier of a checkpoint at or below it
            starts no tracking, since that checkpoint cannot succeed here any more.
    """

    __slots__ = ("expected", "last", "newest", "pending")

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
        self.pending: dict[CheckpointId, frozenset[ChannelId | None]] = {}
        self.last: CheckpointId = 0
        self.newest: CheckpointId = 0

    def on_trigger(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """The coordinator's barrier at an initiator."""
        return self._count(NIL, checkpoint_id)

    def on_barrier(
        self, channel: ChannelId, message: CheckpointBarrier | Marker
    ) -> Sequence[Effect]:
        """Count the barrier; never block ``channel``."""
        return self._count(channel, as_barrier(message, self.task).checkpoint_id)

    def _count(self, channel: ChannelId | None, n: CheckpointId) -> Sequence[Effect]:
        if n <= self.last:
            return NO_EFFECTS  # a barrier of a checkpoint taken or dropped here
        if n not in self.pending:
            # CheckpointBarrierTracker.processBarrier: "first barrier for that checkpoint
            # ID [...] add it only if it is newer than the latest checkpoint".
            if n <= self.newest:
                return NO_EFFECTS
            self.newest = n
        received = self.pending.get(n, frozenset()) | {channel}
        if not received >= self.expected:
            self.pending[n] = received
            return NO_EFFECTS
        return self._finish(n)  # every barrier of n is in

    def on_end_of_input(self, channel: ChannelId) -> Sequence[Effect]:
        """An ended channel counts as having delivered every barrier (FLIP-147)."""
        self.expected = self.expected - {channel}
        done = [n for n, r in self.pending.items() if r >= self.expected]
        return self._finish(max(done)) if done else NO_EFFECTS

    def _finish(self, n: CheckpointId) -> Sequence[Effect]:
        """Take checkpoint ``n``; older pending ones are dropped (subsumed)."""
        self.pending = {m: r for m, r in self.pending.items() if m > n}
        self.last = n
        return (BroadcastEvent(CheckpointBarrier(n)), SnapshotState(n), Acknowledge(n))

    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Forget the barriers of ``checkpoint_id`` and older; nothing is blocked."""
        self.last = max(self.last, checkpoint_id)
        self.newest = max(self.newest, checkpoint_id)
        self.pending = {m: r for m, r in self.pending.items() if m > checkpoint_id}
        return NO_EFFECTS

    def latest_checkpoint_id(self) -> CheckpointId:
        """The newest checkpoint tracked, taken or dropped here."""
        return max(self.newest, self.last)

    def waiting(self) -> list[Waiting]:
        """Inputs whose barrier has not arrived, per pending checkpoint (none is blocked)."""
        return [
            Waiting(self.task, n, tuple(c for c in self.inputs if c not in r), ())
            for n, r in sorted(self.pending.items())
        ]

    def clone(self) -> BarrierTrackerHandler:
        new = BarrierTrackerHandler.__new__(BarrierTrackerHandler)
        new.task, new.inputs, new.loop_inputs, new.initiator = (
            self.task,
            self.inputs,
            self.loop_inputs,
            self.initiator,
        )
        new.expected, new.pending, new.last = self.expected, dict(self.pending), self.last
        new.newest = self.newest
        return new

    def key(self) -> object:
        pending = tuple(sorted(self.pending.items(), key=lambda kv: kv[0]))
        return (pending, self.last, self.newest, self.expected)

    def describe(self) -> str:
        if not self.pending:
            return "waiting for first barrier"
        parts = []
        for n, r in sorted(self.pending.items()):
            got = len([c for c in r if c is not None])
            parts.append(f"tracking checkpoint {n} ({got}/{len(self.inputs)} barriers)")
        return "; ".join(parts)


class AtLeastOnceProtocol(SnapshotProtocol):
    """Barrier tracking without alignment: no blocking, duplicates after recovery."""

    name = "at-least-once"
    title = "At-least-once (barrier tracking)"
    short_title = "At-least-once barrier tracking"
    blocks_inputs = False
    exactly_once = False
    drops_duplicates = False
    without_channel_state = "at-least-once records no channel state"

    def handler(self, graph: ExecutionGraph, task: TaskId) -> BarrierTrackerHandler:
        return BarrierTrackerHandler(*task_handler_args(graph, task))
