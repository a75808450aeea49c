"""The ABS lab's extension, Algorithm 2 (cyclic graphs): what a student's handler
subclasses, and the protocol that runs it.

A student writes three decisions of ABS Algorithm 2 at one task, as effects
(:mod:`absnb.core.effects`):

- :meth:`CyclicAbsHandler.waiting_for_more`: a barrier arrived and barriers are still
  missing on regular inputs (Alg. 2, lines 9-12);
- :meth:`CyclicAbsHandler.regular_arrived`: the last barrier of the regular inputs arrived
  (lines 13-17);
- :meth:`CyclicAbsHandler.loop_barrier`: a barrier came back on a loop input, whose backup
  log it closes (lines 19-22).

The base does the bookkeeping of :class:`~absnb.labs.handler.AbsHandler` (named states,
stale barriers, subsumption, aborts, clone and key) with Alg. 2's own: it aligns the
regular inputs only (:attr:`~absnb.protocols.aligning.AligningHandler.expected`), and it
keeps the backup log (lines 24-26): from the student's ``SnapshotState(n)`` on, every record
arriving on a loop input whose barrier of ``n`` has not come is logged, until the decision
that returns that input's ``RecordChannelState(n, channel, records)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import ClassVar

from absnb.core.effects import (
    Acknowledge,
    Block,
    BroadcastEvent,
    Decline,
    Effect,
    RecordChannelState,
    SnapshotState,
    Unblock,
)
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import Record, RecordBatch, as_records
from absnb.labs.handler import AbsHandler, LabError, LabProtocol, _names
from absnb.protocols.aligning import (
    NIL,
    AligningHandler,
    CollectingBarriers,
    InProgress,
    Recorded,
    WaitingForFirstBarrier,
)
from absnb.protocols.base import BarrierHandler
from absnb.protocols.cyclic import BackupLog, CyclicProtocol, Logging

CYCLIC_EFFECTS = (
    Block,
    Unblock,
    BroadcastEvent,
    SnapshotState,
    RecordChannelState,
    Acknowledge,
    Decline,
)
"""The effects an Algorithm 2 handler may return."""

Logged = tuple[Record | RecordBatch, ...]
"""What was logged on a loop input, in order."""


class CyclicAbsHandler(BackupLog, AbsHandler):
    """ABS Algorithm 2 at one task, with its three decisions left to a subclass.

    A subclass implements :meth:`waiting_for_more`, :meth:`regular_arrived` and
    :meth:`loop_barrier`; each returns the list of effects the task carries out, in order,
    before it consumes anything else: those of the ABS lab (``Block(channel)``,
    ``Unblock(channel)``, ``BroadcastEvent(CheckpointBarrier(n))``, ``SnapshotState(n)``,
    ``Acknowledge(n)``) and ``RecordChannelState(n, channel, records)``: ``records`` are
    the backup log of loop input ``channel`` in checkpoint ``n``, and the base stops
    logging ``channel``. ``Acknowledge(n)`` completes the task's part of ``n``: its state
    copy and every backup log recorded so far.

    Attributes:
        inputs: the task's input channels, in order.
        loop_inputs: those that are back-edges (the paper's L_t): a barrier is not awaited
            on them before the state copy.
        expected: the regular inputs, whose barriers the state copy waits for (and the Nil
            input, ``None``, at a source).
        log: the backup log: each loop input being logged, and what arrived on it since.
        copied: the last checkpoint whose state copy was taken (0: none).
        state: ``WaitingForFirstBarrier()``, ``CollectingBarriers(n, received)`` (before the
            state copy) or ``Logging(n, received)`` (after it): ``received``, the inputs the
            barrier of ``n`` has arrived on.
    """

    __slots__ = ("copied", "log")
    recorded_fields: ClassVar[tuple[str, ...]] = ("log",)
    algorithm: ClassVar[str] = "ABS Algorithm 2"
    allowed_effects: ClassVar[tuple[type, ...]] = CYCLIC_EFFECTS
    effect_names: ClassVar[str] = (
        "Block, Unblock, BroadcastEvent(CheckpointBarrier(n)), SnapshotState, "
        "RecordChannelState(n, channel, records) and Acknowledge"
    )

    # Alg. 2 takes a barrier on every input: an ended one is taken to carry it
    # (absnb.protocols.ended), as for the package's CyclicBarrierHandler.
    on_end_of_input = BarrierHandler.on_end_of_input

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
    ) -> None:
        super().__init__(task, inputs, loop_inputs, initiator)
        regular = tuple(c for c in self.inputs if c not in loop_inputs)
        self.expected = frozenset((*regular, NIL) if initiator else regular)
        self.log: Recorded = {}
        self.copied: CheckpointId = 0
        """The last checkpoint whose state copy the student's decisions took (0: none)."""

    # -- what a student writes -------------------------------------------------------------
    def waiting_for_more(self, n: CheckpointId, channel: ChannelId) -> Sequence[Effect]:
        """The barrier of checkpoint ``n`` arrived on input ``channel``, and barriers of ``n``
        are still missing on regular inputs (Alg. 2, lines 9-12; ``channel`` may be a loop
        input whose barrier came early: block it too, or the records behind it reach the
        state before its copy). Return the effects."""
        raise NotImplementedError(
            f"{type(self).__name__}.waiting_for_more(n, channel) is not written yet: return "
            "what the task does when the barrier of checkpoint n arrives on channel and "
            "regular inputs still wait for theirs (Alg. 2, lines 9-12)"
        )

    def regular_arrived(
        self, n: CheckpointId, blocked: tuple[ChannelId, ...], missing: tuple[ChannelId, ...]
    ) -> Sequence[Effect]:
        """The barrier of checkpoint ``n`` has arrived on every regular input (or the
        coordinator triggered ``n`` at this source): Alg. 2, lines 13-17. ``blocked``: the
        inputs whose barrier of ``n`` arrived earlier, in input order (those
        :meth:`waiting_for_more` was called for); ``missing``: the loop inputs whose barrier
        of ``n`` has not arrived, which the base logs from ``SnapshotState(n)`` on (empty at
        a task without loop inputs). Return the effects."""
        raise NotImplementedError(
            f"{type(self).__name__}.regular_arrived(n, blocked, missing) is not written yet: "
            "return what the task does when barriers of checkpoint n have arrived on every "
            "regular input (Alg. 2, lines 13-17)"
        )

    def loop_barrier(
        self, n: CheckpointId, channel: ChannelId, logged: Logged, missing: tuple[ChannelId, ...]
    ) -> Sequence[Effect]:
        """The barrier of checkpoint ``n`` came back on loop input ``channel``, after the
        state copy: Alg. 2, lines 19-22 (the log of ``channel`` ends at its own barrier).
        ``logged``: what the base logged on ``channel`` since ``SnapshotState(n)``;
        ``missing``: the loop inputs whose barrier of ``n`` is still to come. Return the
        effects."""
        raise NotImplementedError(
            f"{type(self).__name__}.loop_barrier(n, channel, logged, missing) is not written "
            "yet: return what the task does when the barrier of checkpoint n comes back on "
            "loop input channel (Alg. 2, lines 19-22)"
        )

    def logged_on(self, channel: ChannelId) -> Logged:
        """What the base logged on loop input ``channel`` since the state copy (empty when
        it is not being logged)."""
        return tuple(self.log.get(channel, ()))

    # -- the bookkeeping around them -------------------------------------------------------
    def _barrier(
        self,
        state: WaitingForFirstBarrier | CollectingBarriers | InProgress,
        channel: ChannelId | None,
        n: CheckpointId,
        overtaken: tuple[Record | RecordBatch, ...],
        late: bool,
        effects: list[Effect],
    ) -> Sequence[Effect]:
        """A barrier that is not stale, after the base gave up an older checkpoint: record
        it in the named state, then ask the student's decision (Alg. 2, lines 8-22)."""
        if isinstance(state, Logging):
            logging = state.barrier_received(n, channel)
            self.state = logging
            if channel is None or channel in state.received:
                return effects
            missing = logging.waiting_on(self.inputs)
            logged = self.logged_on(channel)
            asked = partial(self.loop_barrier, n, channel, logged, missing)
            arg = f"{channel}, {_shown(logged)}, {_names(missing)}"
            return self._tracked(effects, "loop_barrier", n, arg, asked)
        if not isinstance(state, WaitingForFirstBarrier | CollectingBarriers):
            raise LabError(f"ABS Algorithm 2 has no state {state!r}")
        collecting = state.barrier_received(n, channel)
        if not collecting.aligned(self.expected):
            self.state = collecting
            if channel is not None:  # the Nil input (a trigger) is never blocked
                asked = partial(self.waiting_for_more, n, channel)
                effects.extend(self._asked("waiting_for_more", n, str(channel), asked))
            return effects
        received = collecting.received
        self.state = Logging(n, received)
        blocked = tuple(c for c in self.inputs if c in received and c != channel)
        missing = tuple(c for c in self.inputs if c in self.loop_inputs and c not in received)
        asked = partial(self.regular_arrived, n, blocked, missing)
        arg = f"{_names(blocked)}, {_names(missing)}"
        return self._tracked(effects, "regular_arrived", n, arg, asked)

    def _tracked(
        self,
        effects: list[Effect],
        hook: str,
        n: CheckpointId,
        arg: str,
        asked: Callable[[], object],
    ) -> list[Effect]:
        """The student's effects after ``effects``, each then kept track of: a state copy
        starts the backup log, a channel state ends it, an acknowledgement finishes ``n``."""
        mine = self._asked(hook, n, arg, asked)
        for e in mine:
            if type(e) is SnapshotState and e.checkpoint_id == n:
                self.copied = n
                state = self.state
                received = state.received if isinstance(state, Logging) else frozenset()
                self.log = {
                    c: [] for c in self.inputs if c in self.loop_inputs and c not in received
                }
            elif type(e) is RecordChannelState:
                self.log.pop(e.channel, None)
            elif type(e) is Acknowledge and e.checkpoint_id == n:
                self._finish(n)
                self.log = {}
        effects.extend(mine)
        return effects

    def _checked(self, hook: str, result: object) -> list[Effect]:
        """The ABS lab's checks, and a channel state only of a loop input, after the state
        copy and before the acknowledgement."""
        effects = super()._checked(hook, result)
        name = f"{type(self).__name__}.{hook}"
        for i, e in enumerate(effects):
            if type(e) is not RecordChannelState:
                continue
            m = e.checkpoint_id
            if e.channel not in self.loop_inputs:
                loops = ", ".join(str(c) for c in self.inputs if c in self.loop_inputs)
                raise LabError(
                    f"{name} recorded the state of {e.channel}, which is no loop input of "
                    f"{self.task}: Alg. 2 logs loop inputs only (here: {loops or 'none'})"
                )
            if not self._taken(m, effects[:i]):
                raise LabError(
                    f"{name} recorded the backup log of {e.channel} for checkpoint {m} "
                    f"without a state copy of {m} to add it to: put SnapshotState({m}) first "
                    "(in this list or in an earlier decision)"
                )
            if Acknowledge(m) in effects[:i]:
                raise LabError(
                    f"{name} recorded the backup log of {e.channel} for checkpoint {m} after "
                    f"acknowledging {m}: the acknowledgement completes the task's part, so "
                    "put every RecordChannelState before Acknowledge"
                )
        return effects

    def _taken(self, n: CheckpointId, before: Sequence[object]) -> bool:
        """The state copy of ``n`` is taken in this list or was in an earlier decision of
        the checkpoint in progress."""
        state = self.state
        ongoing = isinstance(state, Logging) and state.checkpoint_id == n
        return SnapshotState(n) in before or (ongoing and self.copied == n)

    def key(self) -> object:
        """The ABS lab's key and the last checkpoint whose state was copied."""
        return (super().key(), self.copied)


def _shown(logged: Logged) -> str:
    """Logged records as a tuple of their values is written."""
    values = [repr(r.value) for r in as_records(logged)]
    return "(" + ", ".join(values) + ("," if len(values) == 1 else "") + ")"


class CyclicLabProtocol(LabProtocol, CyclicProtocol):
    """ABS Algorithm 2 with a student's handler class at every task (the capabilities of
    :class:`~absnb.protocols.cyclic.CyclicProtocol`: loop inputs logged, the backup log a
    channel state).

    Args:
        handler_class: a subclass of :class:`CyclicAbsHandler` (or the package's own
            :class:`~absnb.protocols.cyclic.CyclicBarrierHandler`).
        catch: keep what a decision raises in the handler's ``fault`` instead of raising it.
    """

    name = "abs-cyclic-lab"
    title = "ABS (Algorithm 2), the lab's handler"
    short_title = "the lab's ABS Algorithm 2"
    without_channel_state = CyclicProtocol.without_channel_state

    def check(self, graph: ExecutionGraph) -> None:
        CyclicProtocol().check(graph)

    def handler(self, graph: ExecutionGraph, task: TaskId) -> AligningHandler:  # type: ignore[override]
        return LabProtocol.handler(self, graph, task)
