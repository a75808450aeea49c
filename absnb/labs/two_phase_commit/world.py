"""A world that carries its sinks' external system, so that the explorer can branch it.

The :class:`~absnb.sinks.TransactionStore` a sink writes to is outside the simulated world,
shared by every copy of it: the explorer refuses such a sink, since its branches would
write to one store. :class:`StoreWorld` keeps the store's contents as a value of its own
(:meth:`~absnb.sinks.TransactionStore.save`): before each action it loads them into the
store, after it saves them, and they count in the world's key. Each branch of a search, and
each step the stepper goes back over, then has its own external system.
"""

from __future__ import annotations

from typing import Any, ClassVar

from absnb.core.job import Job
from absnb.protocols.base import SnapshotProtocol
from absnb.sim.actions import Action, Notify
from absnb.sim.events import Event
from absnb.sim.world import World
from absnb.sinks.memory import TransactionStore

Saved = tuple[Any, ...]
"""The contents of every store, as :meth:`TransactionStore.save
<absnb.sinks.TransactionStore.save>` gives them."""


def stores_of(job: Job) -> tuple[TransactionStore, ...]:
    """The transaction stores the job's sinks write to, once each."""
    found = (getattr(op.function, "store", None) for op in job.graph.operators.values())
    return tuple(dict.fromkeys(s for s in found if isinstance(s, TransactionStore)))


class StoreWorld(World):
    """A :class:`~absnb.sim.world.World` whose state includes its sinks' transaction stores,
    which start empty.

    Args:
        job: the job; its sinks write to :class:`~absnb.sinks.TransactionStore` objects.
        protocol: the snapshot protocol.
        kwargs: as :class:`~absnb.sim.world.World`'s.
    """

    carries_external: ClassVar[bool] = True

    def __init__(self, job: Job, protocol: str | SnapshotProtocol = "abs", **kwargs: Any) -> None:
        super().__init__(job, protocol, **kwargs)
        self.stores = stores_of(job)
        empty = TransactionStore().save()
        for store in self.stores:
            store.load(empty)
        self.saved: Saved = tuple(s.save() for s in self.stores)

    def _load(self) -> None:
        for store, saved in zip(self.stores, self.saved, strict=True):
            store.load(saved)

    def apply(self, action: Action, *, checked: bool = False) -> Event:
        """Perform ``action`` (as :meth:`World.apply <absnb.World.apply>` does) on this
        world's contents of the stores, and keep what it made of them."""
        self._load()
        event = super().apply(action, checked=checked)
        self.saved = tuple(s.save() for s in self.stores)
        return event

    def output(self) -> Any:
        """The job's output: what the stores show as committed in this world."""
        self._load()
        return super().output()

    def clone(self) -> StoreWorld:
        """An independent copy, with the same contents of the stores (values, shared)."""
        new = super().clone()
        new.stores, new.saved = self.stores, self.saved
        return new

    def key(self, *, recovery: bool = True) -> tuple[Any, ...]:
        """The world's key with the contents of the stores."""
        external = tuple(
            (tuple(sorted(transactions.items())), rows, k) for transactions, rows, k in self.saved
        )
        return (*super().key(recovery=recovery), external)


class SkippingWorld(StoreWorld):
    """A :class:`StoreWorld` where a notification may be skipped: while notifications of
    several checkpoints are on their way to a task, the latest may reach it first, and the
    earlier ones are then dropped (Flink: ``notifyCheckpointComplete`` is not guaranteed
    for every checkpoint; a later one subsumes it). A two-phase-commit sink must then
    commit everything pre-committed up to the checkpoint it hears of."""

    def enabled_actions(self, *, crashes: bool = False, ends: bool = False) -> list[Action]:
        """A world's enabled actions, and for each task that several notifications are on
        their way to, the latest one's (which skips the others)."""
        acts = super().enabled_actions(crashes=crashes, ends=ends)
        skipping = [Notify(t, ns[-1]) for t, ns in self.notices.items() if len(ns) > 1]
        return [*acts, *skipping] if skipping else acts

    def is_enabled(self, action: Action) -> bool:
        """True when ``action`` can be applied now (a skipping notification too)."""
        return self._skips(action) or super().is_enabled(action)

    def _skips(self, action: Action) -> bool:
        if type(action) is not Notify:
            return False
        queued = self.notices.get(action.task, ())
        return len(queued) > 1 and action.checkpoint_id in queued[1:]

    def apply(self, action: Action, *, checked: bool = False) -> Event:
        """Perform ``action``; a notification that skips earlier ones drops them first."""
        if self._skips(action):
            assert type(action) is Notify
            queued = self.notices[action.task]
            self.notices[action.task] = queued[queued.index(action.checkpoint_id) :]
            checked = True
        return super().apply(action, checked=checked)
