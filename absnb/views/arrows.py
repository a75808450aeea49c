"""The marks of a space-time diagram, read from a trace: arrows, snapshot points, crashes.

Pure: each function reads a trace and the world it ended in and returns plain values;
nothing here draws, and nothing changes the trace or the world.

Example:
    >>> import absnb
    >>> from absnb.views.arrows import message_arrows
    >>> s = absnb.Stepper(absnb.World(absnb.word_count(), "abs", checkpoint_interval=5),
    ...                   absnb.RandomScheduler(seed=1))
    >>> _ = s.run()
    >>> arrows = message_arrows(s.trace, s.world)
    >>> all(a.received_step is not None for a in arrows)
    True
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import (
    RECORD_TYPES,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    OnChannel,
    RecordBatch,
)
from absnb.i18n import gettext as _
from absnb.sim.actions import Crash, Deliver, Recover, RecoveryMode
from absnb.sim.events import Event
from absnb.sim.format import show_message

if TYPE_CHECKING:
    from absnb.sim.world import World

MessageKind = Literal["record", "barrier", "marker", "cancel", "end"]

_CONTROL_KINDS: dict[type, MessageKind] = {
    CheckpointBarrier: "barrier",
    Marker: "marker",
    CancelCheckpointMarker: "cancel",
    EndOfInput: "end",
}

KIND_NAMES: dict[MessageKind, tuple[str, str]] = {
    "record": ("record", "records"),
    "barrier": ("barrier", "barriers"),
    "marker": ("marker", "markers"),
    "cancel": ("cancellation marker", "cancellation markers"),
    "end": ("end of input", "ends of input"),
}
"""What the legends call each kind of message: one, and several (in English)."""


def kind_name(kind: MessageKind, several: bool = False) -> str:
    """What the legends call one message of ``kind`` (several: ``several``), in the
    language set."""
    names = {
        "record": (_("record"), _("records")),
        "barrier": (_("barrier"), _("barriers")),
        "marker": (_("marker"), _("markers")),
        "cancel": (_("cancellation marker"), _("cancellation markers")),
        "end": (_("end of input"), _("ends of input")),
    }
    return names[kind][several]


@dataclass(frozen=True, slots=True)
class Arrow:
    """One message on the diagram, from its send to its delivery.

    Attributes:
        channel: the channel it travelled on.
        src, dst: the sending and the receiving task.
        sent_step: the step that sent it; for a message put back in transit by a recovery
            (``restored``), the recovery's step; for one already in transit when the trace
            began, the trace's first step.
        received_step: the step that delivered it; None if it was not delivered (still in
            flight at the end, or ``lost_step`` is set).
        kind: ``record``, ``barrier`` (ABS), ``marker`` (Chandy-Lamport), ``cancel`` (a
            cancellation marker of a declined checkpoint) or ``end`` (end of input).
        label: the message as text (``1,000``, ``barrier 1``).
        dropped: delivered, but a duplicate the receiver dropped (partial recovery).
        restored: replayed from the snapshot's channel state by a recovery.
        lost_step: the recovery step that discarded it from its channel (the receiver
            restarted); None otherwise.
    """

    channel: ChannelId
    src: TaskId
    dst: TaskId
    sent_step: int
    received_step: int | None
    kind: MessageKind
    label: str
    dropped: bool = False
    restored: bool = False
    lost_step: int | None = None

    @property
    def in_flight(self) -> bool:
        """True when the message is still in its channel at the end of the trace."""
        return self.received_step is None and self.lost_step is None

    def describe(self) -> str:
        """Hover text: ``A->B: 1,000 sent at 0, delivered at 4``."""
        how = "replayed from snapshot" if self.restored else "sent"
        text = f"{self.channel}: {self.label} {how} at {self.sent_step}, "
        if self.received_step is not None:
            text += f"delivered at {self.received_step}"
            if self.dropped:
                text += " (duplicate, dropped)"
        elif self.lost_step is not None:
            text += f"discarded by the recovery at {self.lost_step}"
        else:
            text += "in flight"
        return text


class SnapshotPoint(NamedTuple):
    """A task recorded its state for a checkpoint at a step."""

    task: TaskId
    step: int
    checkpoint_id: CheckpointId


class CrashPoint(NamedTuple):
    """A task crashed at a step."""

    step: int
    task: TaskId


class RecoveryPoint(NamedTuple):
    """A recovery at a step restored a checkpoint (0: the initial state) into tasks."""

    step: int
    checkpoint_id: CheckpointId
    tasks: tuple[TaskId, ...]
    mode: RecoveryMode


def message_kind(message: OnChannel | RecordBatch) -> MessageKind:
    """``barrier``, ``marker``, ``cancel``, ``end`` or ``record``."""
    return _CONTROL_KINDS.get(type(message), "record")


# -- the pure part ---------------------------------------------------------------------------
class _Pending:
    """A message whose end is not known yet (mutable while the trace is read)."""

    __slots__ = ("channel", "dropped", "lost", "message", "received", "restored", "sent")

    def __init__(
        self, channel: ChannelId, sent: int, message: OnChannel | RecordBatch, restored: bool
    ) -> None:
        self.channel = channel
        self.sent = sent
        self.message = message
        self.restored = restored
        self.received: int | None = None
        self.dropped = False
        self.lost: int | None = None

    def arrow(self) -> Arrow:
        c, m = self.channel, self.message
        return Arrow(
            c,
            c.src,
            c.dst,
            self.sent,
            self.received,
            message_kind(m),
            show_message(m),
            self.dropped,
            self.restored,
            self.lost,
        )


def message_arrows(trace: Sequence[Event], world: World) -> list[Arrow]:
    """Every message of ``trace``, matched send to delivery, in the order sent.

    Channels are FIFO, so a delivery takes the oldest message still on its channel. A
    recovery discards the messages on every channel into a restarted task and puts the
    snapshot's channel state back in transit there (``restored``). ``world`` is the world
    the trace ended in (``stepper.world``): it holds the completed snapshots.

    Raises:
        ValueError: the trace restores a checkpoint that ``world`` has not completed.
    """
    matcher = _Matcher(world, trace[0].step if trace else 0)
    for event in trace:
        if type(event.action) is Deliver:
            matcher.deliver(event, event.action.channel)
        if event.restored is not None:
            matcher.restore(event, *event.restored)
        matcher.send(event)
    return [p.arrow() for p in matcher.pending]


class _Matcher:
    """The messages of a trace read so far (:attr:`pending`, in the order sent) and those
    still in transit on each channel, oldest first."""

    def __init__(self, world: World, start: int) -> None:
        self.world = world
        self.snapshots = {s.checkpoint_id: s for s in world.snapshots}
        self.start = start
        self.queues: dict[ChannelId, deque[_Pending]] = {}
        self.pending: list[_Pending] = []

    def deliver(self, event: Event, c: ChannelId) -> None:
        """The delivery of ``event`` ends the oldest message on ``c`` (FIFO), or the first
        barrier there when it overtook records (unaligned)."""
        q = self.queues.get(c)
        if q and event.overtaken:
            i = next(i for i, x in enumerate(q) if type(x.message) not in RECORD_TYPES)
            p = q[i]
            del q[i]
        elif q:
            p = q.popleft()
        else:  # in transit before the trace began
            assert event.message is not None
            p = self._new(c, self.start, event.message, False)
        p.received = event.step
        p.dropped = event.dropped

    def restore(self, event: Event, n: CheckpointId, tasks: tuple[TaskId, ...]) -> None:
        """A recovery restored checkpoint ``n`` (0: the initial state) into ``tasks``: the
        messages on their input channels are lost, the snapshot's channel state is put
        back in transit."""
        if n and n not in self.snapshots:
            raise ValueError(
                f"step {event.step} restores checkpoint {n}, but the world given has no "
                f"completed checkpoint {n} (it has {sorted(self.snapshots) or 'none'}): pass "
                "the world the trace ended in (stepper.world)"
            )
        states = self.snapshots[n].channel_states if n else {}
        restarted = set(tasks)
        for c in self.world.graph.channels:
            if c.dst not in restarted:
                continue
            q = self.queues.setdefault(c, deque())
            for p in q:
                p.lost = event.step
            q.clear()
            for record in states.get(c, ()):
                q.append(self._new(c, event.step, record, True))

    def send(self, event: Event) -> None:
        """The messages ``event`` sent go in transit on their channels."""
        for c, m in event.sent:
            self.queues.setdefault(c, deque()).append(self._new(c, event.step, m, False))

    def _new(
        self, c: ChannelId, sent: int, message: OnChannel | RecordBatch, restored: bool
    ) -> _Pending:
        p = _Pending(c, sent, message, restored)
        self.pending.append(p)
        return p


def snapshot_points(trace: Sequence[Event]) -> list[SnapshotPoint]:
    """Every ``(task, step, checkpoint id)`` at which a task recorded its state."""
    return [SnapshotPoint(t, e.step, n) for e in trace for t, n in e.snapshots]


def completion_steps(trace: Sequence[Event]) -> dict[CheckpointId, int]:
    """The step at which each completed checkpoint completed."""
    return {n: e.step for e in trace for n in e.completed}


def checkpoint_cuts(trace: Sequence[Event]) -> dict[CheckpointId, dict[TaskId, int]]:
    """For every completed checkpoint, the step at which each task recorded its state:
    the cut the global snapshot was taken along."""
    recorded: dict[CheckpointId, dict[TaskId, int]] = {}
    cuts: dict[CheckpointId, dict[TaskId, int]] = {}
    for e in trace:
        for t, n in e.snapshots:
            recorded.setdefault(n, {})[t] = e.step
        for n in e.completed:
            cuts[n] = dict(recorded.get(n, {}))
    return cuts


def crash_steps(trace: Sequence[Event]) -> list[CrashPoint]:
    """Every crash: its step and the failed task."""
    return [CrashPoint(e.step, e.action.task) for e in trace if type(e.action) is Crash]


def recovery_steps(trace: Sequence[Event]) -> list[RecoveryPoint]:
    """Every recovery: its step, the checkpoint restored and the tasks that restarted."""
    out = []
    for e in trace:
        if e.restored is not None and type(e.action) is Recover:
            out.append(RecoveryPoint(e.step, e.restored[0], e.restored[1], e.action.mode))
    return out
