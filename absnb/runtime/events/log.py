"""A host's event log: what its tasks do, on its own clock, sent to the driver in batches.

The host calls this from a few places only: what a task's step returned (the controls:
block, unblock, snapshot, the task snapshot, decline, :meth:`EventLog.controls`), what it
delivered on a channel (a barrier, marker, cancellation, the end of input, a barrier that
overtook records, or records, which are only counted per channel per time bucket,
:meth:`EventLog.delivered`), an acknowledgement, a command of the coordinator, a switch to
unaligned, the restore and an injected failure. Rows wait in a short list that
:meth:`EventLog.ship` sends to the coordinator (an :class:`EventBatch`) every
:data:`SHIP_EVERY` seconds, so a host's memory stays bounded however long it runs; the
driver aligns each host's clock to its own (:mod:`absnb.runtime.events.table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from time import monotonic
from typing import TYPE_CHECKING, Any, Protocol

from absnb.core.effects import Block, Decline, SnapshotState, Unblock
from absnb.core.events import channel_name, checkpoint_of
from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    RecordBatch,
)
from absnb.core.snapshot import GlobalSnapshot, TaskSnapshot
from absnb.runtime.data_plane.priority import Overtaking
from absnb.runtime.failures import Failure

if TYPE_CHECKING:
    from absnb.runtime.plan import HostPlan
    from absnb.task import StreamTask

BUCKET = 0.05
"""Records are counted per channel per bucket of this many seconds, at first."""
WIDER = ((120.0, 1.0), (3600.0, 10.0))
"""Wider buckets as a host runs on (after 2 minutes 1 s, after an hour 10 s), so that a long
run's counts stay few: per channel at most 2,400 + 3,480 buckets, then 360 an hour."""


def bucket_width(elapsed: float) -> float:
    """The bucket width (seconds) for a host that has run ``elapsed`` seconds."""
    width = BUCKET
    for after, wider in WIDER:
        if elapsed >= after:
            width = wider
    return width


SHIP_EVERY = 0.25
"""A host sends its rows to the driver this often (seconds)."""


class EventSink(Protocol):
    """Where :meth:`EventLog.ship` sends the rows: the host's
    :class:`~absnb.runtime.control_plane.client.ControlClient` (which imports this module, hence
    a protocol)."""

    def events(self, batch: EventBatch) -> None:
        """Send ``batch`` to the driver."""


Row = tuple[float, str | None, str, str | None, int | None, dict[str, Any] | None]
"""A host's raw row: (its own monotonic time, task, kind, channel, checkpoint, extra)."""

_RECEIVED = {
    CheckpointBarrier: "barrier",
    Marker: "marker",
    CancelCheckpointMarker: "cancel",
    EndOfInput: "end_of_input",
}


@dataclass(frozen=True)
class EventBatch:
    """Host -> coordinator: rows recorded since the last batch, and ``flow``, records per
    ``(bucket start, channel name)`` in buckets ``width`` seconds long; ``sent_at`` and the
    bucket starts are on the host's clock."""

    host_id: int
    attempt: int
    sent_at: float
    rows: tuple[Row, ...]
    flow: dict[tuple[float, str], int]
    width: float = BUCKET


class EventLog:
    """The event log of one host in one attempt (``enabled=False``: records nothing)."""

    def __init__(self, plan: HostPlan, tasks: dict[TaskId, StreamTask]) -> None:
        self.plan = plan
        self.tasks = tasks
        self.enabled = plan.events
        self.rows: list[Row] = []
        self.flow: dict[tuple[int, ChannelId], int] = {}
        self.names: dict[ChannelId, str] = {}
        self.started = monotonic()
        self.next_ship = self.started + SHIP_EVERY
        self.width = BUCKET
        self.bucket = int(self.started / BUCKET)
        """The time bucket records are counted in now (the host's loop moves it on each
        round, in :meth:`ship`: one clock reading a round, none a batch)."""
        self.client: EventSink | None = None
        self.pending: dict[TaskId, list[tuple[int, Any]]] = {}
        """Each two-phase-commit sink's pre-committed transactions, by checkpoint."""
        self.sinks = [t for t in tasks if plan.job.graph.function(t).external]
        self.leftovers = {t: self._leftovers(t) for t in self.sinks} if plan.attempt else {}

    def _leftovers(self, t: TaskId) -> list[Any]:
        """Transactions the failed attempt left open or pre-committed in the sink's system."""
        leftovers = getattr(self.tasks[t].fn, "leftovers", None)
        return list(leftovers(str(t))) if leftovers is not None else []

    def name(self, c: ChannelId) -> str:
        name = self.names.get(c)
        if name is None:
            name = self.names[c] = channel_name(c.src, c.dst)
        return name

    def add(
        self,
        kind: str,
        task: object = None,
        channel: ChannelId | None = None,
        checkpoint: int | None = None,
        **extra: Any,
    ) -> None:
        """Record one event now."""
        if self.enabled:
            c = self.name(channel) if channel is not None else None
            t = None if task is None else str(task)
            self.rows.append((monotonic(), t, kind, c, checkpoint, extra or None))

    # -- the hooks of the host ----------------------------------------------------------------
    def delivered(self, c: ChannelId, m: Any) -> None:
        """``m`` came on ``c`` and goes to its task: counted if records, else recorded."""
        if not self.enabled:
            return
        kind = type(m)
        if kind is RecordBatch:  # the hot path: one dict update a batch
            key = (self.bucket, c)
            self.flow[key] = self.flow.get(key, 0) + len(m)
            return
        if kind is Overtaking:
            overtaken = sum(len(x) if type(x) is RecordBatch else 1 for x in m.overtaken)
            self.add("overtaken", c.dst, c, m.message.checkpoint_id, count=overtaken)
            m, kind = m.message, type(m.message)
        what = _RECEIVED.get(kind)
        if what is None:  # a single record
            key = (self.bucket, c)
            self.flow[key] = self.flow.get(key, 0) + 1
            return
        self.add(what, c.dst, c, None if kind is EndOfInput else checkpoint_of(m))

    def controls(self, t: TaskId, controls: Any) -> None:
        """What task ``t``'s step returned: block, unblock, its snapshot, a decline."""
        if not self.enabled:
            return
        for ctl in controls:
            kind = type(ctl)
            if kind is Block or kind is Unblock:
                self.add("block" if kind is Block else "unblock", t, ctl.channel)
            elif kind is SnapshotState:
                self.add("snapshot_state", t, None, ctl.checkpoint_id)
                self._pre_commit(t, ctl.checkpoint_id)
            elif kind is TaskSnapshot:
                self._snapshot(ctl)
            elif kind is Decline:
                self.add("declined", t, None, ctl.checkpoint_id, detail=ctl.reason)

    def _snapshot(self, s: TaskSnapshot) -> None:
        """The task snapshot, acknowledged by the task: its per-channel counts."""
        recorded = {
            self.name(c): sum(len(x) if type(x) is RecordBatch else 1 for x in ms)
            for c, ms in s.channel_states.items()
        }
        self.add(
            "snapshot_counts",
            s.task,
            None,
            s.checkpoint_id,
            sent={self.name(c): n for c, n in s.sent.items()},
            consumed={self.name(c): n for c, n in s.received.items()},
            recorded=recorded,
        )

    def _pre_commit(self, t: TaskId, n: int) -> None:
        if t not in self.sinks:
            return
        for m, txn in getattr(self.tasks[t].state, "pending", ()):
            if m == n:
                self.pending.setdefault(t, []).append((m, txn))
                self.add("pre_commit", t, None, n, detail=str(txn))

    def command(self, t: TaskId, checkpoint_id: int, complete: bool) -> None:
        """``t`` heard that ``checkpoint_id`` completed (``complete``) or was aborted: a
        two-phase-commit sink committed its transactions up to it."""
        if not complete or t not in self.pending:
            return
        done = [(m, txn) for m, txn in self.pending[t] if m <= checkpoint_id]
        for m, txn in done:
            self.add("commit", t, None, m, detail=str(txn))
        self.pending[t] = [p for p in self.pending[t] if p[0] > checkpoint_id]

    def ack(self, s: TaskSnapshot, size: int) -> None:
        """``s`` is durable and about to be acknowledged: the log goes first, so that the
        driver has every snapshot of a checkpoint once it completes."""
        self.add("ack", s.task, None, s.checkpoint_id, size=size)
        self.ship(force=True)

    def restored(self, snapshot: GlobalSnapshot | None) -> None:
        """This attempt's tasks restored ``snapshot`` (None: the initial state); a sink
        committed the transactions it names and aborted the failed attempt's others."""
        n = snapshot.checkpoint_id if snapshot is not None else 0
        for t in self.tasks:
            self.add("restored", t, None, n)
        for t in self.sinks:
            state = snapshot.tasks[t].state if snapshot is not None else None
            kept = {txn for _, txn in getattr(state, "pending", ())}
            for m, txn in getattr(state, "pending", ()):
                self.add("commit", t, None, m, detail=f"{txn} (on restore)")
            for txn in self.leftovers.get(t, ()):
                if txn not in kept:
                    self.add("abort_txn", t, None, None, detail=f"{txn} (on restore)")

    def on_fire(self, failure: Failure, reason: str) -> None:
        """An injected failure fires now: record it and send the log at once (a killed
        process could not afterwards)."""
        self.add("failure", failure.task, detail=f"{failure.kind}: {reason}")
        self.ship(force=True)

    def ship(self, force: bool = False, last: bool = False) -> None:
        """Move the records' time bucket on, and send what was recorded to the coordinator
        every :data:`SHIP_EVERY` seconds (or now, ``force``); the ``last`` time, as the host
        stops, if the connection still works. The host calls it every round of its loop."""
        now = monotonic()
        self.bucket = int(now / self.width)
        if now < self.next_ship and not (force or last):
            return
        self.next_ship = now + SHIP_EVERY
        width = self.width
        self.width = bucket_width(now - self.started)  # wider from the next bucket on
        self.bucket = int(now / self.width)
        if not self.enabled or self.client is None or not (self.rows or self.flow):
            return
        rows, self.rows = tuple(self.rows), []
        flow = {(b * width, self.name(c)): n for (b, c), n in self.flow.items()}
        self.flow = {}
        try:
            batch = EventBatch(self.plan.host_id, self.plan.attempt, now, rows, flow, width)
            self.client.events(batch)
        except ConnectionError:  # the coordinator is gone or stopped this host
            if not last:
                raise
