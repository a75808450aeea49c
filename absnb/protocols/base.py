"""What every snapshot protocol offers its runtime.

A protocol is a factory of per-task handlers. A handler is a sans-IO state machine: each
``on_*`` method takes one input and returns the effects (:mod:`absnb.core.effects`) that the
runtime carries out in order. Handlers never send, sleep, read a clock or draw a random
number, so the simulator and the Spark runtime drive the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from absnb.core.effects import Effect
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker, Record, RecordBatch

NO_EFFECTS: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class Waiting:
    """What a task still waits for in a snapshot that has not finished (for deadlock reports)."""

    task: TaskId
    checkpoint_id: CheckpointId
    channels: tuple[ChannelId, ...]
    blocked: tuple[ChannelId, ...]


class BarrierHandler:
    """The per-task half of a snapshot protocol.

    Subclasses implement the ``on_*`` methods. ``inputs`` are the task's input channels,
    ``loop_inputs`` those that are back-edges (paper's L_t), ``initiator`` whether the
    coordinator injects checkpoints into this task (the paper's "Nil" input).
    """

    __slots__ = ("initiator", "inputs", "loop_inputs", "task")

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
    ) -> None:
        self.task = task
        self.inputs = inputs
        self.loop_inputs = loop_inputs
        self.initiator = initiator

    def on_trigger(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """The coordinator starts checkpoint ``checkpoint_id`` at this task."""
        raise NotImplementedError

    def on_barrier(
        self, channel: ChannelId, message: CheckpointBarrier | Marker
    ) -> Sequence[Effect]:
        """A barrier (or marker) arrived on ``channel``."""
        raise NotImplementedError

    def on_record(self, channel: ChannelId, record: Record) -> Sequence[Effect]:
        """A record arrived on ``channel``; the task processes it after this call."""
        return NO_EFFECTS

    def on_records(self, channel: ChannelId, batch: RecordBatch) -> Sequence[Effect]:
        """The records of ``batch`` arrived on ``channel`` (the real runtime's batches): what
        :meth:`on_record` of each in turn does."""
        if type(self).on_record is BarrierHandler.on_record:
            return NO_EFFECTS
        effects: list[Effect] = []
        for record in batch.records():
            effects.extend(self.on_record(channel, record))
        return effects

    def on_checkpoint_complete(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Every task acknowledged ``checkpoint_id`` (Flink: notifyCheckpointComplete)."""
        return NO_EFFECTS

    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """The coordinator gave up on ``checkpoint_id``: drop its progress, unblock inputs."""
        raise NotImplementedError

    def waiting(self) -> list[Waiting]:
        """Snapshots this task has started and not finished, and what they wait for."""
        return []

    def recorded_channels(self) -> tuple[ChannelId, ...]:
        """Input channels whose records are being recorded now (Chandy-Lamport channel
        state, Alg. 2 backup log), for views."""
        return ()

    def recorded_count(self, channel: ChannelId) -> list[tuple[CheckpointId, int]]:
        """``(checkpoint id, records recorded so far)`` for a channel being recorded, oldest
        checkpoint first."""
        return []

    def clone(self) -> BarrierHandler:
        """An independent copy (named states are immutable; recorded lists are copied)."""
        raise NotImplementedError

    def key(self) -> Any:
        """A hashable value equal for handlers in the same state."""
        raise NotImplementedError

    def describe(self) -> str:
        """A one-line summary of the state, for views."""
        return type(self).__name__


class SnapshotProtocol:
    """A snapshot algorithm: its name, what it needs of the graph, and its task handler."""

    name: ClassVar[str]
    title: ClassVar[str]
    message: ClassVar[type] = CheckpointBarrier
    max_concurrent: ClassVar[int | None] = 1
    """How many checkpoints may be pending at once (None: no limit)."""
    halts_sources: ClassVar[bool] = False
    subsumes: ClassVar[bool] = True
    """Whether a completed checkpoint aborts the older pending ones (Flink: a newer completed
    checkpoint subsumes older ones). Chandy-Lamport's concurrent snapshots, each started by
    its own initiator, are snapshots of their own: every one completes."""

    def handler(self, graph: ExecutionGraph, task: TaskId) -> BarrierHandler:
        """A fresh handler for one task of ``graph``."""
        raise NotImplementedError

    def check(self, graph: ExecutionGraph) -> None:
        """Raise if the protocol cannot run on ``graph``."""

    def __repr__(self) -> str:
        return f"<protocol {self.name}>"


def task_handler_args(
    graph: ExecutionGraph, task: TaskId
) -> tuple[TaskId, tuple[ChannelId, ...], frozenset[ChannelId], bool]:
    """The constructor arguments of a handler for ``task``."""
    inputs = graph.inputs[task]
    loops = frozenset(c for c in inputs if c in graph.back_edges)
    return task, inputs, loops, task.operator in graph.roots
