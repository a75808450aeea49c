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
from absnb.core.messages import (
    RECORD_TYPES,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    Record,
)
from absnb.core.snapshot import TaskSnapshot
from absnb.sim.actions import Crash, Deliver, Recover, TriggerCheckpoint
from absnb.sim.events import Event
from absnb.sim.format import show_message
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
    snapshots = {} if world is None else {s.checkpoint_id: s for s in world.snapshots}
    parts = {(n, str(t)): p for n, s in snapshots.items() for t, p in s.tasks.items()}
    rows: list[EventRow] = []
    attempt = 0
    for e in trace:
        rows.extend(_rows(e, attempt, parts))
        if e.restored is not None:
            attempt += 1
            rows.extend(_restored(e, attempt, world))
        rows.extend(_sent(e.step, attempt, e.sent))
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
    """What a delivery step received: a record (counted, and printed), a barrier, marker,
    end of input."""
    if not isinstance(e.action, Deliver) or e.message is None:
        return
    t, task, m = float(e.step), str(e.task), e.message
    c = channel_name(e.action.channel.src, e.action.channel.dst)
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


def _sent(step: int, attempt: int, sent: Sequence[Send]) -> Iterator[EventRow]:
    """A ``sent`` row for every message put on a channel in the step."""
    for c, m in sent:
        src, name = str(c.src), str(c)
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
