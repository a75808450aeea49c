"""What the barrier-aligning handlers share: ABS Algorithm 1, Algorithm 2, unaligned
checkpoints (FLIP-76) and ABS with an alignment timeout.

Named states are small frozen classes (Flink's ``WaitingForFirstBarrier`` and
``CollectingBarriers``, the states of its ``SingleCheckpointBarrierHandler``); each
transition is a method of the state that returns the next one
(:meth:`WaitingForFirstBarrier.barrier_received`). :class:`AligningHandler` holds what
every aligning protocol keeps, the same way:

- the **expected inputs**, whose barriers a checkpoint waits for (the paper's Nil input
  too at an initiator: the coordinator injects its barrier there, Alg. 1, line 7), less
  those that ended (FLIP-147: "checkpoint barriers are considered received on finished
  channels");
- **stale barriers**: a barrier of a checkpoint older than the one in progress, or not
  newer than the last one finished or given up here (``last``), is ignored: it can reach a
  task after an abort;
- **subsumption**: a barrier of a newer checkpoint than the one in progress gives that one
  up and reports it aborted, as Flink does (:func:`~absnb.protocols.base.abort_subsumed`);
- a checkpoint **aborted** by the coordinator is dropped, its blocked inputs unblocked;
- **clone and key** from the handler's fields: the named state is immutable and shared,
  the recorded records (a backup log, in-flight data) are copied and compared.

Each protocol says what a barrier does in the state it finds (its ``_barrier``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from absnb.core.effects import Acknowledge, BroadcastEvent, Effect, SnapshotState, Unblock
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker, Record, RecordBatch, as_records
from absnb.protocols.base import (
    NO_EFFECTS,
    BarrierHandler,
    Waiting,
    abort_subsumed,
    as_barrier,
)

NIL: ChannelId | None = None
"""The paper's "Nil" input: the coordinator injects barriers into an initiator through it."""


@dataclass(frozen=True, slots=True)
class CollectingBarriers:
    """Barriers of ``checkpoint_id`` have arrived on ``received``; those inputs are blocked
    (Alg. 1, lines 7-9)."""

    checkpoint_id: CheckpointId
    received: frozenset[ChannelId | None]

    def barrier_received(
        self, checkpoint_id: CheckpointId, channel: ChannelId | None
    ) -> CollectingBarriers:
        """Another barrier of the checkpoint, on ``channel`` (Alg. 1, line 7)."""
        return CollectingBarriers(self.checkpoint_id, self.received | {channel})

    def aligned(self, expected: frozenset[ChannelId | None]) -> bool:
        """Barriers have arrived on every ``expected`` input (Alg. 1, line 10)."""
        return self.received >= expected

    def waiting_on(self, inputs: tuple[ChannelId, ...]) -> tuple[ChannelId, ...]:
        """The ``inputs`` whose barrier has not arrived."""
        return tuple(c for c in inputs if c not in self.received)


@dataclass(frozen=True, slots=True)
class WaitingForFirstBarrier:
    """No barrier of a new checkpoint has arrived yet."""

    def barrier_received(
        self, checkpoint_id: CheckpointId, channel: ChannelId | None
    ) -> CollectingBarriers:
        """The first barrier of ``checkpoint_id``, on ``channel`` (Alg. 1, line 7)."""
        return CollectingBarriers(checkpoint_id, frozenset((channel,)))


WAITING = WaitingForFirstBarrier()

Recorded = dict[ChannelId, list[Record | RecordBatch]]
"""Records recorded per input channel (a backup log, in-flight data), as they came."""


class AligningHandler(BarrierHandler):
    """The per-task half of a protocol that aligns barriers (the module docstring).

    Attributes:
        expected: the inputs whose barriers a checkpoint waits for (Nil at an initiator).
        state: the named state; ``checkpoint_id`` of any but :class:`WaitingForFirstBarrier`
            is the checkpoint in progress.
        last: the highest checkpoint id finished or given up here; older barriers are stale.
    """

    __slots__ = ("expected", "last", "state")

    recorded_fields: ClassVar[tuple[str, ...]] = ()
    """The handler's :data:`~absnb.protocols.aligning.Recorded` fields: copied by
    :meth:`~absnb.protocols.aligning.AligningHandler.clone`, compared by
    :meth:`~absnb.protocols.aligning.AligningHandler.key`."""

    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._fields = tuple(
            name for klass in cls.__mro__ for name in getattr(klass, "__slots__", ())
        )

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
        aligned: Iterable[ChannelId] | None = None,
    ) -> None:
        super().__init__(task, inputs, loop_inputs, initiator)
        aligned = self.inputs if aligned is None else tuple(aligned)
        self.expected: frozenset[ChannelId | None] = frozenset(
            (*aligned, NIL) if self.initiator else aligned
        )
        self.state: WaitingForFirstBarrier | CollectingBarriers | InProgress = WAITING
        self.last: CheckpointId = 0

    # -- barriers ----------------------------------------------------------------------------
    def on_trigger(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """A barrier on the Nil input (Alg. 1, line 7: the coordinator's injection, never
        blocked, nothing overtaken)."""
        return self._on_barrier(NIL, checkpoint_id)

    def on_barrier(
        self, channel: ChannelId, message: CheckpointBarrier | Marker
    ) -> Sequence[Effect]:
        """A barrier at the head of ``channel``."""
        return self._on_barrier(channel, as_barrier(message, self.task).checkpoint_id)

    def _on_barrier(
        self,
        channel: ChannelId | None,
        n: CheckpointId,
        overtaken: tuple[Record | RecordBatch, ...] = (),
        late: bool = False,
    ) -> Sequence[Effect]:
        """A stale barrier is ignored; a newer one subsumes the checkpoint in progress; then
        the protocol's :meth:`_barrier` says what it does."""
        if n <= self.last:
            return NO_EFFECTS
        effects: list[Effect] = []
        state = self.state
        if not isinstance(state, WaitingForFirstBarrier):
            if n < state.checkpoint_id:
                return NO_EFFECTS  # a late barrier of a checkpoint this task gave up
            if n > state.checkpoint_id:
                # A newer checkpoint overtook this one (possible only after an abort): give
                # up the older one and report it aborted (Flink: cancelSubsumedCheckpoint).
                effects.extend(self._drop(state))
                effects.extend(abort_subsumed(state.checkpoint_id, n))
                state = WAITING
        return self._barrier(state, channel, n, overtaken, late, effects)

    def _barrier(
        self,
        state: WaitingForFirstBarrier | CollectingBarriers | InProgress,
        channel: ChannelId | None,
        n: CheckpointId,
        overtaken: tuple[Record | RecordBatch, ...],
        late: bool,
        effects: list[Effect],
    ) -> Sequence[Effect]:
        """What the barrier of ``n`` on ``channel`` does in ``state`` (not stale, no newer
        checkpoint in progress), after ``effects``; ``overtaken`` and ``late``: it was
        delivered ahead of those records (:meth:`on_overtaking_barrier`)."""
        raise NotImplementedError

    def _aligned(
        self,
        n: CheckpointId,
        state: CollectingBarriers,
        channel: ChannelId | None,
        effects: list[Effect],
    ) -> list[Effect]:
        """Alg. 1, lines 10-15: barriers on every input: broadcast, snapshot, unblock the
        inputs blocked for it (all but ``channel``, whose barrier came last)."""
        self._finish(n)
        effects += [BroadcastEvent(CheckpointBarrier(n)), SnapshotState(n), Acknowledge(n)]
        effects.extend(Unblock(c) for c in self.inputs if c in state.received and c != channel)
        return effects

    def _finish(self, n: CheckpointId) -> None:
        """Checkpoint ``n`` is finished here: wait for the next."""
        self.state = WAITING
        self.last = n

    def _aligned_at_end(self, channel: ChannelId) -> Sequence[Effect]:
        """``channel`` ended: it counts as aligned for this and every later checkpoint
        (FLIP-147), which may complete the alignment in progress."""
        self.expected = self.expected - {channel}
        state = self.state
        if isinstance(state, CollectingBarriers) and state.aligned(self.expected):
            return self._aligned(state.checkpoint_id, state, None, [])
        return NO_EFFECTS

    # -- giving up ---------------------------------------------------------------------------
    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Drop the progress of ``checkpoint_id`` (and older) here: unblock its inputs,
        forget what was recorded for it."""
        self.last = max(self.last, checkpoint_id)
        state = self.state
        if isinstance(state, WaitingForFirstBarrier) or state.checkpoint_id > checkpoint_id:
            return NO_EFFECTS
        return self._drop(state)

    def _drop(self, state: CollectingBarriers | InProgress) -> list[Effect]:
        """Give up ``state``'s checkpoint: wait for the next, forget what was recorded,
        unblock what it blocked."""
        self.state = WAITING
        for name in self.recorded_fields:
            setattr(self, name, {})
        if isinstance(state, CollectingBarriers):
            return [Unblock(c) for c in self.inputs if c in state.received]
        return []

    # -- views -------------------------------------------------------------------------------
    def latest_checkpoint_id(self) -> CheckpointId:
        """The checkpoint in progress, else the last one finished or given up here."""
        state = self.state
        return self.last if isinstance(state, WaitingForFirstBarrier) else state.checkpoint_id

    def waiting(self) -> list[Waiting]:
        """The inputs whose barrier has not arrived, and the blocked ones."""
        state = self.state
        if isinstance(state, WaitingForFirstBarrier):
            return []
        blocked = (
            tuple(c for c in self.inputs if c in state.received)
            if isinstance(state, CollectingBarriers)
            else ()
        )
        return [Waiting(self.task, state.checkpoint_id, state.waiting_on(self.inputs), blocked)]

    # -- value semantics ---------------------------------------------------------------------
    def clone(self) -> AligningHandler:
        """A copy sharing the immutable fields, with its own recorded records."""
        new = object.__new__(type(self))
        for name in self._fields:
            setattr(new, name, getattr(self, name))
        for name in self.recorded_fields:
            recorded: Recorded = getattr(self, name)
            setattr(new, name, {c: list(rs) for c, rs in recorded.items()} if recorded else {})
        return new

    def key(self) -> object:
        """The state, the last checkpoint, the expected inputs and what was recorded."""
        recorded = tuple(
            tuple((c, as_records(rs)) for c, rs in getattr(self, name).items())
            for name in self.recorded_fields
        )
        return (self.state, self.last, self.expected, recorded)


class InProgress(Protocol):
    """A protocol's own state after alignment (Alg. 2's logging, unaligned recording)."""

    @property
    def checkpoint_id(self) -> CheckpointId:
        """The checkpoint in progress."""
        ...

    def waiting_on(self, inputs: tuple[ChannelId, ...]) -> tuple[ChannelId, ...]:
        """The ``inputs`` whose barrier has not arrived."""
        ...
