"""A one-task test harness, in the manner of Flink's ``StreamTaskTestHarness``.

Build one task with N input channels under any protocol, push records, barriers,
cancellation markers and end of input on a named channel, and read what the task emitted
(in order, records apart from control messages), which channels are blocked, the checkpoint
it is aligning, the checkpoints it took with their recorded in-flight data, those it
aborted or declined, and which ends of input it has consumed. No simulator, no
scheduler: each push is processed at once, and what arrives on a blocked channel waits, in
order, until the channel is unblocked (Flink's ``CheckpointedInputGate``). Under a protocol
whose barriers overtake records (``unaligned``) a barrier is a priority event: it is processed
before older arrivals, ahead of the records queued before it on its channel; a cancellation
marker never overtakes (:func:`~absnb.protocols.overtaken.priority_event`).

Example:
    >>> from absnb.harness import TaskHarness
    >>> h = TaskHarness("abs", inputs=2)
    >>> h.push("in0", "x"); h.barrier("in0", 1); h.push("in0", "y")
    >>> h.blocked
    ['in0']
    >>> h.aligning
    1
    >>> h.barrier("in1", 1)
    >>> h.emitted
    ['x', CheckpointBarrier(checkpoint_id=1), 'y']
    >>> h.records, h.events
    (['x', 'y'], [CheckpointBarrier(checkpoint_id=1)])
    >>> [c.checkpoint_id for c in h.checkpoints]
    [1]
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from absnb.core import validate
from absnb.core.effects import Block, Decline, SnapshotState, Unblock
from absnb.core.errors import ProtocolSettingError
from absnb.core.graph import MAX_PARALLELISM, ExecutionGraph, JobGraph
from absnb.core.ids import ChannelId, CheckpointId
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
from absnb.operators import Operator
from absnb.operators.library import CollectSink, Map, Source, identity
from absnb.protocols import get_protocol
from absnb.protocols.base import SnapshotProtocol
from absnb.protocols.overtaken import overtaken, overtaking_position, priority_event
from absnb.task import Dropped, Out, StreamTask


def harness_graph(inputs: int, operator: Operator) -> ExecutionGraph:
    """``in0 .. in{N-1}`` (sources) -> ``task`` (the operator under test) -> ``out``."""
    g = JobGraph("harness")
    for i in range(inputs):
        g.add(f"in{i}", "source", Source())
    g.add("task", "operator", operator)
    g.add("out", "sink", CollectSink())
    for i in range(inputs):
        g.connect(f"in{i}", "task")
    g.connect("task", "out")
    return g.compile()


class TaskHarness:
    """One task under test.

    Args:
        protocol: a protocol name or object (``abs``, ``unaligned``, ``at-least-once``, ...).
        inputs: how many input channels (named ``in0``, ``in1``, ...).
        operator: the operator under test (default: the identity map).
        alignment_timeout: with ``abs``: the alignment timeout (fired by :meth:`timeout`).
        autoprocess: process each input as it arrives; with False inputs queue until
            :meth:`process` (so that an unaligned barrier has records to overtake).

    Attributes:
        emitted: what the task sent on its output, in order: record values, and control
            messages as message objects (``CheckpointBarrier(1)``, ``CancelCheckpointMarker(2)``),
            so that a record whose value is the text ``"barrier 1"`` is no barrier.
        records: the record values alone, in order.
        events: the control messages alone, in order (Flink: the harness's output events).
        checkpoints: the task's acknowledged snapshots (state, offsets, and the in-flight
            records of each input channel under ``channel_states``).
        declined: ``(checkpoint id, reason)`` of each checkpoint the task declined, itself
            or because a newer checkpoint's barrier overtook its alignment (subsumed).
        aborted: the checkpoints the task gave up, in order: declined, cancelled by a
            cancellation marker it sent on, or aborted by the coordinator (:meth:`abort`).

    Raises:
        ProtocolSettingError: fewer than one input, or more than MAX_PARALLELISM.
        InvalidTypeError, InvalidValueError: (later) a checkpoint id that is not a whole
            number of at least 1.
    """

    def __init__(
        self,
        protocol: str | SnapshotProtocol = "abs",
        inputs: int = 2,
        operator: Operator | None = None,
        *,
        alignment_timeout: float | None = None,
        autoprocess: bool = True,
    ) -> None:
        if isinstance(inputs, bool) or not isinstance(inputs, int) or inputs < 1:
            raise ProtocolSettingError(
                f"a harness task needs a whole number of inputs >= 1, not {inputs!r}"
            )
        if inputs > MAX_PARALLELISM:
            raise ProtocolSettingError(
                f"a harness task takes at most {MAX_PARALLELISM} inputs, not {inputs:,}"
            )
        self.graph = harness_graph(inputs, operator if operator is not None else Map(identity))
        self.protocol = get_protocol(protocol, self.graph, alignment_timeout=alignment_timeout)
        (self.task_id,) = self.graph.tasks_of("task")
        self.task = StreamTask(self.graph, self.task_id, self.protocol)
        self.channels: dict[str, ChannelId] = {
            f"in{i}": self.graph.channel(f"in{i}->task") for i in range(inputs)
        }
        self._names = {c: name for name, c in self.channels.items()}
        self._queue: list[tuple[ChannelId, Message | EndOfInput]] = []
        self._sent = dict.fromkeys(self.channels.values(), 0)
        self._blocked: set[ChannelId] = set()
        self.emitted: list[object] = []
        self.records: list[object] = []
        self.events: list[CheckpointBarrier | Marker | CancelCheckpointMarker | EndOfInput] = []
        self.checkpoints: list[TaskSnapshot] = []
        self.declined: list[tuple[CheckpointId, str]] = []
        self.aborted: list[CheckpointId] = []
        self._ending: list[str] = []
        self.autoprocess = autoprocess
        self.now = 0.0
        """The harness's clock, in the alignment timeout's unit (moved by :meth:`advance`)."""

    # -- inputs ------------------------------------------------------------------------------
    def channel(self, name: str) -> ChannelId:
        """The input channel called ``name`` (``in0``, ...).

        Raises:
            KeyError: no such input; the message lists the inputs.
        """
        if name not in self.channels:
            raise KeyError(
                f"the harness task has no input {name!r}: use one of {', '.join(self.channels)}"
            )
        if name in self._ending:
            raise ProtocolSettingError(f"input {name} has ended: nothing more arrives on it")
        return self.channels[name]

    def push(self, name: str, *values: object) -> None:
        """Records with ``values`` arrive on input ``name``, numbered in order."""
        c = self.channel(name)
        for v in values:
            self._sent[c] += 1
            self._queue.append((c, Record(v, self._sent[c])))
        self._drain()

    def barrier(self, name: str, checkpoint_id: CheckpointId) -> None:
        """The barrier of ``checkpoint_id`` arrives on input ``name`` (the task hears of it)."""
        self._queue.append((self.channel(name), CheckpointBarrier(_id(checkpoint_id))))
        self.task.hear(_id(checkpoint_id), self.now)
        self._drain()

    def cancel(self, name: str, checkpoint_id: CheckpointId) -> None:
        """A cancellation barrier (``CancelCheckpointMarker``) arrives on input ``name``."""
        self._queue.append((self.channel(name), CancelCheckpointMarker(_id(checkpoint_id))))
        self._drain()

    def end(self, name: str) -> None:
        """Input ``name`` ends, after what was pushed on it before (:attr:`ended` says when
        the task has consumed the end)."""
        c = self.channel(name)
        self._ending.append(name)
        self._queue.append((c, EndOfInput()))
        self._drain()

    # -- coordinator and runtime -------------------------------------------------------------
    def trigger(self, checkpoint_id: CheckpointId) -> None:
        """The coordinator triggers ``checkpoint_id`` at the task, as it does at a source or
        at a task whose inputs have all ended (FLIP-147: no barrier can reach it)."""
        self._run(lambda out: self.task.trigger(_id(checkpoint_id), out, self.now))

    def timeout(self) -> None:
        """Switch to unaligned now, whatever the clock says (protocol ``abs-timeout``)."""
        self._run(self.task.alignment_timeout)

    def advance(self, dt: float) -> None:
        """Time passes (``dt`` in the alignment timeout's unit): what the alignment timer
        then decides happens (:mod:`absnb.protocols.alignment_timer`): the task switches
        if it aligns an overdue checkpoint, and the barriers of overdue checkpoints queued
        behind records overtake them. What was overdue before time passed happens first
        (a barrier that arrived late for an overdue checkpoint overtakes before a newer
        checkpoint becomes overdue too), as a host delivers it when it sees it."""
        dt = validate.nonnegative("dt", dt)
        self._time()
        self.now += dt
        self._time()
        self._drain()

    def _time(self) -> None:
        """Carry out what the task's alignment timer decides now
        (:meth:`~absnb.task.StreamTask.tick`)."""
        out = Out()
        _, overdue = self.task.tick(self.now, out)
        self._after(out)
        for c in self.channels.values() if overdue else ():
            while (j := self._position(c, False, overdue)) is not None:
                self._deliver_overtaking(c, j)

    def decline(self, checkpoint_id: CheckpointId, reason: str = "declined in a test") -> None:
        """The task declines ``checkpoint_id``."""
        self._run(lambda out: self.task.decline(_id(checkpoint_id), reason, out))

    def complete(self, checkpoint_id: CheckpointId) -> None:
        """The coordinator notifies that ``checkpoint_id`` completed."""
        self._run(lambda out: self.task.checkpoint_complete(_id(checkpoint_id), out))

    def abort(self, checkpoint_id: CheckpointId) -> None:
        """The coordinator notifies that ``checkpoint_id`` was aborted."""
        self._gave_up(_id(checkpoint_id))
        self._run(lambda out: self.task.checkpoint_aborted(checkpoint_id, out))

    # -- observation -------------------------------------------------------------------------
    @property
    def blocked(self) -> list[str]:
        """The blocked inputs, by name, in input order."""
        return [n for n, c in self.channels.items() if c in self._blocked]

    @property
    def ended(self) -> list[str]:
        """The inputs whose end the task has consumed (an end pushed behind a blocked
        channel's queue is not consumed yet), in input order."""
        return [n for n, c in self.channels.items() if c in self.task.ended]

    @property
    def aligning(self) -> CheckpointId | None:
        """The newest checkpoint the task has started and not finished (its barriers are
        being aligned, or its in-flight data recorded); None when none is."""
        pending = [w.checkpoint_id for w in self.task.handler.waiting()]
        return max(pending) if pending else None

    @property
    def latest_checkpoint_id(self) -> CheckpointId:
        """The newest checkpoint the task has seen a barrier or cancellation of, pending or
        not (Flink: ``CheckpointBarrierHandler.getLatestCheckpointId``); 0: none."""
        return self.task.handler.latest_checkpoint_id()

    @property
    def queued(self) -> dict[str, list[object]]:
        """What waits on each input (behind a block): record values and control messages,
        as in ``emitted``."""
        out: dict[str, list[object]] = {}
        for c, m in self._queue:
            out.setdefault(self._names[c], []).append(m.value if type(m) is Record else m)
        return out

    @property
    def state(self) -> Any:
        """The operator state of the task."""
        return self.task.state

    def in_flight(self, checkpoint_id: CheckpointId) -> dict[str, list[object]]:
        """The values recorded as in-flight data (channel state) per input in checkpoint
        ``checkpoint_id`` (inputs with none recorded are left out)."""
        for snap in self.checkpoints:
            if snap.checkpoint_id == checkpoint_id:
                return {
                    self._names[c]: [r.value for r in as_records(rs)]
                    for c, rs in snap.channel_states.items()
                    if rs
                }
        taken = [s.checkpoint_id for s in self.checkpoints]
        raise KeyError(f"the task took no checkpoint {checkpoint_id}; it took {taken}")

    def describe(self) -> str:
        """The protocol state in one line."""
        return self.task.describe()

    # -- processing --------------------------------------------------------------------------
    def _run(self, act: Callable[[Out], None]) -> None:
        out = Out()
        act(out)
        self._after(out)
        self._drain()

    def _after(self, out: Out) -> None:
        """Record what the task sent, then carry out its controls (one table)."""
        for _, m in out.sends:
            if isinstance(m, Record):
                self.emitted.append(m.value)
                self.records.append(m.value)
                continue
            assert not isinstance(m, RecordBatch)  # the harness delivers record by record
            self.emitted.append(m)
            self.events.append(m)
            if type(m) is CancelCheckpointMarker:
                self._gave_up(m.checkpoint_id)
        for ctl in out.controls:
            _CONTROLS[type(ctl)](self, ctl)

    def _block(self, ctl: Block) -> None:
        self._blocked.add(ctl.channel)

    def _unblock(self, ctl: Unblock) -> None:
        self._blocked.discard(ctl.channel)

    def _passed_over(self, ctl: SnapshotState | Dropped) -> None:
        """Nothing to record."""

    def _took(self, ctl: TaskSnapshot) -> None:
        self.checkpoints.append(ctl)

    def _declined(self, ctl: Decline) -> None:
        self.declined.append((ctl.checkpoint_id, ctl.reason))
        self._gave_up(ctl.checkpoint_id)

    def _gave_up(self, checkpoint_id: CheckpointId) -> None:
        if checkpoint_id not in self.aborted:
            self.aborted.append(checkpoint_id)

    def process(self) -> None:
        """Process what can be processed, oldest first, until nothing can (automatic unless
        the harness was made with ``autoprocess=False``)."""
        self._drain(force=True)

    def _drain(self, force: bool = False) -> None:
        if not (self.autoprocess or force):
            return
        while True:
            self._time()  # overdue barriers first, as a host delivers them when it sees them
            nxt = self._next()
            if nxt is None:
                return
            c, j = nxt
            i = self._position(c, self.protocol.barriers_overtake)
            if i is not None and i == j:
                self._deliver_overtaking(c, i)
            else:
                self._deliver(c, self._queue.pop(j)[1])

    def _next(self) -> tuple[ChannelId, int] | None:
        """The channel and queue position of what the task consumes next: the oldest priority
        event on an unblocked input (a host takes it off its priority lane as it arrives),
        else the oldest message on an unblocked input (Flink's ``CheckpointedInputGate``)."""
        overtake = self.protocol.barriers_overtake
        oldest = None
        for j, (c, m) in enumerate(self._queue):
            if c in self._blocked:
                continue
            if priority_event(m, overtake):
                return c, j
            if oldest is None:
                oldest = c, j
        return oldest

    def _position(
        self, c: ChannelId, overtake: bool, overdue: Collection[CheckpointId] = ()
    ) -> int | None:
        """The queue position of the barrier a delivery of ``c`` takes ahead of what is
        queued before it (:func:`~absnb.protocols.overtaken.overtaking_position`), if any."""
        on = [j for j, (cj, _) in enumerate(self._queue) if cj == c]
        k = overtaking_position((self._queue[j][1] for j in on), overtake, overdue)
        return None if k is None else on[k]

    def _deliver_overtaking(self, c: ChannelId, j: int) -> None:
        barrier = self._queue.pop(j)[1]
        assert isinstance(barrier, CheckpointBarrier)  # j: found by _position
        records = overtaken(m for cj, m in self._queue[:j] if cj == c)
        out = Out()
        self.task.deliver_overtaking(c, barrier, records, out)
        self._after(out)

    def _deliver(self, c: ChannelId, m: Message | EndOfInput) -> None:
        out = Out()
        self.task.deliver(c, m, out)
        self._after(out)

    def __repr__(self) -> str:
        return (
            f"<TaskHarness {self.protocol.name} inputs={len(self.channels)} "
            f"blocked={self.blocked} checkpoints={[s.checkpoint_id for s in self.checkpoints]}>"
        )


def _id(checkpoint_id: object) -> CheckpointId:
    """``checkpoint_id`` checked: a whole number of at least 1 (an InvalidTypeError names a
    string such as ``'1'``, instead of a comparison failing inside the protocol)."""
    return validate.whole("checkpoint_id", checkpoint_id, minimum=1)


_CONTROLS: dict[type, Callable[[TaskHarness, Any], None]] = {
    Block: TaskHarness._block,
    Unblock: TaskHarness._unblock,
    SnapshotState: TaskHarness._passed_over,  # its task snapshot follows, acknowledged
    TaskSnapshot: TaskHarness._took,
    Dropped: TaskHarness._passed_over,  # a duplicate dropped
    Decline: TaskHarness._declined,
}
"""What the harness does with each of its task's controls."""
