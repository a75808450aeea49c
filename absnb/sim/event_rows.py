"""A simulated run's trace as event rows (:mod:`absnb.core.events`), steps as time: the
same vocabulary a real run's event log uses, so one view draws both and one check
(:func:`~absnb.core.events.cut_problems`) reads both.

Every delivered record is one ``records`` row (the simulator moves one record at a time);
snapshot rows carry the per-channel counts of the completed checkpoints' task snapshots.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from absnb.core.events import EventRow, channel_name, checkpoint_of
from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    Record,
)
from absnb.core.snapshot import TaskSnapshot
from absnb.sim.actions import Crash, Deliver, TriggerCheckpoint
from absnb.sim.events import Event
from absnb.sim.world import World

_RECEIVED = {
    CheckpointBarrier: "barrier",
    Marker: "marker",
    CancelCheckpointMarker: "cancel",
    EndOfInput: "end_of_input",
}


def trace_rows(trace: Sequence[Event], world: World) -> list[EventRow]:
    """The rows of ``trace`` (which ended in ``world``), in step order."""
    parts = {(s.checkpoint_id, str(t)): p for s in world.snapshots for t, p in s.tasks.items()}
    rows: list[EventRow] = []
    attempt = 0
    for e in trace:
        rows.extend(_rows(e, attempt, parts))
        if e.restored is not None:
            attempt += 1
            n, tasks = e.restored
            rows.extend(EventRow(e.step, attempt, str(t), "restored", None, n) for t in tasks)
    return rows


def _rows(e: Event, attempt: int, parts: dict[tuple[int, str], TaskSnapshot]) -> Iterator[EventRow]:
    t = float(e.step)
    task = None if e.task is None else str(e.task)
    yield from _delivered(e, attempt)
    if isinstance(e.action, TriggerCheckpoint):
        yield EventRow(t, attempt, None, "triggered", checkpoint=_triggered(e))
    if isinstance(e.action, Crash):
        yield EventRow(t, attempt, task, "failure", detail="crash")
    for kind, channels in (("block", e.blocked), ("unblock", e.unblocked)):
        for ch in channels:
            yield EventRow(t, attempt, str(ch.dst), kind, channel_name(ch.src, ch.dst))
    for who in e.switched:
        yield EventRow(t, attempt, str(who), "switched")
    for who, n in e.snapshots:
        yield _snapshot(t, attempt, str(who), n, parts.get((n, str(who))))
    for n in e.completed:
        yield EventRow(t, attempt, None, "completed", checkpoint=n)
    for n in e.aborted:
        yield EventRow(t, attempt, None, "aborted", checkpoint=n)


def _delivered(e: Event, attempt: int) -> Iterator[EventRow]:
    """What a delivery step received: records (counted), a barrier, marker, end of input."""
    if not isinstance(e.action, Deliver) or e.message is None:
        return
    t, task, m = float(e.step), str(e.task), e.message
    c = channel_name(e.action.channel.src, e.action.channel.dst)
    if type(m) is Record:
        yield EventRow(t, attempt, task, "records", c, count=1)
        return
    n = None if type(m) is EndOfInput else checkpoint_of(m)
    if e.overtaken:
        yield EventRow(t, attempt, task, "overtaken", c, n, count=e.overtaken)
    yield EventRow(t, attempt, task, _RECEIVED[type(m)], c, n)


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
