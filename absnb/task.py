"""StreamTask: one task of the execution graph, sans-IO (Flink: ``StreamTask``).

It joins an operator (the user function and its state) to a protocol handler (the snapshot
algorithm), routes outputs through the partitioners, and turns the handler's effects into
sends and controls. It does no I/O: every method appends the messages to send to a caller's
list and returns the controls (block, unblock, acknowledgement) for the runtime, so the
simulator and the Spark runtime host the same object, and the production modes (end of
input, cancellation, decline, overtaking barriers) are decided here once.

Besides the operator state a task keeps what recovery and the checks need: records sent per
output channel and received per input channel (channel sequence numbers), its offset in its
own input log, and the order in which it consumed its inputs (so that partial recovery can
replay deterministically; ``history=False`` keeps none, for a runtime that restarts every
task from a checkpoint). The simulator moves one record at a time, the real runtime batches
(:meth:`StreamTask.deliver_batch`, :meth:`StreamTask.emit_batch`: what delivering or
emitting each record in turn does, with one operator call per batch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from absnb.core.columns import Columns
from absnb.core.effects import (
    Acknowledge,
    Block,
    BroadcastEvent,
    Decline,
    Effect,
    HaltSource,
    RecordChannelState,
    ResumeSource,
    SnapshotState,
    Unblock,
)
from absnb.core.events import checkpoint_of
from absnb.core.graph import ExecutionGraph, OutputGate
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    Message,
    Record,
    RecordBatch,
    as_records,
)
from absnb.core.snapshot import TaskSnapshot
from absnb.core.validate import operator_result
from absnb.operators.base import Operator, columnar_path
from absnb.protocols.alignment_timer import AlignmentTimer, due, timer_for
from absnb.protocols.base import SnapshotProtocol
from absnb.protocols.ended import counts_ended, owed
from absnb.protocols.overtaken import not_consumed
from absnb.routing import Send as Send  # what a task step appends to its caller's list
from absnb.routing import route, route_batch, route_columns

InputLog = tuple[ChannelId | None, "InputLog"] | None
"""The consumption order, newest first, as a linked list ``(input, rest)``: ``input`` is the
channel a record came on, or None for an entry of the task's own input log."""


@dataclass(frozen=True, slots=True)
class Dropped:
    """A record the task dropped as a duplicate (its number was already seen)."""

    channel: ChannelId
    record: Record


Control = Block | Unblock | SnapshotState | TaskSnapshot | Dropped | Decline
"""What a task asks its driver to carry out besides sending: block or unblock an input, note
a snapshot taken, store and acknowledge a task snapshot, count a dropped duplicate, tell the
coordinator of a decline."""


class Out:
    """What one call of a :class:`StreamTask` asks its driver to do (Stateright's ``Out``):
    the messages to send and the controls to carry out, each in order. The driver makes one,
    passes it to the call (or to several in a row), then does what it holds and nothing else:
    the simulator queues, the one-task harness records, a Spark host writes to sockets and
    storage."""

    __slots__ = ("controls", "sends")

    def __init__(self) -> None:
        self.sends: list[Send] = []
        self.controls: list[Control] = []

    def __bool__(self) -> bool:
        return bool(self.sends or self.controls)

    def __repr__(self) -> str:
        return f"Out(sends={self.sends!r}, controls={self.controls!r})"


DECLINED = "told to decline by a failure spec"
"""The reason a task gives for a checkpoint of its :attr:`StreamTask.declines`."""


class _Part:
    """A task snapshot being assembled between SnapshotState and Acknowledge."""

    __slots__ = ("channel_states", "consumed", "finished", "offset", "received", "sent", "state")

    def __init__(
        self,
        state: Any,
        offset: int,
        sent: dict[ChannelId, int],
        received: dict[ChannelId, int],
        consumed: int,
        finished: bool,
    ) -> None:
        self.state = state
        self.offset = offset
        self.sent = sent
        self.received = received
        self.consumed = consumed
        self.finished = finished
        self.channel_states: dict[ChannelId, tuple[Record | RecordBatch, ...]] = {}

    def copy(self) -> _Part:
        new = _Part(self.state, self.offset, self.sent, self.received, self.consumed, self.finished)
        new.channel_states = dict(self.channel_states)
        return new

    def key(self, fn: Operator) -> object:
        states = tuple((c, as_records(rs)) for c, rs in self.channel_states.items())
        return (fn.freeze(self.state), self.offset, states, self.finished)


_OUTPUTS = (list, tuple)
"""The types of an operator's outputs that need no further check."""


def _checked(fn: Operator, method: str, result: object) -> tuple[Any, Sequence[Any]]:
    """``result`` of ``fn.method`` when it is (state, list or tuple), the common case, checked
    inline; anything else goes to :func:`~absnb.core.validate.operator_result`, which
    refuses None, a str or a dict as outputs with an error naming the operator."""
    if type(result) is tuple and len(result) == 2:
        kind = type(result[1])
        if kind is list or kind is tuple:
            return result
    return operator_result(fn, method, result)


class StreamTask:
    """One running task: operator state, protocol handler, channel counters."""

    __slots__ = (
        "at_end",
        "awaited",
        "cancelled",
        "closed",
        "columnar",
        "consumed",
        "counts_ended",
        "declines",
        "dedup",
        "dropped",
        "ended",
        "fn",
        "gates",
        "graph",
        "halted",
        "handler",
        "history",
        "id",
        "inputs",
        "label",
        "log",
        "logged",
        "offset",
        "outputs",
        "parts",
        "protocol",
        "received",
        "replay",
        "sent",
        "state",
        "taken",
        "timer",
        "untimed",
    )

    def __init__(
        self,
        graph: ExecutionGraph,
        task: TaskId,
        protocol: SnapshotProtocol,
        *,
        history: bool = True,
    ) -> None:
        self.graph = graph
        self.id = task
        self.label = str(task)
        self.fn: Operator = graph.function(task)
        self.gates: tuple[OutputGate, ...] = graph.gates[task]
        self.inputs = graph.inputs[task]
        self.outputs = graph.outputs[task]
        self.protocol = protocol
        self.handler = protocol.handler(graph, task)
        loops = self.handler.loop_inputs if protocol.logs_loop_inputs else frozenset()
        self.awaited = tuple(c for c in self.inputs if c not in loops)
        """The inputs whose barriers this task waits for: all of them, but the back-edges
        of a protocol that logs them instead (Alg. 2, line 9: only regular inputs align)."""
        self.counts_ended = counts_ended(self.handler)
        self.logged = graph.kind(task) in ("source", "process")
        """Whether the task has an input log of its own (a source, a process)."""
        self.dedup = protocol.drops_duplicates
        self.history = history
        self.columnar = False
        """Emit a batch of the task's own input log as columns when its operator can
        (:meth:`~absnb.operators.base.Operator.act_columns`; the real runtime's switch): the
        batches that follow stay columnar as far as the operators downstream have
        columnar paths."""
        self.state: Any = self.fn.initialize_state(task, self.fn.initial_state(), False)
        self.offset = 0
        self.sent: dict[ChannelId, int] = dict.fromkeys(self.outputs, 0)
        self.received: dict[ChannelId, int] = dict.fromkeys(self.inputs, 0)
        self.consumed = 0
        self.log: InputLog = None
        self.parts: dict[CheckpointId, _Part] = {}
        self.halted = False
        self.replay: tuple[ChannelId | None, ...] = ()
        self.dropped = 0
        self.cancelled: CheckpointId = 0
        """The highest checkpoint whose cancellation this task has sent on."""
        self.ended: frozenset[ChannelId] = frozenset()
        """Input channels whose end this task has consumed."""
        self.closed: frozenset[ChannelId] = frozenset()
        """Output channels this task has ended: nothing more is sent on them."""
        self.at_end = False
        """Whether this task has ended its input (:meth:`end_input`; FLIP-147: finished)."""
        self.taken: frozenset[CheckpointId] = frozenset()
        """The checkpoints this task has taken its snapshot of (acknowledged)."""
        self.declines: frozenset[CheckpointId] = frozenset()
        """The checkpoints this task is to decline when it first hears of them (a failure
        spec's ``kind='decline'``; Flink: ``declineCheckpoint``)."""
        self.untimed = timer_for(protocol)
        """An empty alignment timer with the protocol's alignment timeout; None: untimed."""
        self.timer: AlignmentTimer | None = None
        """When this task heard of each checkpoint it has not finished, under an alignment
        timeout (:mod:`absnb.protocols.alignment_timer`); None: nothing is timed."""

    # -- inputs ------------------------------------------------------------------------------
    def deliver(self, channel: ChannelId, message: Message | EndOfInput, out: Out) -> None:
        """Consume the head of ``channel``: a record goes to the operator, anything else to the
        protocol handler."""
        if type(message) is not Record:
            self._deliver_event(channel, message, out)
            return
        if message.seq <= self.received[channel] and self.dedup:
            self.dropped += 1
            out.controls.append(Dropped(channel, message))
            return
        self.received[channel] = message.seq
        self.consumed += 1  # _consumed(channel), inline: this runs for every record
        if self.history:
            self.log = (channel, self.log)
        if self.replay:
            self.replay = self.replay[1:]
        effects = self.handler.on_record(channel, message)
        result = self.fn.process(self.state, message.value)
        if type(result) is not tuple or len(result) != 2 or type(result[1]) not in _OUTPUTS:
            result = operator_result(self.fn, "process", result)  # refused unless iterable
        self.state, outs = result
        if outs:
            route(self.gates, self.sent, self.id, outs, message.origin, out.sends)
        if effects:
            self._apply(effects, out)

    def _deliver_event(self, channel: ChannelId, message: Message | EndOfInput, out: Out) -> None:
        """Consume ``message``, not a record: an end of input, or a barrier, marker or
        cancellation marker for the protocol handler (unless the task declines its
        checkpoint)."""
        if type(message) is EndOfInput:
            self.end_of_input(channel, out)
        elif self.declines and self._declines(checkpoint_of(message)):
            self.decline(checkpoint_of(message), DECLINED, out)
        elif type(message) is CancelCheckpointMarker:
            self.cancel(message, out)
        else:  # what the exact-type tests above leave (mypy does not narrow by elimination)
            control = cast("CheckpointBarrier | Marker", message)
            self._apply(self.handler.on_barrier(channel, control), out)
            self._owed(out)

    def deliver_overtaking(
        self,
        channel: ChannelId,
        barrier: CheckpointBarrier,
        overtaken: tuple[Record | RecordBatch, ...],
        out: Out,
    ) -> None:
        """Consume ``barrier`` ahead of ``overtaken``, the records queued before it on
        ``channel``, which stay queued (FLIP-76: the barrier is a priority event; a
        cancellation marker never is: :func:`~absnb.protocols.overtaken.priority_event`).

        The handler hears only of the overtaken records the task will process: those it
        will drop as duplicates (partial recovery's replays) are not in flight."""
        if self.declines and self._declines(barrier.checkpoint_id):
            self.decline(barrier.checkpoint_id, DECLINED, out)
            return
        if self.dedup:
            overtaken = not_consumed(overtaken, self.received[channel])
        self._apply(self.handler.on_overtaking_barrier(channel, barrier, overtaken), out)

    def cancel(self, marker: CancelCheckpointMarker, out: Out) -> None:
        """A cancellation barrier (Flink: ``CheckpointBarrierHandler.processCancellationBarrier``):
        drop the checkpoint's progress, releasing the inputs blocked for it, tell the
        operator (``notify_checkpoint_aborted``, as a coordinator's abort does) and send the
        marker on, the first time this task hears of it. A marker of a checkpoint this task
        has finished, or seen a newer one than, is stale and ignored, not forwarded
        (:meth:`~absnb.protocols.base.BarrierHandler.ignores_cancellation`)."""
        n = marker.checkpoint_id
        if n <= self.cancelled or self.handler.ignores_cancellation(n):
            return
        self.cancelled = n
        self.parts.pop(n, None)
        self.state = self.fn.notify_checkpoint_aborted(self.state, n)
        self._apply((*self.handler.on_checkpoint_aborted(n), BroadcastEvent(marker)), out)

    def _declines(self, checkpoint_id: CheckpointId) -> bool:
        """Whether this task is to decline ``checkpoint_id`` now: it is one of
        :attr:`declines` and not given up here already."""
        return checkpoint_id in self.declines and checkpoint_id > self.cancelled

    def decline(self, checkpoint_id: CheckpointId, reason: str, out: Out) -> None:
        """Decline ``checkpoint_id`` (Flink: ``declineCheckpoint``, e.g. while restoring): drop
        its progress here, send a cancellation barrier downstream so that blocked channels
        are released, and tell the coordinator (the :class:`~absnb.core.effects.Decline`
        control), which aborts the checkpoint."""
        effects = (
            *self.handler.on_checkpoint_aborted(checkpoint_id),
            BroadcastEvent(CancelCheckpointMarker(checkpoint_id)),
            Decline(checkpoint_id, reason),
        )
        self._apply(effects, out)

    def end_of_input(self, channel: ChannelId, out: Out) -> None:
        """``channel`` has ended (Flink: ``EndOfPartitionEvent``): the protocol counts it as
        aligned from now on. A task without an input log of its own whose every input has
        now ended ends its input (:meth:`end_input`)."""
        self.ended = self.ended | {channel}
        self._apply(self.handler.on_end_of_input(channel), out)
        self._owed(out)
        if not self.logged and len(self.ended) == len(self.inputs):
            self.end_input(out)

    def end_input(self, out: Out) -> None:
        """This task's whole input has ended (FLIP-147: it finishes): the operator's
        :meth:`~absnb.operators.base.Operator.end_input` runs, once (Flink:
        ``BoundedOneInput.endInput``), and what it emits is sent before the end of any
        output. A task without an input log of its own ends its input when it consumes the
        end of its last input channel (:meth:`end_of_input`); one with a log, whose end only
        its driver knows, when it ends its first output (:meth:`end_output`)."""
        if self.at_end:
            return  # once, and never again for a task restored finished
        self.at_end = True
        self.state, outs = _checked(self.fn, "end_input", self.fn.end_input(self.state))
        if outs:
            route(self.gates, self.sent, self.id, outs, None, out.sends)

    def _owed(self, out: Out) -> None:
        """What the barriers its ended inputs are taken to carry do, for a protocol that does
        not count ended channels itself (:mod:`absnb.protocols.ended`)."""
        if self.ended and not self.counts_ended:
            for c, barrier in owed(self.handler, self.ended, self.protocol.message):
                self._apply(self.handler.on_barrier(c, barrier), out)

    def join(self, checkpoint_id: CheckpointId, out: Out) -> None:
        """Take part in the pending ``checkpoint_id`` as if triggered, if this task is
        :meth:`cut_off` and has not started, acknowledged or given it up: no barrier can
        reach it any more (Flink FLIP-147: the coordinator triggers a task whose inputs have
        all finished)."""
        if checkpoint_id in self.taken or checkpoint_id <= self.cancelled:
            return  # acknowledged, or given up here
        started = any(w.checkpoint_id == checkpoint_id for w in self.handler.waiting())
        if self.cut_off() and not started:
            self._start(checkpoint_id, out)

    def cut_off(self) -> bool:
        """Whether no barrier this task waits for can reach it any more: it has inputs it
        aligns on (:attr:`awaited`) and every one of them has ended. A back-edge a protocol
        logs (Alg. 2) may still be open: its barrier comes only after the task's own."""
        return bool(self.awaited) and all(c in self.ended for c in self.awaited)

    def finished(self, log_length: int) -> bool:
        """Whether this task has finished (FLIP-147): the ``log_length`` entries of its own
        input log consumed, and the end of every input channel consumed. A finished task
        ends its outputs and joins later checkpoints (:meth:`join`)."""
        return self.offset >= log_length and len(self.ended) == len(self.inputs)

    def end_output(self, channel: ChannelId, out: Out) -> None:
        """End ``channel``, one of this task's outputs, once the task has finished: its input
        ends first if it had not (:meth:`end_input`), then its end is sent (Flink: the
        ``EndOfPartitionEvent`` after the last record); nothing, barriers included, is sent
        on it afterwards. The simulator ends the outputs one by one, as its scheduler
        chooses (an ``EndInput`` step); a Spark host all at once (:meth:`finish`)."""
        self.end_input(out)
        self.closed = self.closed | {channel}
        out.sends.append((channel, EndOfInput()))

    def finish(self, out: Out) -> None:
        """The task has finished (:meth:`finished`): end every output it has not ended."""
        for c in self.outputs:
            if c not in self.closed:
                self.end_output(c, out)

    def alignment_timeout(self, out: Out) -> None:
        """The task's alignment has lasted the protocol's timeout: switch to unaligned."""
        self._apply(self.handler.on_alignment_timeout(), out)

    # -- the alignment timer, on the clock its driver gives ----------------------------------
    def hear(self, checkpoint_id: CheckpointId, now: float) -> None:
        """The task hears of ``checkpoint_id`` at ``now``: a barrier of it reached one of its
        inputs, queued perhaps behind records (Flink's announcement), or it was triggered
        here (:meth:`trigger`). Under an alignment timeout its clock starts, unless it had
        (:meth:`~absnb.protocols.alignment_timer.AlignmentTimer.hear`)."""
        if self.untimed is not None:
            self.timer = (self.timer or self.untimed).hear(checkpoint_id, now)

    def hears(self, checkpoint_id: CheckpointId) -> bool:
        """Whether :meth:`hear` of ``checkpoint_id`` would start a clock (a driver that
        copies a task before changing it asks first)."""
        if self.untimed is None:
            return False
        return self.timer is None or all(n != checkpoint_id for n, _ in self.timer.heard)

    def ticks(self, now: float) -> bool:
        """Whether :meth:`tick` at ``now`` would change the task: its timer forgets a
        checkpoint, or it switches (a driver that copies a task before changing it asks
        first)."""
        if self.timer is None:
            return False
        decided = due(self.timer, self.handler, now)
        return decided.switch or decided.timer != self.timer

    def tick(self, now: float, out: Out) -> tuple[bool, frozenset[CheckpointId]]:
        """What the alignment timer decides at ``now``
        (:func:`~absnb.protocols.alignment_timer.due`): whether the task switched to
        unaligned (aligning an overdue checkpoint), and the overdue checkpoints, whose
        barriers queued behind records the driver delivers now, ahead of them
        (:meth:`deliver_overtaking`)."""
        if self.timer is None:
            return False, frozenset()
        decided = due(self.timer, self.handler, now)
        self.timer = decided.timer
        if decided.switch:
            self.alignment_timeout(out)
        return decided.switch, decided.overdue

    def settle(self) -> None:
        """Forget the alignment timer (the run failed: the task restarts untimed)."""
        self.timer = None

    def emit(self, entry: object, out: Out) -> None:
        """Consume the next entry of the task's own input log (a source emits, an account
        makes a transfer)."""
        origin = (self.label, self.offset)
        self.offset += 1
        self._consumed(None)
        result = self.fn.act(self.state, entry)
        if type(result) is not tuple or len(result) != 2 or type(result[1]) not in _OUTPUTS:
            result = operator_result(self.fn, "act", result)
        self.state, outs = result
        if outs:
            route(self.gates, self.sent, self.id, outs, origin, out.sends)

    def deliver_batch(self, channel: ChannelId, batch: RecordBatch, out: Out) -> None:
        """Consume ``batch``, the next records of ``channel``: what :meth:`deliver` of each in
        turn does, with one :meth:`~absnb.operators.base.Operator.process_batch` call."""
        values, first = batch.values, batch.first
        if first <= self.received[channel] and self.dedup:  # duplicates among them
            for record in batch.records():
                self.deliver(channel, record, out)
            return
        effects = self.handler.on_records(channel, batch)  # CL recording, Alg. 2 logging
        n = len(values)
        self.received[channel] = first + n - 1
        self._consumed(channel, n)
        if type(values) is Columns:
            fn = self.fn
            holds = columnar_path(fn, "process_columns")
            result = fn.process_columns(self.state, values) if holds else None
            if result is not None and type(result[1]) is Columns:
                self.state = result[0]
                route_columns(self.gates, self.sent, self.id, result[1], out.sends)
                if effects:
                    self._apply(effects, out)
                return
            if result is None:
                result = self.fn.process_batch(self.state, values.to_pylist())
        else:
            result = self.fn.process_batch(self.state, cast("list[Any]", values))
        self.state, outs = _checked(self.fn, "process_batch", result)
        if outs:
            route_batch(self.gates, self.sent, self.id, self.fn.emits_to, outs, out.sends)
        if effects:
            self._apply(effects, out)

    def emit_batch(self, entries: Sequence[object], out: Out) -> None:
        """Consume ``entries``, the next entries of the task's own input log: what
        :meth:`emit` of each in turn does, with one
        :meth:`~absnb.operators.base.Operator.act_batch` call."""
        n = len(entries)
        self.offset += n
        self._consumed(None, n)
        if self.columnar and columnar_path(self.fn, "act_columns"):
            columnar = self.fn.act_columns(self.state, entries)
            if columnar is not None:
                self.state, columns = columnar
                route_columns(self.gates, self.sent, self.id, columns, out.sends)
                return
        self.state, outs = _checked(self.fn, "act_batch", self.fn.act_batch(self.state, entries))
        if outs:
            route_batch(self.gates, self.sent, self.id, self.fn.emits_to, outs, out.sends)

    def _consumed(self, channel: ChannelId | None, n: int = 1) -> None:
        self.consumed += n
        if self.history:
            for _ in range(n):
                self.log = (channel, self.log)
        if self.replay:
            self.replay = self.replay[n:]

    # -- coordinator -------------------------------------------------------------------------
    def trigger(self, checkpoint_id: CheckpointId, out: Out, now: float) -> None:
        """The coordinator starts checkpoint ``checkpoint_id`` here at ``now`` (or the task
        declines it: :attr:`declines`). An initiator with inputs aligns too: it hears of the
        checkpoint now (:meth:`hear`)."""
        if self._start(checkpoint_id, out) and self.inputs:
            self.hear(checkpoint_id, now)

    def _start(self, checkpoint_id: CheckpointId, out: Out) -> bool:
        """Start ``checkpoint_id`` here, or decline it; whether it started."""
        if self.declines and self._declines(checkpoint_id):
            self.decline(checkpoint_id, DECLINED, out)
            return False
        self._apply(self.handler.on_trigger(checkpoint_id), out)
        self._owed(out)
        return True

    def checkpoint_complete(self, checkpoint_id: CheckpointId, out: Out) -> None:
        """Notify-checkpoint-complete: the protocol and the operator hear of it."""
        self.state = self.fn.notify_checkpoint_complete(self.state, checkpoint_id)
        self._apply(self.handler.on_checkpoint_complete(checkpoint_id), out)

    def checkpoint_aborted(self, checkpoint_id: CheckpointId, out: Out) -> None:
        """Checkpoint ``checkpoint_id`` was aborted: drop its part, unblock inputs."""
        self.parts.pop(checkpoint_id, None)
        self.state = self.fn.notify_checkpoint_aborted(self.state, checkpoint_id)
        self._apply(self.handler.on_checkpoint_aborted(checkpoint_id), out)

    def _apply(self, effects: Sequence[Effect], out: Out) -> None:
        """Carry out a protocol's effects (a few per barrier, none per record), one table."""
        for e in effects:
            _EFFECTS[type(e)](self, e, out)

    def _broadcast(self, e: BroadcastEvent, out: Out) -> None:
        closed = self.closed  # nothing is sent on an ended output
        out.sends.extend((c, e.message) for c in self.outputs if not closed or c not in closed)

    def _control(self, e: Block | Unblock, out: Out) -> None:
        out.controls.append(e)

    def _declined(self, e: Decline, out: Out) -> None:
        """Given up here: its cancellation marker is sent; the driver tells the coordinator."""
        self.cancelled = max(self.cancelled, e.checkpoint_id)
        self.parts.pop(e.checkpoint_id, None)
        out.controls.append(e)

    def _snapshot(self, e: SnapshotState, out: Out) -> None:
        self.state = self.fn.snapshot_state(self.state, e.checkpoint_id)
        self.parts[e.checkpoint_id] = _Part(
            self.fn.copy_state(self.state),
            self.offset,
            dict(self.sent),
            dict(self.received),
            self.consumed,
            self.at_end,
        )
        out.controls.append(e)

    def _channel_state(self, e: RecordChannelState, out: Out) -> None:
        self.parts[e.checkpoint_id].channel_states[e.channel] = e.records

    def _acknowledge(self, e: Acknowledge, out: Out) -> None:
        part = self.parts.pop(e.checkpoint_id)
        self.taken = self.taken | {e.checkpoint_id}
        out.controls.append(
            TaskSnapshot(
                task=self.id,
                checkpoint_id=e.checkpoint_id,
                state=part.state,
                offset=part.offset,
                channel_states=part.channel_states,
                sent=part.sent,
                received=part.received,
                consumed=part.consumed,
                finished=part.finished,
            )
        )

    def _halt(self, e: HaltSource | ResumeSource, out: Out) -> None:
        self.halted = type(e) is HaltSource

    # -- recovery ----------------------------------------------------------------------------
    def restore(self, snapshot: TaskSnapshot | None) -> tuple[ChannelId | None, ...]:
        """Reset to ``snapshot`` (None: the initial state).

        Returns the inputs consumed since the snapshot, in order (None for an entry of the
        task's own input log): partial recovery replays them in this order.
        """
        consumed = snapshot.consumed if snapshot else 0
        since: list[ChannelId | None] = []
        log = self.log
        for _ in range(self.consumed - consumed if self.history else 0):
            assert log is not None  # it holds every input consumed since the snapshot
            entry, log = log
            since.append(entry)
        since.reverse()
        # A task failing again while replaying has not re-consumed the rest of its replay:
        # consumed before the first failure, it comes after what it has re-consumed.
        since.extend(self.replay)
        self.log = log
        self.consumed = consumed
        self.handler = self.protocol.handler(self.graph, self.id)
        self.parts = {}
        self.halted = False
        self.replay = ()
        self.cancelled = 0
        self.ended = self.closed = frozenset()
        self.at_end = snapshot.finished if snapshot is not None else False
        self.taken = frozenset()
        self.timer = None
        if snapshot is None:
            self.state = self.fn.initial_state()
            self.offset = 0
            self.sent = dict.fromkeys(self.outputs, 0)
            self.received = dict.fromkeys(self.inputs, 0)
        else:
            self.state = self.fn.copy_state(snapshot.state)
            self.offset = snapshot.offset
            self.sent = {c: snapshot.sent.get(c, 0) for c in self.outputs}
            self.received = {c: snapshot.received.get(c, 0) for c in self.inputs}
        self.state = self.fn.initialize_state(self.id, self.state, True)
        return tuple(since)

    # -- value semantics ---------------------------------------------------------------------
    def clone(self) -> StreamTask:
        new = StreamTask.__new__(StreamTask)
        new.graph, new.id, new.label = self.graph, self.id, self.label
        new.fn, new.gates = self.fn, self.gates
        new.history, new.dedup, new.counts_ended = self.history, self.dedup, self.counts_ended
        new.columnar = self.columnar
        new.inputs, new.outputs, new.protocol = self.inputs, self.outputs, self.protocol
        new.awaited = self.awaited
        new.handler = self.handler.clone()
        new.state = self.fn.copy_state(self.state)
        new.offset, new.consumed, new.log = self.offset, self.consumed, self.log
        new.sent, new.received = dict(self.sent), dict(self.received)
        new.parts = {n: p.copy() for n, p in self.parts.items()} if self.parts else {}
        new.halted, new.replay, new.dropped = self.halted, self.replay, self.dropped
        new.cancelled, new.ended, new.closed = self.cancelled, self.ended, self.closed
        new.at_end, new.logged = self.at_end, self.logged
        new.taken, new.declines = self.taken, self.declines
        new.timer, new.untimed = self.timer, self.untimed
        return new

    def key(self) -> object:
        """Equal for tasks in the same state (the input order log and counters of dropped
        duplicates are history, not state; so are the checkpoints taken, which the
        coordinator's acknowledgements hold)."""
        return (
            self.fn.freeze(self.state),
            self.offset,
            self.handler.key(),
            self.halted,
            tuple(self.sent.values()),
            tuple(self.received.values()),
            tuple((n, p.key(self.fn)) for n, p in self.parts.items()),
            self.replay,
            self.cancelled,
            self.ended,
            self.closed,
            self.at_end,
        )

    def describe(self) -> str:
        """One line: the protocol state, for views."""
        text = self.handler.describe()
        return f"{text}, halted" if self.halted else text


_EFFECTS: dict[type, Callable[[StreamTask, Any, Out], None]] = {
    BroadcastEvent: StreamTask._broadcast,
    Block: StreamTask._control,
    Unblock: StreamTask._control,
    Decline: StreamTask._declined,
    SnapshotState: StreamTask._snapshot,
    RecordChannelState: StreamTask._channel_state,
    Acknowledge: StreamTask._acknowledge,
    HaltSource: StreamTask._halt,
    ResumeSource: StreamTask._halt,
}
"""What :meth:`StreamTask._apply` does with each protocol effect."""


def uncommitted(tasks: Iterable[StreamTask]) -> int:
    """The output ``tasks`` hold that is not yet visible outside the job
    (:meth:`~absnb.operators.base.Operator.uncommitted`: a two-phase-commit sink's open and
    pre-committed transactions), which only a completed checkpoint commits: the measure the
    coordinator decides the final checkpoint by (FLIP-147,
    :meth:`~absnb.CheckpointCoordinator.final_checkpoint_due`), in the
    simulator (the world's sinks) and on Spark (a host's tasks, once they have finished)."""
    return sum(task.fn.uncommitted(task.state) for task in tasks)
