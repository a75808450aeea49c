"""The marks of a space-time diagram, read from a run's event rows: arrows, snapshot
points, crashes, recoveries.

Pure: each function reads :class:`~absnb.core.events.EventRow` s (a simulated run's, from
:func:`absnb.views.simulated.simulated`) and returns plain values; nothing here draws.
:func:`absnb.views.timeline.message_arrows` takes a stepper's trace and world instead.

Example:
    >>> import absnb
    >>> from absnb.views.timeline import message_arrows
    >>> s = absnb.Stepper(absnb.World(absnb.word_count(), "abs", checkpoint_interval=5),
    ...                   absnb.RandomScheduler(seed=1))
    >>> _ = s.run()
    >>> arrows = message_arrows(s.trace, s.world)
    >>> all(a.received_step is not None for a in arrows)
    True
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal, NamedTuple

from absnb.core.events import EventRow
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    OnChannel,
    RecordBatch,
)
from absnb.i18n import gettext as _
from absnb.views.drawn_run import DrawnRun

RecoveryMode = Literal["full", "partial"]

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
    """A task crashed at a step (a real run: a time in seconds)."""

    step: float
    task: TaskId


class RecoveryPoint(NamedTuple):
    """A recovery at a step (a real run: a time) restored a checkpoint (0: the initial
    state) into tasks."""

    step: float
    checkpoint_id: CheckpointId
    tasks: tuple[TaskId, ...]
    mode: RecoveryMode


def message_kind(message: OnChannel | RecordBatch) -> MessageKind:
    """``barrier``, ``marker``, ``cancel``, ``end`` or ``record``."""
    return _CONTROL_KINDS.get(type(message), "record")


# -- the pure part ---------------------------------------------------------------------------
_SENT_KINDS: dict[str, MessageKind] = {
    "barrier": "barrier",
    "marker": "marker",
    "cancel": "cancel",
    "end_of_input": "end",
}
"""A delivery row's kind, and what a ``sent`` row of a control message says it sent."""


def _label(kind: MessageKind, row: EventRow) -> str:
    """A message as printed, from the row that sent or delivered it."""
    if kind == "record":
        return row.detail or ""
    if kind == "end":
        return "end of input"
    return f"{kind} {row.checkpoint}"


class _Pending:
    """A message whose end is not known yet (mutable while the rows are read)."""

    __slots__ = ("channel", "dropped", "kind", "label", "lost", "received", "restored", "sent")

    def __init__(
        self, channel: ChannelId, sent: int, kind: MessageKind, label: str, restored: bool
    ) -> None:
        self.channel = channel
        self.sent = sent
        self.kind = kind
        self.label = label
        self.restored = restored
        self.received: int | None = None
        self.dropped = False
        self.lost: int | None = None

    def arrow(self) -> Arrow:
        c = self.channel
        return Arrow(
            c,
            c.src,
            c.dst,
            self.sent,
            self.received,
            self.kind,
            self.label,
            self.dropped,
            self.restored,
            self.lost,
        )


def run_arrows(run: DrawnRun) -> list[Arrow]:
    """Every message of a simulated run's rows, matched send to delivery, in the order
    sent, as :func:`absnb.views.timeline.message_arrows` (a message delivered that no row
    sent was in transit since the first step shown)."""
    matcher = _Matcher(run.names, int(run.first))
    read = matcher.read
    for row in run.rows:
        read(row)
    return [p.arrow() for p in matcher.pending]


_DELIVERED: dict[str, MessageKind] = {"records": "record", **_SENT_KINDS}
"""What a delivery row's kind says was delivered."""


class _Matcher:
    """The messages of the rows read so far (:attr:`pending`, in the order sent) and those
    still in transit on each channel (by name), oldest first."""

    def __init__(self, tasks: dict[str, TaskId], start: int) -> None:
        self.tasks = tasks
        self.start = start
        self.queues: dict[str, deque[_Pending]] = {}
        self.pending: list[_Pending] = []
        self.overtook = False
        self.channels: dict[str, ChannelId] = {}

    def read(self, row: EventRow) -> None:
        """Take in one row: a send, a delivery, a barrier that overtook, a restore."""
        kind = row.kind
        if kind == "sent":
            self.send(row)
        elif kind in _DELIVERED:
            self.deliver(row, _DELIVERED[kind])
        elif kind == "overtaken":
            self.overtook = bool(row.count)
        elif kind == "restored" and row.task is not None:
            self.restore(row, self.tasks[row.task])

    def channel(self, name: str) -> ChannelId:
        c = self.channels.get(name)
        if c is None:
            src, dst = name.split("->")
            c = self.channels[name] = ChannelId(self.tasks[src], self.tasks[dst])
        return c

    def deliver(self, row: EventRow, kind: MessageKind) -> None:
        """A delivery ends the oldest message on its channel (FIFO), or the first barrier
        there when it overtook records (unaligned)."""
        assert row.channel is not None
        q = self.queues.get(row.channel)
        if q and self.overtook:
            i = next(i for i, x in enumerate(q) if x.kind != "record")
            p = q[i]
            del q[i]
        elif q:
            p = q.popleft()
        else:  # in transit before the trace began
            p = self._new(self.channel(row.channel), self.start, kind, _label(kind, row), False)
        self.overtook = False
        p.received = int(row.time)
        p.dropped = kind == "record" and row.count == 0

    def restore(self, row: EventRow, task: TaskId) -> None:
        """A recovery restarted ``task``: the messages on its input channels are lost (the
        rows that follow put the snapshot's channel state back in transit)."""
        for name, q in self.queues.items():
            if self.channels[name].dst == task:
                for p in q:
                    p.lost = int(row.time)
                q.clear()

    def send(self, row: EventRow) -> None:
        """A message goes in transit on its channel."""
        name = row.channel
        assert name is not None
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = deque()
        if row.count is not None:  # a record
            p = _Pending(
                self.channel(name),
                int(row.time),
                "record",
                row.detail or "",
                row.checkpoint is not None,
            )
        else:
            kind = _SENT_KINDS[row.detail or ""]
            p = _Pending(self.channel(name), int(row.time), kind, _label(kind, row), False)
        q.append(p)
        self.pending.append(p)

    def _new(
        self, c: ChannelId, sent: int, kind: MessageKind, label: str, restored: bool
    ) -> _Pending:
        p = _Pending(c, sent, kind, label, restored)
        self.pending.append(p)
        return p


def snapshot_points(run: DrawnRun) -> list[SnapshotPoint]:
    """Every ``(task, step, checkpoint id)`` at which a task recorded its state."""
    return [
        SnapshotPoint(run.task(r.task), int(r.time), r.checkpoint or 0)
        for r in run.rows
        if r.kind == "snapshot"
    ]


def completion_steps(run: DrawnRun) -> dict[CheckpointId, int]:
    """The step at which each completed checkpoint completed."""
    return {r.checkpoint or 0: int(r.time) for r in run.rows if r.kind == "completed"}


def checkpoint_cuts(run: DrawnRun) -> dict[CheckpointId, dict[TaskId, int]]:
    """For every completed checkpoint, the step at which each task recorded its state:
    the cut the global snapshot was taken along."""
    recorded: dict[CheckpointId, dict[TaskId, int]] = {}
    cuts: dict[CheckpointId, dict[TaskId, int]] = {}
    for r in run.rows:
        if r.kind == "snapshot":
            recorded.setdefault(r.checkpoint or 0, {})[run.task(r.task)] = int(r.time)
        elif r.kind == "completed":
            cuts[r.checkpoint or 0] = dict(recorded.get(r.checkpoint or 0, {}))
    return cuts


def crash_steps(run: DrawnRun) -> list[CrashPoint]:
    """Every crash of a task: its step and the failed task."""
    return [
        CrashPoint(run.at(r.time), run.task(r.task))
        for r in run.rows
        if r.kind == "failure" and r.task in run.names
    ]


def recovery_steps(run: DrawnRun) -> list[RecoveryPoint]:
    """Every recovery: its step, the checkpoint restored and the tasks that restarted (a
    real run's tasks restore one by one: each attempt's restores are one recovery, at the
    first)."""
    out: list[RecoveryPoint] = []
    attempt = -1
    for r in run.rows:
        if r.kind != "restored" or r.task not in run.names:
            continue
        mode: RecoveryMode = "partial" if r.detail == "partial" else "full"
        last = out[-1] if out else None
        at = run.at(r.time)
        same = last is not None and (last.step == at or (run.unit == "s" and r.attempt == attempt))
        attempt = r.attempt
        if last is not None and same and last.checkpoint_id == r.checkpoint:
            out[-1] = last._replace(tasks=(*last.tasks, run.task(r.task)))
        else:
            out.append(RecoveryPoint(at, r.checkpoint or 0, (run.task(r.task),), mode))
    return out
