"""A simulated run's trace as event rows (:mod:`absnb.core.events`), steps as time: the
same vocabulary a real run's event log uses, so one view draws both and one check
(:func:`~absnb.core.events.cut_problems`) reads both.

The simulator moves one message at a time, so its rows say more than a real run's: every
message put on a channel is a ``sent`` row (a record's with the record as printed, a
barrier's or marker's with its kind), every delivered record a ``records`` row of one
(none for a duplicate the receiver dropped) with the record as printed, and a recovery's
``restored`` rows (the recovery mode as detail) are followed by the records it put back
in transit from the restored snapshot's channel state (``sent`` rows naming that
checkpoint). The space-time diagram matches the sends to the deliveries from these rows.
Snapshot rows carry the per-channel counts of the completed checkpoints' task snapshots.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from absnb.core.events import EventRow, channel_name, checkpoint_of
from absnb.core.format import show_message
from absnb.core.ids import ChannelId
from absnb.core.messages import (
    RECORD_TYPES,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    Record,
)
from absnb.core.snapshot import GlobalSnapshot, TaskSnapshot
from absnb.sim.actions import Crash, Deliver, Recover, TriggerCheckpoint
from absnb.sim.events import Event
from absnb.sim.world import World
from absnb.task import Send

_RECEIVED = {
    CheckpointBarrier: "barrier",
    Marker: "marker",
    CancelCheckpointMarker: "cancel",
    EndOfInput: "end_of_input",
}


def trace_rows(trace: Sequence[Event], world: World | None) -> list[EventRow]:
    """The rows of ``trace`` (which ended in ``world``), in step order. Without ``world``
    the snapshot rows carry no counts and a recovery puts no channel state back.

    Raises:
        ValueError: the trace restores a checkpoint that ``world`` has not completed.
    """
    return TraceRows(trace, world).rows


def cached_trace_rows(trace: Sequence[Event], world: World | None) -> list[EventRow]:
    """:func:`trace_rows`, converting only the events added since the last call for the
    same ``trace`` object: a stepper's trace grows between two redraws (one stepped back,
    reset or sliced is converted again). The list returned is shared: do not change it."""
    key = (id(trace), world is None)
    cached = _CACHE.pop(key, None)
    if cached is None or not cached.extend(trace, world):
        cached = TraceRows(trace, world)
    _CACHE[key] = cached
    if len(_CACHE) > _CACHED:
        del _CACHE[next(iter(_CACHE))]
    return cached.rows


class TraceRows:
    """The rows of a trace converted so far (``rows``), extended as the trace grows.
    A snapshot row of a checkpoint that had not completed when it was converted gets its
    counts when the checkpoint completes."""

    def __init__(self, trace: Sequence[Event], world: World | None) -> None:
        self.trace = trace  # held, so that no other list takes its id while cached
        self.graph = None if world is None else world.graph
        self.rows: list[EventRow] = []
        self.converted = 0
        self.attempt = 0
        self.ends: tuple[Event, Event] | None = None
        self.snapshots: list[GlobalSnapshot] = []
        self.parts: dict[tuple[int, str], TaskSnapshot] = {}
        self.uncounted: dict[int, list[int]] = {}
        """For each checkpoint not completed, the indices of its snapshot rows."""
        self.names: dict[object, str] = {}
        self.extend(trace, world)

    def extend(self, trace: Sequence[Event], world: World | None) -> bool:
        """Convert the events of ``trace`` not converted yet; False (and nothing done)
        when ``trace`` is not the trace converted so far, grown, or ``world`` is not the
        world it ended in, moved on.

        Raises:
            ValueError: the trace restores a checkpoint that ``world`` has not completed.
        """
        n, old = self.converted, self.snapshots
        snapshots = [] if world is None else world.snapshots
        if (
            trace is not self.trace
            or len(trace) < n
            or (self.ends is not None and not _same(self.ends, (trace[0], trace[n - 1])))
            or (world is not None and world.graph is not self.graph)
            or len(snapshots) < len(old)
            or any(a is not b for a, b in zip(old, snapshots, strict=False))
        ):
            return False
        added = snapshots[len(old) :]
        done = {s.checkpoint_id for s in old}
        if any(s.checkpoint_id in done for s in added):
            return False  # a checkpoint id completed twice: its counts changed
        parts = dict(self.parts)
        for s in added:
            parts.update({(s.checkpoint_id, str(t)): p for t, p in s.tasks.items()})
        rows: list[EventRow] = []
        uncounted: dict[int, list[int]] = {}
        attempt = self.attempt
        first = len(self.rows)
        for e in trace[n:]:
            attempt = self._convert(e, attempt, parts, world, rows, uncounted, first)
        self._count(added, parts)
        self.rows += rows
        for k, ix in uncounted.items():
            self.uncounted.setdefault(k, []).extend(ix)
        self.attempt, self.parts, self.snapshots = attempt, parts, list(snapshots)
        self.converted = len(trace)
        if trace:
            self.ends = (trace[0], trace[-1])
        return True

    def _count(
        self, added: Sequence[GlobalSnapshot], parts: dict[tuple[int, str], TaskSnapshot]
    ) -> None:
        """Give the snapshot rows of the checkpoints just completed their counts."""
        rows = self.rows
        for s in added:
            n = s.checkpoint_id
            for i in self.uncounted.pop(n, ()):
                r = rows[i]
                rows[i] = _snapshot(
                    r.time, r.attempt, r.task or "", n, parts.get((n, r.task or ""))
                )

    def _convert(
        self,
        e: Event,
        attempt: int,
        parts: dict[tuple[int, str], TaskSnapshot],
        world: World | None,
        rows: list[EventRow],
        uncounted: dict[int, list[int]],
        offset: int,
    ) -> int:
        """Append the rows of one event to ``rows`` (``offset``: the rows before them);
        the attempt after it."""
        names = self.names
        t = float(e.step)
        rows.extend(_delivered(e, attempt, names))
        rows.extend(_acted(e, t, attempt, names))
        for who, n in e.snapshots:
            part = parts.get((n, str(who)))
            if part is None:
                uncounted.setdefault(n, []).append(offset + len(rows))
            rows.append(_snapshot(t, attempt, str(who), n, part))
        for n in e.completed:
            rows.append(EventRow(t, attempt, None, "completed", checkpoint=n))
        for n in e.aborted:
            rows.append(EventRow(t, attempt, None, "aborted", checkpoint=n))
        if e.restored is not None:
            attempt += 1
            rows.extend(_restored(e, attempt, world))
        if e.sent:
            rows.extend(_sent(e.step, attempt, e.sent, names))
        return attempt


_CACHED = 8
"""How many traces :func:`cached_trace_rows` keeps converted (the least recently used go)."""
_CACHE: dict[tuple[int, bool], TraceRows] = {}


def _acted(e: Event, t: float, attempt: int, names: dict[object, str]) -> Iterator[EventRow]:
    """A trigger's or a crash's row, then the channels blocked and unblocked and the tasks
    switched to unaligned in the step."""
    action = type(e.action)
    if action is TriggerCheckpoint:
        yield EventRow(t, attempt, None, "triggered", checkpoint=_triggered(e))
    elif action is Crash:
        yield EventRow(
            t, attempt, None if e.task is None else str(e.task), "failure", detail="crash"
        )
    for kind, channels in (("block", e.blocked), ("unblock", e.unblocked)):
        for ch in channels:
            yield EventRow(t, attempt, str(ch.dst), kind, _name(names, ch))
    for who in e.switched:
        yield EventRow(t, attempt, str(who), "switched")


def _same(a: tuple[Event, Event], b: tuple[Event, Event]) -> bool:
    return a[0] is b[0] and a[1] is b[1]


def _name(names: dict[object, str], c: ChannelId) -> str:
    """A channel's printed name, made once."""
    name = names.get(c)
    if name is None:
        name = names[c] = channel_name(c.src, c.dst)
    return name


def _delivered(e: Event, attempt: int, names: dict[object, str]) -> Iterator[EventRow]:
    """What a delivery step received: a record (counted, and printed), a barrier, marker,
    end of input."""
    if type(e.action) is not Deliver or e.message is None:
        return
    t, task, m = float(e.step), str(e.task), e.message
    c = _name(names, e.action.channel)
    if type(m) is Record:
        yield EventRow(
            t, attempt, task, "records", c, count=0 if e.dropped else 1, detail=show_message(m)
        )
        return
    n = None if type(m) is EndOfInput else checkpoint_of(m)
    if e.overtaken:
        yield EventRow(t, attempt, task, "overtaken", c, n, count=e.overtaken)
    yield EventRow(t, attempt, task, _RECEIVED[type(m)], c, n)


def _restored(e: Event, attempt: int, world: World | None) -> Iterator[EventRow]:
    """A recovery's rows: each restarted task's ``restored``, then the records put back in
    transit on their inputs from the restored snapshot's channel state."""
    assert e.restored is not None
    n, tasks = e.restored
    mode = e.action.mode if isinstance(e.action, Recover) else None
    yield from (EventRow(e.step, attempt, str(t), "restored", None, n, detail=mode) for t in tasks)
    if world is None or not n:
        return
    snapshot = next((s for s in world.snapshots if s.checkpoint_id == n), None)
    if snapshot is None:
        done = sorted(s.checkpoint_id for s in world.snapshots)
        raise ValueError(
            f"step {e.step} restores checkpoint {n}, but the world given has no completed "
            f"checkpoint {n} (it has {done or 'none'}): pass the world the trace ended in "
            "(stepper.world)"
        )
    restarted = set(tasks)
    for c in world.graph.channels:
        if c.dst in restarted:
            for record in snapshot.channel_states.get(c, ()):
                yield EventRow(
                    e.step, attempt, str(c.src), "sent", str(c), n, 1, detail=show_message(record)
                )


def _sent(
    step: int, attempt: int, sent: Sequence[Send], names: dict[object, str]
) -> Iterator[EventRow]:
    """A ``sent`` row for every message put on a channel in the step."""
    for c, m in sent:
        src, name = str(c.src), _name(names, c)
        if type(m) in RECORD_TYPES:
            yield EventRow(step, attempt, src, "sent", name, count=1, detail=show_message(m))
        else:
            n = None if type(m) is EndOfInput else checkpoint_of(m)
            yield EventRow(step, attempt, src, "sent", name, n, detail=_RECEIVED[type(m)])


def _snapshot(t: float, attempt: int, task: str, n: int, part: TaskSnapshot | None) -> EventRow:
    if part is None:  # a checkpoint that did not complete: no counts kept
        return EventRow(t, attempt, task, "snapshot", None, n)
    return EventRow(
        t,
        attempt,
        task,
        "snapshot",
        None,
        n,
        sent={channel_name(c.src, c.dst): k for c, k in part.sent.items()},
        consumed={channel_name(c.src, c.dst): k for c, k in part.received.items()},
        recorded={channel_name(c.src, c.dst): len(r) for c, r in part.channel_states.items()},
    )


def _triggered(e: Event) -> int | None:
    for _, m in e.sent:
        if isinstance(m, CheckpointBarrier | Marker):
            return checkpoint_of(m)
    return next((n for _, n in e.snapshots), None)
