"""ABS for cyclic graphs: paper Algorithm 2 (back-edge logging).

Inputs split into regular inputs and loop inputs L_t (back-edges found by DFS from the
sources). A barrier on a regular input blocks it (Alg. 2, lines 9-12). When barriers have
arrived on every regular input the task copies its state, starts logging, broadcasts the
barrier and unblocks its inputs (lines 13-17). While logging, records arriving on loop
inputs go to the backup log (lines 25-26). When barriers have arrived on every input, loop
inputs included, the snapshot is {state copy, backup log} (lines 19-22).

On a graph without back-edges this is exactly Algorithm 1.

Two deviations from the paper's pseudo-code, both needed for a consistent cut (each barrier
on a loop input L_t comes from a sender that took its snapshot just before sending it, so
the records behind it are not part of the snapshot: on recovery the restored sender sends
them again):

1. **Logging stops per loop input** when that input's barrier arrives, not for all loop
   inputs at once when the last barrier arrives (lines 19-22, 25). Logging a record that
   came behind its input's barrier would replay it on recovery a second time, beside the
   sender's resend. With one loop input the two rules agree.
2. **A loop barrier that arrives before the barriers of the regular inputs blocks its
   channel** (lines 11-12 block only regular inputs). Otherwise the records behind it
   would reach the state before the state copy (lines 13-14) and be sent again on
   recovery: counted twice. Blocked, they wait until the copy is taken and the input is
   unblocked (lines 16-17), and are then neither in the copy nor in the log.

The paper's Alg. 2 for reference (line numbers as cited here): 8 on barrier; 9 mark the
input; 11-12 block it if regular; 13-17 on the last regular barrier copy the state, start
logging, broadcast, unblock all; 19-22 on the last barrier of all inputs snapshot
{state copy, backup log} and reset; 24-26 on a record, while logging, log it if it came on
a loop input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from absnb.core.effects import (
    Acknowledge,
    Block,
    BroadcastEvent,
    Effect,
    RecordChannelState,
    SnapshotState,
    Unblock,
)
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Record, RecordBatch
from absnb.protocols.aligning import (
    AligningHandler,
    CollectingBarriers,
    InProgress,
    Recorded,
    WaitingForFirstBarrier,
)
from absnb.protocols.base import NO_EFFECTS, SnapshotProtocol, task_handler_args


@dataclass(frozen=True, slots=True)
class Logging:
    """State copied for ``checkpoint_id``; loop inputs not in ``received`` are being logged."""

    checkpoint_id: CheckpointId
    received: frozenset[ChannelId | None]

    def barrier_received(self, checkpoint_id: CheckpointId, channel: ChannelId | None) -> Logging:
        """The barrier of the checkpoint arrived on ``channel`` too."""
        return Logging(self.checkpoint_id, self.received | {channel})

    def waiting_on(self, inputs: tuple[ChannelId, ...]) -> tuple[ChannelId, ...]:
        """The ``inputs`` whose barrier has not arrived."""
        return tuple(c for c in inputs if c not in self.received)


class BackupLog:
    """What a task of Alg. 2 does with its backup log ``log`` (a slot of the class that
    mixes this in): lines 24-26, a record on a loop input being logged is appended, and
    the views of it. Shared by :class:`CyclicBarrierHandler` and the lab's
    :class:`~absnb.labs.cyclic.handler.CyclicAbsHandler`."""

    __slots__ = ()

    log: Recorded
    state: WaitingForFirstBarrier | CollectingBarriers | InProgress
    inputs: tuple[ChannelId, ...]
    expected: frozenset[ChannelId | None]

    def on_record(self, channel: ChannelId, record: Record) -> Sequence[Effect]:
        """Lines 25-26: while logging, a record on a loop input goes to the backup log (only
        until that input's barrier: deviation 1 of the module docstring)."""
        log = self.log.get(channel)
        if log is not None:
            log.append(record)
        return NO_EFFECTS

    def on_records(self, channel: ChannelId, batch: RecordBatch) -> Sequence[Effect]:
        """Lines 25-26 for each record of ``batch``."""
        log = self.log.get(channel)
        if log is not None:
            log.append(batch)  # logged as it came: no record by record cost
        return NO_EFFECTS

    def recorded_channels(self) -> tuple[ChannelId, ...]:
        return tuple(self.log)

    def recorded_count(self, channel: ChannelId) -> list[tuple[CheckpointId, int]]:
        state = self.state
        if channel in self.log and isinstance(state, Logging):
            return [(state.checkpoint_id, len(self.log[channel]))]
        return []

    def describe(self) -> str:
        state = self.state
        if isinstance(state, CollectingBarriers):
            got = len([c for c in state.received if c in self.expected])
            want = len([c for c in self.expected if c is not None])
            return f"aligning checkpoint {state.checkpoint_id} ({got}/{want} barriers)"
        if isinstance(state, Logging):
            logged = sum(len(v) for v in self.log.values())
            return f"logging loop inputs for checkpoint {state.checkpoint_id} ({logged} logged)"
        return "waiting for first barrier"


class CyclicBarrierHandler(BackupLog, AligningHandler):
    """Paper Alg. 2 at one task, with the module docstring's two deviations: a loop input
    stops being logged once its own barrier has arrived, and a loop barrier that comes
    before the regular ones blocks its input. It aligns its regular inputs
    (:attr:`~absnb.protocols.aligning.AligningHandler.expected`, Nil at an initiator)."""

    __slots__ = ("log",)
    recorded_fields: ClassVar[tuple[str, ...]] = ("log",)

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
    ) -> None:
        regular = [c for c in inputs if c not in loop_inputs]
        super().__init__(task, inputs, loop_inputs, initiator, regular)
        self.log: Recorded = {}

    def _barrier(
        self,
        state: WaitingForFirstBarrier | CollectingBarriers | InProgress,
        channel: ChannelId | None,
        n: CheckpointId,
        overtaken: tuple[Record | RecordBatch, ...],
        late: bool,
        effects: list[Effect],
    ) -> Sequence[Effect]:
        """Alg. 2, lines 8-22."""
        if not isinstance(state, Logging):
            assert isinstance(
                state, WaitingForFirstBarrier | CollectingBarriers
            )  # Logging is Alg. 2's only other state
            collecting = state.barrier_received(n, channel)
            if not collecting.aligned(self.expected):
                # Lines 9-12: block the input. Deviation 2 (module docstring): a loop input
                # whose barrier came before the regular ones is blocked too (the paper blocks
                # regular inputs only), so that no record sent after its sender's snapshot
                # reaches the state copy.
                self.state = collecting
                if channel is not None:
                    effects.append(Block(channel))
                return effects
            # Lines 13-17: copy the state, start logging, broadcast, unblock.
            received = collecting.received
            effects.append(SnapshotState(n))
            effects.append(BroadcastEvent(CheckpointBarrier(n)))
            effects.extend(Unblock(c) for c in self.inputs if c in received and c != channel)
            # Start logging the loop inputs whose barrier has not arrived; those whose barrier
            # did (blocked until now, deviation 2) have an empty backup log.
            self.log = {c: [] for c in self.inputs if c in self.loop_inputs and c not in received}
            effects.extend(
                RecordChannelState(n, c, ())
                for c in self.inputs
                if c in self.loop_inputs and c in received
            )
            logging = Logging(n, received)
        else:
            logging = state.barrier_received(n, channel)
            if channel in self.log:
                # Deviation 1 (module docstring): the loop input's own barrier closes its
                # backup log; the paper logs every loop input until the last barrier (lines
                # 19-22, 25).
                effects.append(RecordChannelState(n, channel, tuple(self.log.pop(channel))))
        if not self.log:
            # Lines 19-22: barriers on all inputs: the snapshot {state copy, backup log}.
            effects.append(Acknowledge(n))
            self._finish(n)
        else:
            self.state = logging
        return effects


class CyclicProtocol(SnapshotProtocol):
    """ABS Algorithm 2: Algorithm 1 on regular inputs plus a backup log of loop inputs."""

    name = "abs-cyclic"
    title = "ABS (Algorithm 2, cyclic)"
    records_channel_state = True
    channel_state_kind = "backup log"
    logs_loop_inputs = True
    without_channel_state = "no loop records were in transit"

    def handler(self, graph: ExecutionGraph, task: TaskId) -> CyclicBarrierHandler:
        return CyclicBarrierHandler(*task_handler_args(graph, task))
