"""A counterexample of the ABS lab's extension in words: which record on which back-edge
crossed which cut, and which of Alg. 2's lines the decisions broke.

The schedule is replayed (:class:`~absnb.labs.story.RunTimes` reads when each task copied
its state, when each barrier was sent and delivered, and each record's steps). A record on
a loop input that is in neither the receiver's state copy nor its backup log is lost; one in
both, or logged after its own input's barrier, is counted twice. A checkpoint that never
completes is told by who waits for which barrier; an input left blocked by the step that
blocked it. What happened on a regular input is told as in the ABS lab
(:func:`~absnb.labs.story.cut_words`).
"""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core.ids import ChannelId, CheckpointId
from absnb.core.snapshot import GlobalSnapshot
from absnb.i18n import N_
from absnb.i18n import gettext as _
from absnb.labs.story import RunTimes, blocked_words, counted_twice, lost, nth
from absnb.sim.checks import snapshot_problems
from absnb.sim.events import Event
from absnb.sim.world import World

LOG = N_(
    "Alg. 2, lines 24-26: from the state copy on, log every record arriving on a loop "
    "input until that input's barrier comes back, and hand the log in "
    "(RecordChannelState) before acknowledging"
)
OWN_BARRIER = N_(
    "each loop input's log ends at its own barrier (the records behind it are sent again "
    "by the restored sender), not at the last loop barrier"
)


def loop_lost(t: RunTimes, c: ChannelId, n: CheckpointId, seqs: range) -> list[str]:
    """Records on loop input ``c`` sent before the sender's snapshot, consumed after the
    receiver's copy, and not in its backup log."""
    src, dst = t.snapshot_step(c.src, n), t.snapshot_step(c.dst, n)
    out = []
    for seq in seqs:
        value, sent, consumed = t.record(c, seq)
        when = (
            _("consumed it at step {consumed}").format(consumed=consumed)
            if consumed
            else _("had not consumed it")
        )
        out.append(
            _(
                "Record {value}, the {nth} on the back-edge {channel}, was sent by {src} at "
                "step {sent}, before its snapshot of checkpoint {n} (step {src_step}); {dst} "
                "copied its state at step {dst_step} and {when}, but the backup log of "
                "{channel} in checkpoint {n} does not hold it: the record is in no part of the "
                "snapshot, so a recovery from checkpoint {n} loses it ({rule})."
            ).format(
                value=repr(value),
                nth=nth(seq),
                channel=c,
                src=c.src,
                sent=sent,
                n=n,
                src_step=src,
                dst=c.dst,
                dst_step=dst,
                when=when,
                rule=_(LOG),
            )
        )
    return out


def loop_twice(
    t: RunTimes, snap: GlobalSnapshot, c: ChannelId, n: CheckpointId, seqs: range
) -> list[str]:
    """Records on loop input ``c`` counted twice: in the receiver's state copy and in its
    log, or logged after the input's own barrier."""
    src, dst = t.snapshot_step(c.src, n), t.snapshot_step(c.dst, n)
    barrier = t.barrier_delivered(c, n)
    logged = {r.seq for r in snap.channel_states.get(c, ())}
    received = snap.tasks[c.dst].received.get(c, 0)
    out = []
    for seq in seqs:
        value, sent, consumed = t.record(c, seq)
        if seq <= received and seq in logged:
            out.append(
                _(
                    "Record {value}, the {nth} on the back-edge {channel}, arrived at {dst} at "
                    "step {consumed}, before its state copy of checkpoint {n} (step {dst_step}), "
                    "so the copy counts it; yet the backup log of {channel} holds it too: it is "
                    "counted twice. Log only what arrives after the copy ({rule})."
                ).format(
                    value=repr(value),
                    nth=nth(seq),
                    channel=c,
                    dst=c.dst,
                    consumed=consumed,
                    n=n,
                    dst_step=dst,
                    rule=_(LOG),
                )
            )
        else:
            behind = (
                _(
                    "Record {value}, the {nth} on the back-edge {channel}, was sent by {src} at "
                    "step {sent}, after its snapshot of checkpoint {n} (step {src_step}), so "
                    "behind barrier {n}, which arrived at step {barrier}; yet the backup log of "
                    "{channel} holds it: after a recovery the restored {src} sends it again, "
                    "and it is counted twice: {rule}."
                )
                if barrier
                else _(
                    "Record {value}, the {nth} on the back-edge {channel}, was sent by {src} at "
                    "step {sent}, after its snapshot of checkpoint {n} (step {src_step}), so "
                    "behind barrier {n}; yet the backup log of {channel} holds it: after a "
                    "recovery the restored {src} sends it again, and it is counted twice: "
                    "{rule}."
                )
            )
            out.append(
                behind.format(
                    value=repr(value),
                    nth=nth(seq),
                    channel=c,
                    src=c.src,
                    sent=sent,
                    n=n,
                    src_step=src,
                    barrier=barrier,
                    rule=_(OWN_BARRIER),
                )
            )
    return out


def cut_words(world: World, events: Sequence[Event], snap: GlobalSnapshot) -> list[str]:
    """Why ``snap`` is not a consistent cut, channel by channel, in words."""
    t = RunTimes(events)
    n = snap.checkpoint_id
    out: list[str] = []
    for c in world.graph.channels:
        sent = snap.tasks[c.src].sent.get(c, 0)
        received = snap.tasks[c.dst].received.get(c, 0)
        logged = sorted(r.seq for r in snap.channel_states.get(c, ()))
        counted = set(range(1, received + 1)) | set(logged)
        missing = range(1, sent + 1)
        if c in world.graph.back_edges:
            lost_seqs = [s for s in missing if s not in counted]
            twice = [s for s in logged if s <= received or s > sent]
            if lost_seqs:
                out.extend(loop_lost(t, c, n, range(lost_seqs[0], lost_seqs[-1] + 1)))
            if twice:
                out.extend(loop_twice(t, snap, c, n, range(twice[0], twice[-1] + 1)))
        elif received > sent:
            out.extend(counted_twice(t, c, n, range(sent + 1, received + 1)))
        elif sent > received:
            out.extend(lost(t, c, n, range(received + 1, sent + 1)))
    return out


def stuck_words(world: World, events: Sequence[Event]) -> list[str]:
    """Checkpoints still pending when nothing more can happen, in words."""
    t = RunTimes(events)
    out = []
    for n, pending in sorted(world.coordinator.pending.items()):
        missing = [task for task in world.graph.tasks if task not in pending.acknowledged]
        out.append(
            _("Checkpoint {n} can never complete: {tasks} never acknowledged it.").format(
                n=n, tasks=", ".join(map(str, missing))
            )
        )
        heads = {c.dst for c in world.graph.back_edges}
        for head in sorted(heads, key=str):
            if t.snapshot_step(head, n) is not None:
                continue
            inputs = world.graph.inputs[head]
            regular = [r for r in inputs if r not in world.graph.back_edges]
            loops = [str(r) for r in inputs if r in world.graph.back_edges]
            arrived = [str(r) for r in regular if t.barrier_delivered(r, n) is not None]
            if len(arrived) == len(regular):
                out.append(
                    _(
                        "Barrier {n} arrived on every regular input of {head} ({arrived}), and "
                        "{head} did not copy its state and broadcast it: it waits for barrier "
                        "{n} on {loops}, which can only come round the loop after {head} "
                        "broadcasts it (Alg. 2, lines 13-17: copy the state and broadcast once "
                        "barriers have arrived on every regular input; the loop inputs are not "
                        "awaited)."
                    ).format(n=n, head=head, arrived=", ".join(arrived), loops=", ".join(loops))
                )
    return out


def loop_blocked_words(world: World, events: Sequence[Event]) -> list[str]:
    """Inputs still blocked when nothing more can happen, in words."""
    out = blocked_words(world, events)
    if any(c in world.blocked for c in world.graph.back_edges):
        if all(c in world.graph.back_edges for c in world.blocked):
            out.pop()  # Alg. 1's rule for the inputs a checkpoint blocked: not this one
        out.append(
            _(
                "Alg. 2, lines 11-12 and 16-17: a loop input is not blocked for its barrier: the "
                "barrier can only arrive on it while it is consumed."
            )
        )
    return out


def cyclic_words(world: World, events: Sequence[Event], problem: str) -> list[str]:
    """What went wrong at the end of a replayed counterexample, in words."""
    if problem.startswith("the run ended with") and world.blocked:
        return loop_blocked_words(world, events)
    if problem.startswith("deadlock") and world.coordinator.pending:
        return stuck_words(world, events)
    if events and events[-1].completed:
        for n in events[-1].completed:
            snap = next(s for s in world.snapshots if s.checkpoint_id == n)
            if snapshot_problems(world.job, snap):
                done = _("Checkpoint {n} completed at step {step}.").format(n=n, step=len(events))
                return [done, *cut_words(world, events, snap)]
    return []
