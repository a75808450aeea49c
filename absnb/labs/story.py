"""A counterexample in words: which task, which channel, which record crossed which cut.

The schedule is replayed; its events say when each task took its snapshot, when each
barrier was sent and delivered, which channels were blocked and unblocked, and the value of
every record on every channel. From those, a snapshot that is not a consistent cut is told
as the records that crossed it, and what the decision did wrong (Alg. 1's lines); a channel
left blocked as the step that blocked it and the checkpoint that completed without
unblocking it. The sentences are in the language set (:func:`absnb.set_language`), from the
catalogs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Record
from absnb.core.snapshot import GlobalSnapshot
from absnb.i18n import get_language
from absnb.i18n import gettext as _
from absnb.sim.actions import Deliver
from absnb.sim.events import Event
from absnb.sim.world import World


@dataclass
class RunTimes:
    """When things happened in a replayed run (steps numbered from 1, as told)."""

    events: Sequence[Event]

    def snapshot_step(self, task: TaskId, n: CheckpointId) -> int | None:
        return next((e.step + 1 for e in self.events if (task, n) in e.snapshots), None)

    def barrier_sent(self, c: ChannelId, n: CheckpointId) -> int | None:
        b = CheckpointBarrier(n)
        return next((e.step + 1 for e in self.events if (c, b) in e.sent), None)

    def barrier_delivered(self, c: ChannelId, n: CheckpointId) -> int | None:
        b = CheckpointBarrier(n)
        return next(
            (e.step + 1 for e in self.events if e.action == Deliver(c) and e.message == b), None
        )

    def record(self, c: ChannelId, seq: int) -> tuple[object, int | None, int | None]:
        """Record ``seq`` of ``c``: its value, the step it was sent and the step consumed."""
        value: object = None
        sent = consumed = None
        for e in self.events:
            for ch, s in e.sent:
                if ch == c and type(s) is Record and s.seq == seq and sent is None:
                    value, sent = s.value, e.step + 1
            m = e.message
            if e.action == Deliver(c) and type(m) is Record and m.seq == seq and consumed is None:
                consumed = e.step + 1
        return value, sent, consumed

    def blocked_between(self, c: ChannelId, start: int, end: int) -> bool:
        """Whether ``c`` was blocked at any step from ``start`` to before ``end``."""
        blocked = False
        for e in self.events:
            step = e.step + 1
            if step >= end:
                break
            if c in e.blocked:
                blocked = True
            if c in e.unblocked:
                blocked = False
            if step >= start and blocked:
                return True
        return False


def nth(seq: int) -> str:
    """``seq`` as an ordinal in the language set: 1st, 2nd, …; 1번째; 第 1 个."""
    if get_language() == "en":
        return {1: "1st", 2: "2nd", 3: "3rd"}.get(seq, f"{seq}th")
    return _("{n}th").format(n=seq)


def counted_twice(t: RunTimes, c: ChannelId, n: CheckpointId, seqs: range) -> list[str]:
    """Records sent after the sender's snapshot and consumed before the receiver's."""
    src_step, dst_step = t.snapshot_step(c.src, n), t.snapshot_step(c.dst, n)
    delivered = t.barrier_delivered(c, n)
    out = []
    for seq in seqs:
        value, sent, consumed = t.record(c, seq)
        out.append(
            _(
                "Record {value}, the {nth} on {channel}, was sent by {src} at step {sent}, "
                "after its snapshot of checkpoint {n} (step {src_step}), so behind barrier {n}; "
                "{dst} consumed it at step {consumed}, before its own snapshot (step "
                "{dst_step}). It crossed the cut: {dst}'s snapshot counts it and {src}'s does "
                "not, so after a recovery from checkpoint {n} it is sent and counted again."
            ).format(
                value=repr(value),
                nth=nth(seq),
                channel=c,
                src=c.src,
                dst=c.dst,
                sent=sent,
                n=n,
                src_step=src_step,
                consumed=consumed,
                dst_step=dst_step,
            )
        )
    first_consumed = t.record(c, seqs[0])[2] or 0
    if (
        delivered is not None
        and delivered < first_consumed
        and not t.blocked_between(c, delivered, first_consumed)
    ):
        out.append(
            _(
                "Barrier {n} arrived on {channel} at step {delivered} and {channel} was not "
                "blocked: {dst} went on consuming {channel} while it waited for barriers on its "
                "other inputs (Alg. 1, lines 7-9: block the input a barrier came on until all "
                "have come)."
            ).format(n=n, channel=c, delivered=delivered, dst=c.dst)
        )
    return out


def lost(t: RunTimes, c: ChannelId, n: CheckpointId, seqs: range) -> list[str]:
    """Records sent before the sender's snapshot and not consumed before the receiver's."""
    src_step, dst_step = t.snapshot_step(c.src, n), t.snapshot_step(c.dst, n)
    delivered, sent_at = t.barrier_delivered(c, n), t.barrier_sent(c, n)
    out = []
    for seq in seqs:
        value, sent, consumed = t.record(c, seq)
        when = (
            _("consumed it at step {consumed}").format(consumed=consumed)
            if consumed
            else _("has not consumed it")
        )
        out.append(
            _(
                "Record {value}, the {nth} on {channel}, was sent by {src} at step {sent}, "
                "before its snapshot of checkpoint {n} (step {src_step}); {dst} took its "
                "snapshot at step {dst_step} and {when}: the record is in neither snapshot, so "
                "a recovery from checkpoint {n} loses it."
            ).format(
                value=repr(value),
                nth=nth(seq),
                channel=c,
                src=c.src,
                dst=c.dst,
                sent=sent,
                n=n,
                src_step=src_step,
                dst_step=dst_step,
                when=when,
            )
        )
    if dst_step is not None and (delivered is None or delivered > dst_step):
        arrived = (
            _(" (it arrived at step {delivered})").format(delivered=delivered) if delivered else ""
        )
        out.append(
            _(
                "{dst} took its snapshot of checkpoint {n} at step {dst_step}, before barrier "
                "{n} had arrived on {channel}{arrived} (Alg. 1, lines 10-13: snapshot only once "
                "barriers have arrived on every input)."
            ).format(dst=c.dst, n=n, dst_step=dst_step, channel=c, arrived=arrived)
        )
    elif sent_at is not None and src_step is not None and sent_at < src_step:
        out.append(
            _(
                "{src} sent barrier {n} on {channel} at step {sent_at}, before its own snapshot "
                "at step {src_step}, so {dst} could take its snapshot before {src}'s records "
                "reached it (Alg. 1, lines 10-13: broadcast the barrier when all barriers have "
                "arrived, with the snapshot)."
            ).format(src=c.src, n=n, channel=c, sent_at=sent_at, src_step=src_step, dst=c.dst)
        )
    return out


def cut_words(world: World, events: Sequence[Event], snap: GlobalSnapshot) -> list[str]:
    """Why ``snap`` is not a consistent cut, channel by channel, in words."""
    t = RunTimes(events)
    n = snap.checkpoint_id
    out: list[str] = []
    for c in world.graph.channels:
        sent = snap.tasks[c.src].sent.get(c, 0)
        received = snap.tasks[c.dst].received.get(c, 0) + len(snap.channel_states.get(c, ()))
        if received > sent:
            out.extend(counted_twice(t, c, n, range(sent + 1, received + 1)))
        elif sent > received:
            out.extend(lost(t, c, n, range(received + 1, sent + 1)))
    return out


def blocked_words(world: World, events: Sequence[Event]) -> list[str]:
    """Channels still blocked when nothing more can happen, in words."""
    out = []
    for c in world.graph.channels:
        if c not in world.blocked:
            continue
        since = max((e.step + 1 for e in events if c in e.blocked), default=None)
        done = [(e.step + 1, n) for e in events for n in e.completed]
        held = [m.value if type(m) is Record else str(m) for m in world.channels[c]]
        text = _("{dst} blocked {channel} at step {since} and nothing unblocked it").format(
            dst=c.dst, channel=c, since=since
        )
        if done:
            step, n = done[-1]
            text += _(", though checkpoint {n} completed at step {step}").format(n=n, step=step)
        text += (
            _(": {count} message(s) wait there for good ({held}).").format(
                count=len(held), held=", ".join(map(repr, held))
            )
            if held
            else "."
        )
        out.append(text)
    if out:
        out.append(
            _(
                "Alg. 1, lines 14-15: once the barrier is broadcast and the snapshot taken, "
                "unblock every input the checkpoint blocked."
            )
        )
    return out


def stuck_words(world: World) -> list[str]:
    """Checkpoints still pending when nothing more can happen: which tasks never
    acknowledged them, in words."""
    out = []
    for n, pending in sorted(world.coordinator.pending.items()):
        missing = [str(t) for t in world.graph.tasks if t not in pending.acknowledged]
        out.append(
            _(
                "Checkpoint {n} can never complete: {tasks} never acknowledged it (Alg. 1, line "
                "13: every task, sources included, takes its snapshot once barriers have "
                "arrived on every input, the coordinator's trigger counting as a source's one "
                "input, and acknowledges it)."
            ).format(n=n, tasks=", ".join(missing))
        )
    return out
