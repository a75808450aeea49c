"""A Chandy-Lamport counterexample in words: which transfer crossed which cut, and which
channel's state missed it or counted it again.

The schedule is replayed; its events say when each account recorded its state, when each
marker was sent and delivered, and the amount of every transfer on every channel. A
snapshot whose money does not add up is told channel by channel: a transfer in neither the
sender's balance nor the receiver's (lost), or in both one side and a channel state that
should not hold it (counted twice), with the rule the process broke. A snapshot left
pending is told as the account that never acknowledged it and the marker it never got.
"""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core.ids import ChannelId, CheckpointId
from absnb.core.messages import Marker, Record
from absnb.core.snapshot import GlobalSnapshot
from absnb.labs.story import RunTimes
from absnb.sim.actions import Deliver
from absnb.sim.checks import snapshot_problems
from absnb.sim.events import Event
from absnb.sim.world import World

FIRST_MARKER = (
    "record the state when the first marker arrives (or when initiating), in the same step "
    "as sending the markers on"
)
UNTIL_MARKER = (
    "a channel's state is what arrives on it after the process recorded its state and "
    "before the channel's own marker"
)


class MarkerTimes(RunTimes):
    """A :class:`~absnb.labs.story.RunTimes` of markers (steps numbered from 1)."""

    def marker_sent(self, c: ChannelId, n: CheckpointId) -> int | None:
        m = Marker(n)
        return next((e.step + 1 for e in self.events if (c, m) in e.sent), None)

    def marker_delivered(self, c: ChannelId, n: CheckpointId) -> int | None:
        m = Marker(n)
        return next(
            (e.step + 1 for e in self.events if e.action == Deliver(c) and e.message == m), None
        )


def _amount(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else repr(value)


def _nth(seq: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(seq, f"{seq}th")


def _recorded(snap: GlobalSnapshot, c: ChannelId) -> list[Record]:
    return list(snap.channel_states.get(c, ()))


def _shown(records: Sequence[Record]) -> str:
    return "[" + ", ".join(_amount(r.value) for r in records) + "]"


def lost(t: MarkerTimes, snap: GlobalSnapshot, c: ChannelId, seqs: Sequence[int]) -> list[str]:
    """Transfers on ``c`` sent before the sender's state and in no part of the snapshot."""
    n = snap.checkpoint_id
    src, dst = t.snapshot_step(c.src, n), t.snapshot_step(c.dst, n)
    marker_sent, marker_in = t.marker_sent(c, n), t.marker_delivered(c, n)
    out = []
    for seq in seqs:
        value, sent, consumed = t.record(c, seq)
        when = f"arrived at {c.dst} at step {consumed}" if consumed else "has not arrived yet"
        out.append(
            f"Transfer {_amount(value)}, the {_nth(seq)} on {c}, was sent by {c.src} at step "
            f"{sent}, before {c.src} recorded its state for snapshot {n} (step {src}), and "
            f"{when}, after {c.dst} recorded its state (step {dst}). The "
            f"state of {c} in snapshot {n} is {_shown(_recorded(snap, c))}: the "
            f"{_amount(value)} is in neither balance nor in the channel, so the snapshot "
            "lost it."
        )
    if marker_sent is not None and src is not None and marker_sent < src:
        out.append(
            f"{c.src} sent marker {n} on {c} at step {marker_sent} but recorded its state only "
            f"at step {src}: {FIRST_MARKER}."
        )
    elif dst is not None and marker_in is not None and marker_in > dst:
        out.append(
            f"{c.dst} recorded its state at step {dst} and marker {n} arrived on {c} at step "
            f"{marker_in}, so the {c} state of snapshot {n} is what arrived on {c} in between, "
            f"which {c.dst} did not record: {UNTIL_MARKER}."
        )
    return out


def counted_twice(
    t: MarkerTimes, snap: GlobalSnapshot, c: ChannelId, seqs: Sequence[int]
) -> list[str]:
    """Transfers on ``c`` sent after the sender's state and counted on the receiver's side."""
    n = snap.checkpoint_id
    src, dst = t.snapshot_step(c.src, n), t.snapshot_step(c.dst, n)
    marker_in = t.marker_delivered(c, n)
    in_channel = {r.seq for r in _recorded(snap, c)}
    out = []
    for seq in seqs:
        value, sent, consumed = t.record(c, seq)
        where = (
            f"the state of {c} in snapshot {n} holds it"
            if seq in in_channel
            else f"{c.dst}'s balance, recorded at step {dst}, holds it (it arrived at step "
            f"{consumed})"
        )
        out.append(
            f"Transfer {_amount(value)}, the {_nth(seq)} on {c}, was sent by {c.src} at step "
            f"{sent}, after {c.src} recorded its state for snapshot {n} (step {src}), so "
            f"{c.src}'s recorded balance still holds it; yet {where}. It crossed the cut: the "
            "snapshot counts it twice."
        )
    if in_channel & set(seqs) and marker_in is not None:
        out.append(
            f"Marker {n} arrived on {c} at step {marker_in}, and {c.dst} went on recording "
            f"{c} after it: stop recording a channel when its marker arrives ({UNTIL_MARKER})."
        )
    elif dst is not None and marker_in is not None and marker_in < dst:
        out.append(
            f"Marker {n} arrived on {c} at step {marker_in}, but {c.dst} recorded its state "
            f"only at step {dst}: {FIRST_MARKER}."
        )
    return out


def elsewhere(world: World, snap: GlobalSnapshot, c: ChannelId, seqs: Sequence[int]) -> list[str]:
    """Lost transfers of ``snap`` that another snapshot's state of ``c`` holds: the
    snapshots' recordings were mixed."""
    out = []
    for other in world.snapshots:
        if other.checkpoint_id == snap.checkpoint_id:
            continue
        held = [r for r in _recorded(other, c) if r.seq in seqs]
        if held:
            out.append(
                f"The state of {c} in snapshot {other.checkpoint_id} holds "
                f"{_shown(held)}, and that of snapshot {snap.checkpoint_id} does not: the "
                "snapshots' recordings are mixed. Each snapshot records its inputs on its "
                "own, told apart by its id."
            )
    return out


def cut_words(world: World, events: Sequence[Event], snap: GlobalSnapshot) -> list[str]:
    """Why the money of ``snap`` does not add up, channel by channel, in words."""
    t = MarkerTimes(events)
    out: list[str] = []
    for c in world.graph.channels:
        sent = snap.tasks[c.src].sent.get(c, 0)
        received = snap.tasks[c.dst].received.get(c, 0)
        counted = set(range(1, received + 1)) | {r.seq for r in _recorded(snap, c)}
        missing = [s for s in range(1, sent + 1) if s not in counted]
        extra = sorted(s for s in counted if s > sent)
        if missing:
            out.extend(lost(t, snap, c, missing))
            out.extend(elsewhere(world, snap, c, missing))
        if extra:
            out.extend(counted_twice(t, snap, c, extra))
    return out


def stuck_words(world: World, events: Sequence[Event]) -> list[str]:
    """Snapshots still pending when nothing more can happen: who never acknowledged, and
    which marker was never sent."""
    t = MarkerTimes(events)
    out = []
    for n, pending in sorted(world.coordinator.pending.items()):
        missing = [tk for tk in world.graph.tasks if tk not in pending.acknowledged]
        out.append(
            f"Snapshot {n} can never complete: {', '.join(map(str, missing))} never "
            "acknowledged it."
        )
        for c in world.graph.channels:
            recorded = t.snapshot_step(c.src, n)
            if recorded is None or t.marker_sent(c, n) is not None:
                continue
            heard = t.snapshot_step(c.dst, n) is not None
            then = f"{c.dst} waits for it for good" if heard else f"{c.dst} never hears of it"
            out.append(
                f"{c.src} recorded its state for snapshot {n} at step {recorded} but never "
                f"sent marker {n} on {c}, so {then}: send marker {n} on every output "
                f"(BroadcastEvent(Marker({n}))) when recording the state."
            )
        for task in missing:
            if any(
                w.checkpoint_id == n and not w.channels for w in world.tasks[task].handler.waiting()
            ):
                out.append(
                    f"Every marker of snapshot {n} has arrived at {task}, which did not "
                    f"acknowledge it: Acknowledge({n}) once no input's marker is missing."
                )
    return out


def marker_words(world: World, events: Sequence[Event], problem: str) -> list[str]:
    """What went wrong at the end of a replayed counterexample, in words."""
    if problem.startswith("deadlock") and world.coordinator.pending:
        return stuck_words(world, events)
    if events and events[-1].completed:
        for n in events[-1].completed:
            snap = next(s for s in world.snapshots if s.checkpoint_id == n)
            if snapshot_problems(world.job, snap):
                done = f"Snapshot {n} completed at step {len(events)}."
                return [done, *cut_words(world, events, snap)]
    return []
