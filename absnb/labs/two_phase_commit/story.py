"""A two-phase-commit counterexample in words: what happened to each transaction, step by
step, and the rule of seed 004 the sink broke.

The schedule is replayed in a fresh :class:`~absnb.labs.two_phase_commit.world.StoreWorld`;
after every step the store's transactions are compared with the step before, so each one's
life is told (began, pre-committed for checkpoint n, committed, aborted), beside the
checkpoints' completions, the notifications, the crashes and the restores.
"""

from __future__ import annotations

from collections.abc import Sequence

from absnb.i18n import N_
from absnb.i18n import gettext as _
from absnb.labs.two_phase_commit.world import stores_of
from absnb.sim.actions import Crash, Notify
from absnb.sim.events import Event
from absnb.sim.world import World
from absnb.sinks.memory import Transaction

RULES = {
    "visible": N_(
        "Phase two comes after the checkpoint: snapshot() only pre-commits; the "
        "transaction is committed in checkpoint_complete(), once every task has taken its "
        "snapshot (seed 004: a failure before then rolls back to an earlier checkpoint, and "
        "the records are replayed and written again)."
    ),
    "heard that checkpoint": N_(
        "checkpoint_complete(state, n) commits every pending transaction "
        "pre-committed for a checkpoint up to n, oldest first, not only the latest: a "
        "notification may cover several checkpoints."
    ),
    "after the restore, not committed": N_(
        "restore() commits every transaction the restored "
        "state names as pending (self.recover_and_commit(txn)): the checkpoint completed, so "
        "its transactions must become visible, even if the failure came before the notification."
    ),
    "not aborted": N_(
        "restore() aborts every other unfinished transaction of the task "
        "(self.leftovers(state.task), self.recover_and_abort(txn)): its records are replayed "
        "from the restored offsets and written again."
    ),
    "committed already": N_(
        "A restore may find a transaction it names committed before the "
        "failure: commit it with self.recover_and_commit(txn), which accepts that (Flink's "
        "recoverAndCommit); self.commit(txn) refuses a second commit."
    ),
    "the run ended": N_(
        "Every transaction ends committed or aborted: pre-commit the open one at a "
        "snapshot, commit on the notification, abort leftovers on a restore."
    ),
    "failure-free": N_(
        "Exactly once: the committed records are those of the run without "
        "failures, each once (seed 004)."
    ),
}
"""The rule each kind of violation breaks, by words of its message."""


ENDED = {
    "committed": N_("{task} committed {txn}"),
    "aborted": N_("{task} aborted {txn}"),
}
"""A transaction's end, by its status."""


def _said(txn: Transaction) -> str:
    rows = ", ".join(map(repr, txn.rows)) or _("no records")
    return f"{txn.name} ({rows})"


def _changes(before: dict[str, Transaction], after: dict[str, Transaction]) -> list[str]:
    out = []
    for name, txn in after.items():
        old = before.get(name)
        if old is not None and old.status == txn.status:
            continue
        if txn.status == "open":
            out.append(
                _("{task} began {txn}").format(task=txn.task, txn=name)
                if old is None
                else _("{txn} was written to").format(txn=name)
            )
        elif txn.status == "pre-committed":
            out.append(
                _("{task} pre-committed {txn} for checkpoint {n}").format(
                    task=txn.task, txn=_said(txn), n=txn.checkpoint_id
                )
            )
        else:
            out.append(_(ENDED[txn.status]).format(task=txn.task, txn=_said(txn)))
    return out


def timeline(world: World, events: Sequence[Event]) -> list[str]:
    """Each step that changed a transaction, completed a checkpoint, notified, crashed or
    restored, in words."""
    fresh = type(world)(world.job, world.protocol, max_checkpoints=world.max_checkpoints)
    stores = stores_of(world.job)
    before: dict[str, Transaction] = {}
    out = []
    for e in events:
        queued = fresh.notices.get(e.action.task, ()) if type(e.action) is Notify else ()
        fresh.apply(e.action)
        after = {t.name: t for s in stores for t in s.table()}
        said = _changes(before, after)
        before = after
        a = e.action
        said += [_("checkpoint {n} completed").format(n=n) for n in e.completed]
        if type(a) is Notify:
            skipped = [str(n) for n in queued if n < a.checkpoint_id]
            heard = _("{task} heard that checkpoint {n} completed").format(
                task=a.task, n=a.checkpoint_id
            )
            if skipped:
                heard += _(" (the notification of checkpoint {skipped} was skipped)").format(
                    skipped=", ".join(skipped)
                )
            said.insert(0, heard)
        if type(a) is Crash:
            said.insert(0, _("{task} crashed").format(task=a.task))
        if e.restored is not None:
            n, tasks = e.restored
            what = _("checkpoint {n}").format(n=n) if n else _("the start")
            said.insert(
                0,
                _("{tasks} restarted from {what}").format(
                    tasks=", ".join(map(str, tasks)), what=what
                ),
            )
        if said:
            out.append(_("Step {step}: {what}.").format(step=e.step + 1, what="; ".join(said)))
    return out


def sink_words(world: World, events: Sequence[Event], problem: str) -> list[str]:
    """What went wrong at the end of a replayed counterexample, in words: the transactions'
    story, then the rule broken."""
    out = timeline(world, events)
    for word, rule in RULES.items():
        if word in problem:
            out.append(_(rule))
            break
    return out
