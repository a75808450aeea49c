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

from absnb.core.effects import BroadcastEvent, Decline, Effect
from absnb.core.errors import ProtocolError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    Marker,
    Record,
    RecordBatch,
)

NO_EFFECTS: tuple[Effect, ...] = ()


def as_barrier(message: CheckpointBarrier | Marker, task: TaskId) -> CheckpointBarrier:
    """``message`` as the barrier it must be: the handlers of ABS and its variants never
    receive a Chandy-Lamport marker (a runtime that sends one is wrong)."""
    if not isinstance(message, CheckpointBarrier):
        raise ProtocolError(
            f"task {task} received {message}, but its protocol takes checkpoint barriers, "
            "not Chandy-Lamport markers"
        )
    return message


def abort_subsumed(old: CheckpointId, newer: CheckpointId) -> tuple[Effect, ...]:
    """The barrier of ``newer`` arrived while checkpoint ``old`` was still being aligned or
    recorded here: ``old`` is given up and reported aborted, not dropped silently. As
    Flink's ``SingleCheckpointBarrierHandler.cancelSubsumedCheckpoint`` (``abortInternal``
    with ``CHECKPOINT_DECLINED_SUBSUMED``, then ``abortCheckpointOnBarrier``), the task sends
    a cancellation marker downstream, so that tasks blocked for ``old`` are released, and
    declines ``old`` to the coordinator (``AlignedCheckpointsTest.
    testMultiChannelJumpingOverCheckpoint``: checkpoints 2 and 3, each overtaken by the
    next one's barrier, count as aborted)."""
    return (
        BroadcastEvent(CancelCheckpointMarker(old)),
        Decline(old, f"subsumed: the barrier of checkpoint {newer} arrived before it was aligned"),
    )


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

    def on_overtaking_barrier(
        self,
        channel: ChannelId,
        message: CheckpointBarrier,
        overtaken: tuple[Record | RecordBatch, ...],
    ) -> Sequence[Effect]:
        """A barrier arrived on ``channel`` ahead of ``overtaken``, the records queued before
        it, which the task consumes after it (unaligned checkpoints: the barrier is a
        priority event). Only protocols whose barriers overtake receive this."""
        return self.on_barrier(channel, message)

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

    def on_end_of_input(self, channel: ChannelId) -> Sequence[Effect]:
        """``channel`` has ended: nothing more, barriers included, arrives on it. Protocols
        that support bounded inputs count it as aligned for every pending and future
        barrier (Flink since FLIP-147); this default ignores it."""
        return NO_EFFECTS

    def on_alignment_timeout(self) -> Sequence[Effect]:
        """The runtime reports that this task's alignment has lasted the protocol's
        alignment timeout (only protocols with one hear of it)."""
        return NO_EFFECTS

    def on_checkpoint_complete(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Every task acknowledged ``checkpoint_id`` (Flink: notifyCheckpointComplete)."""
        return NO_EFFECTS

    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """The coordinator gave up on ``checkpoint_id``: drop its progress, unblock inputs."""
        raise NotImplementedError

    def waiting(self) -> list[Waiting]:
        """Snapshots this task has started and not finished, and what they wait for."""
        return []

    def latest_checkpoint_id(self) -> CheckpointId:
        """The newest checkpoint this task has seen a barrier, trigger or cancellation of,
        pending or not (Flink: ``CheckpointBarrierHandler.getLatestCheckpointId``); 0: none.
        Handlers that remember finished checkpoints override it."""
        return max((w.checkpoint_id for w in self.waiting()), default=0)

    def ignores_cancellation(self, checkpoint_id: CheckpointId) -> bool:
        """A cancellation marker of ``checkpoint_id`` is stale here: the task has seen a
        newer checkpoint, or has finished or given up this one (Flink:
        ``SingleCheckpointBarrierHandler.processCancellationBarrier`` returns early when
        ``currentCheckpointId > cancelledId``, or equal with no barrier pending;
        ``CheckpointBarrierTracker``'s "trailing cancellation barrier which was already
        cancelled"; ``AlignedCheckpointsTest.testMultiChannelAbortCheckpoint``)."""
        if checkpoint_id > self.latest_checkpoint_id():
            return False
        return all(w.checkpoint_id != checkpoint_id for w in self.waiting())

    def aligning(self) -> bool:
        """True while the task aligns a checkpoint (from its first barrier to its last)."""
        return any(w.blocked for w in self.waiting())

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


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a protocol does, as the runtimes, views and command line need to know it.

    Callers ask these instead of testing a protocol's name, so that a new mode is one
    module in :mod:`absnb.protocols` and nothing else branches on it.

    Attributes:
        message: the type of the control message on channels (barrier or marker).
        records_channel_state: snapshots may hold records in transit (E*), not task states only.
        channel_state_kind: what a recorded channel is called (``channel state``,
            ``backup log``, ``in-flight data``).
        without_channel_state: why a snapshot holds no channel, when it holds none.
        blocks_inputs: tasks block inputs while aligning (Alg. 1, lines 7-9).
        logs_loop_inputs: loop inputs are logged rather than blocked (Alg. 2), so back-edges
            are told apart.
        starts_anywhere: a snapshot may be started at any named task, not only at the sources.
        may_be_declined: a task may decline a checkpoint (Flink: ``declineCheckpoint``).
        subsumes: a completed checkpoint aborts the older pending ones.
        halts_sources: sources stop producing while a checkpoint is pending.
        max_concurrent: checkpoints pending at once (None: no limit; 0: none are taken).
        exactly_once: state after recovery reflects every record exactly once.
        drops_duplicates: a task drops a record whose channel sequence number it has seen
            (partial recovery's deduplication, paper section 5); False where the mode
            shows Flink's duplicates (at-least-once), which no sequence number hides.
        barriers_overtake: a barrier is consumed ahead of the records queued before it on
            its channel (Flink FLIP-76: barriers as priority events), which become channel
            state.
    """

    message: type
    records_channel_state: bool
    channel_state_kind: str
    without_channel_state: str
    blocks_inputs: bool
    logs_loop_inputs: bool
    starts_anywhere: bool
    may_be_declined: bool
    subsumes: bool
    halts_sources: bool
    max_concurrent: int | None
    exactly_once: bool
    drops_duplicates: bool
    barriers_overtake: bool

    @property
    def takes_checkpoints(self) -> bool:
        """False for the baseline that never snapshots."""
        return self.max_concurrent != 0

    @property
    def treats_loops_apart(self) -> bool:
        """Back-edges matter to the protocol (it blocks or logs loop inputs)."""
        return self.blocks_inputs or self.logs_loop_inputs


class SnapshotProtocol:
    """A snapshot algorithm: its name, what it needs of the graph, and its task handler.

    The class variables declare its capabilities (see :class:`Capabilities`); a subclass
    overrides those that differ from ABS Algorithm 1's.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    short_title: ClassVar[str] = ""
    """The name in running text (``ABS Algorithm 1``); the title when empty."""
    message: ClassVar[type] = CheckpointBarrier
    """The message a snapshot travels in on the channels: a barrier (Chandy-Lamport: a marker)."""
    max_concurrent: ClassVar[int | None] = 1
    """How many checkpoints may be pending at once (None: no limit)."""
    halts_sources: ClassVar[bool] = False
    subsumes: ClassVar[bool] = True
    """Whether a completed checkpoint aborts the older pending ones (Flink: a newer completed
    checkpoint subsumes older ones). Chandy-Lamport's concurrent snapshots, each started by
    its own initiator, are snapshots of their own: every one completes."""
    records_channel_state: ClassVar[bool] = False
    channel_state_kind: ClassVar[str] = "channel state"
    without_channel_state: ClassVar[str] = "nothing was recorded in transit"
    blocks_inputs: ClassVar[bool] = True
    logs_loop_inputs: ClassVar[bool] = False
    starts_anywhere: ClassVar[bool] = False
    may_be_declined: ClassVar[bool] = True
    exactly_once: ClassVar[bool] = True
    barriers_overtake: ClassVar[bool] = False
    drops_duplicates: ClassVar[bool] = True

    @property
    def capabilities(self) -> Capabilities:
        """What this protocol does, as one value."""
        return Capabilities(
            message=self.message,
            records_channel_state=self.records_channel_state,
            channel_state_kind=self.channel_state_kind,
            without_channel_state=self.without_channel_state,
            blocks_inputs=self.blocks_inputs,
            logs_loop_inputs=self.logs_loop_inputs,
            starts_anywhere=self.starts_anywhere,
            may_be_declined=self.may_be_declined,
            subsumes=self.subsumes,
            halts_sources=self.halts_sources,
            max_concurrent=self.max_concurrent,
            exactly_once=self.exactly_once,
            drops_duplicates=self.drops_duplicates,
            barriers_overtake=self.barriers_overtake,
        )

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
