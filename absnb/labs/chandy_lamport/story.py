"""A Chandy-Lamport counterexample in words: which transfer crossed which cut, and which
channel's state missed it or counted it again.

The schedule is replayed; its events say when each account recorded its state, when each
marker was sent and delivered, and the amount of every transfer on every channel. A
snapshot whose money does not add up is told channel by channel: a transfer in neither the
sender's balance nor the receiver's (lost), or in both one side and a channel state that
should not hold it (counted twice), with the rule the process broke. A snapshot left
pending is told as the account that never acknowledged it and the marker it never got. The
sentences are in the language set (:func:`absnb.set_language`), from the catalogs.
"""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core.ids import ChannelId, CheckpointId
from absnb.core.messages import Marker, Record
from absnb.core.snapshot import GlobalSnapshot
from absnb.i18n import N_
from absnb.i18n import gettext as _
from absnb.labs.story import RunTimes, nth
from absnb.sim.actions import Deliver
from absnb.sim.checks import snapshot_problems
from absnb.sim.events import Event
from absnb.sim.world import World

FIRST_MARKER = N_(
    "record the state when the first marker arrives (or when initiating), in the same step "
    "as sending the markers on"
)
UNTIL_MARKER = N_(
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
        when = (
            _("arrived at {dst} at step {consumed}").format(dst=c.dst, consumed=consumed)
            if consumed
            else _("has not arrived yet")
        )
        out.append(
            _(
                "Transfer {amount}, the {nth} on {channel}, was sent by {src} at step {sent}, "
                "before {src} recorded its state for snapshot {n} (step {src_step}), and "
                "{when}, after {dst} recorded its state (step {dst_step}). The state of "
                "{channel} in snapshot {n} is {recorded}: the {amount} is in neither balance "
                "nor in the channel, so the snapshot lost it."
            ).format(
                amount=_amount(value),
                nth=nth(seq),
                channel=c,
                src=c.src,
                dst=c.dst,
                sent=sent,
                n=n,
                src_step=src,
                dst_step=dst,
                when=when,
                recorded=_shown(_recorded(snap, c)),
            )
        )
    if marker_sent is not None and src is not None and marker_sent < src:
        out.append(
            _(
                "{src} sent marker {n} on {channel} at step {marker_sent} but recorded its "
                "state only at step {src_step}: {rule}."
            ).format(
                src=c.src,
                n=n,
                channel=c,
                marker_sent=marker_sent,
                src_step=src,
                rule=_(FIRST_MARKER),
            )
        )
    elif dst is not None and marker_in is not None and marker_in > dst:
        out.append(
            _(
                "{dst} recorded its state at step {dst_step} and marker {n} arrived on "
                "{channel} at step {marker_in}, so the {channel} state of snapshot {n} is what "
                "arrived on {channel} in between, which {dst} did not record: {rule}."
            ).format(
                dst=c.dst,
                dst_step=dst,
                n=n,
                channel=c,
                marker_in=marker_in,
                rule=_(UNTIL_MARKER),
            )
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
            _("the state of {channel} in snapshot {n} holds it").format(channel=c, n=n)
            if seq in in_channel
            else _(
                "{dst}'s balance, recorded at step {dst_step}, holds it (it arrived at step "
                "{consumed})"
            ).format(dst=c.dst, dst_step=dst, consumed=consumed)
        )
        out.append(
            _(
                "Transfer {amount}, the {nth} on {channel}, was sent by {src} at step {sent}, "
                "after {src} recorded its state for snapshot {n} (step {src_step}), so {src}'s "
                "recorded balance still holds it; yet {where}. It crossed the cut: the "
                "snapshot counts it twice."
            ).format(
                amount=_amount(value),
                nth=nth(seq),
                channel=c,
                src=c.src,
                sent=sent,
                n=n,
                src_step=src,
                where=where,
            )
        )
    if in_channel & set(seqs) and marker_in is not None:
        out.append(
            _(
                "Marker {n} arrived on {channel} at step {marker_in}, and {dst} went on "
                "recording {channel} after it: stop recording a channel when its marker "
                "arrives ({rule})."
            ).format(n=n, channel=c, marker_in=marker_in, dst=c.dst, rule=_(UNTIL_MARKER))
        )
    elif dst is not None and marker_in is not None and marker_in < dst:
        out.append(
            _(
                "Marker {n} arrived on {channel} at step {marker_in}, but {dst} recorded its "
                "state only at step {dst_step}: {rule}."
            ).format(
                n=n,
                channel=c,
                marker_in=marker_in,
                dst=c.dst,
                dst_step=dst,
                rule=_(FIRST_MARKER),
            )
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
                _(
                    "The state of {channel} in snapshot {other} holds {held}, and that of "
                    "snapshot {n} does not: the snapshots' recordings are mixed. Each snapshot "
                    "records its inputs on its own, told apart by its id."
                ).format(
                    channel=c, other=other.checkpoint_id, held=_shown(held), n=snap.checkpoint_id
                )
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
            _("Snapshot {n} can never complete: {tasks} never acknowledged it.").format(
                n=n, tasks=", ".join(map(str, missing))
            )
        )
        for c in world.graph.channels:
            recorded = t.snapshot_step(c.src, n)
            if recorded is None or t.marker_sent(c, n) is not None:
                continue
            heard = t.snapshot_step(c.dst, n) is not None
            then = (
                _("{dst} waits for it for good") if heard else _("{dst} never hears of it")
            ).format(dst=c.dst)
            out.append(
                _(
                    "{src} recorded its state for snapshot {n} at step {step} but never sent "
                    "marker {n} on {channel}, so {then}: send marker {n} on every output "
                    "(BroadcastEvent(Marker({n}))) when recording the state."
                ).format(src=c.src, n=n, step=recorded, channel=c, then=then)
            )
        for task in missing:
            if any(
                w.checkpoint_id == n and not w.channels for w in world.tasks[task].handler.waiting()
            ):
                out.append(
                    _(
                        "Every marker of snapshot {n} has arrived at {task}, which did not "
                        "acknowledge it: Acknowledge({n}) once no input's marker is missing."
                    ).format(n=n, task=task)
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
                done = _("Snapshot {n} completed at step {step}.").format(n=n, step=len(events))
                return [done, *cut_words(world, events, snap)]
    return []
