"""The Stepper: step, go back, run, and keep the trace."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from absnb.core import validate
from absnb.core.errors import FailureNotFiredWarning, InvalidTypeError
from absnb.sim.actions import Action
from absnb.sim.args import check_run
from absnb.sim.collector import paused_collector
from absnb.sim.events import Event
from absnb.sim.schedulers import (
    RoundRobinScheduler,
    Scheduler,
    check_names,
    crash_not_fired,
)
from absnb.sim.world import World

Until = int | Callable[[World], bool] | None


def check_stepper(world: Any, scheduler: Any, history: Any) -> None:
    """The arguments of ``Stepper(...)``."""
    if not isinstance(world, World):
        raise InvalidTypeError(
            f"Stepper needs a World, such as absnb.World(absnb.word_count()), not {world!r:.80}"
        )
    if scheduler is not None and not callable(getattr(scheduler, "choose", None)):
        raise InvalidTypeError(
            f"scheduler must have a choose(world, enabled) method (e.g. RandomScheduler(seed=1)"
            f", RoundRobinScheduler()), not {scheduler!r:.80}"
        )
    validate.flag("history", history)
    check_names(scheduler, world.graph)


class Stepper:
    """Drives a world with a scheduler.

    Args:
        world: the starting world (the stepper works on a clone).
        scheduler: decides each step's action; round robin by default.
        history: keep a copy of the world before every step, so that :meth:`back` is a
            constant-time pop; without it ``back`` is not available and runs are faster.

    Attributes:
        world: the current world.
        trace: every event so far, in order.
        scheduler: may be replaced between steps (e.g. a script for a walkthrough, then
            round robin to finish); the built-in schedulers keep no state of their own.
    """

    def __init__(
        self, world: World, scheduler: Scheduler | None = None, *, history: bool = True
    ) -> None:
        check_stepper(world, scheduler, history)
        self.initial = world.clone()
        self.world = world.clone()
        self._scheduler: Scheduler = scheduler or RoundRobinScheduler()
        self.keep_history = history
        self.history: list[tuple[World, tuple[Any, ...]]] = []
        self.trace: list[Event] = []
        # External systems the sinks write to (e.g. a TransactionStore): saved with every
        # step kept, so that back() and reset() undo their writes too.
        self.stores = tuple(
            dict.fromkeys(
                op.function.store
                for op in world.graph.operators.values()
                if hasattr(getattr(op.function, "store", None), "save")
            )
        )
        self._initial_stores = self._save()

    @property
    def scheduler(self) -> Scheduler:
        """What decides each step; may be replaced between steps."""
        return self._scheduler

    @scheduler.setter
    def scheduler(self, scheduler: Scheduler) -> None:
        check_stepper(self.world, scheduler, self.keep_history)
        self._scheduler = scheduler or RoundRobinScheduler()

    def _save(self) -> tuple[Any, ...]:
        return tuple(s.save() for s in self.stores)

    def _load(self, saved: tuple[Any, ...]) -> None:
        for store, value in zip(self.stores, saved, strict=True):
            store.load(value)

    def enabled(self, *, crashes: bool = False) -> list[Action]:
        """The actions enabled now."""
        return self.world.enabled_actions(crashes=crashes)

    def next_action(self) -> Action | None:
        """What the scheduler would do next (None: the run is over); the schedulers are
        functions of the world, so asking changes nothing."""
        return self._scheduler.choose(self.world, self.world.enabled_actions())

    def step(self, action: Action | None = None) -> Event | None:
        """Apply ``action``, or the scheduler's choice; None when there is nothing to do.

        Raises:
            ActionNotEnabledError: ``action`` is not enabled.
        """
        world = self.world
        checked = False
        if action is None:
            enabled = world.enabled_actions()
            action = self._scheduler.choose(world, enabled)
            if action is None:
                return None
            # One of the enabled actions themselves (not an equal copy a custom scheduler
            # made): enabled already, so apply skips checking it again.
            for a in enabled:  # a loop, not any(...): this runs at every step
                if a is action:
                    checked = True
                    break
        if self.keep_history:
            before = world.clone()
            stores = self._save() if self.stores else ()
            event = world.apply(action, checked=checked)
            self.history.append((before, stores))
        else:
            event = world.apply(action, checked=checked)
        self.trace.append(event)
        return event

    def back(self) -> Event | None:
        """Undo the last step; returns its event (None at the start)."""
        if not self.keep_history:
            raise RuntimeError("this stepper keeps no history: create it with history=True")
        if not self.history:
            return None
        self.world, stores = self.history.pop()
        if self.stores:
            self._load(stores)
        return self.trace.pop()

    def run(self, until: Until = None, *, max_steps: int = 1_000_000) -> list[Event]:
        """Step until the scheduler stops, ``until`` steps were taken (an int), or
        ``until(world)`` is true; at most ``max_steps``. Returns the new events.

        Warns (:class:`~absnb.core.errors.FailureNotFiredWarning`) when the scheduler ends
        the run before the crash it was asked for (``crash_at``) was due."""
        check_run(until, max_steps)
        start = len(self.trace)
        with paused_collector():  # the history is all survivors: absnb.sim.collector
            for _ in range(max_steps):
                if isinstance(until, int) and len(self.trace) - start >= until:
                    break
                if callable(until) and until(self.world):
                    break
                if self.step() is None:
                    why = crash_not_fired(self._scheduler, self.world, self.trace)
                    if why is not None:
                        warnings.warn(why, FailureNotFiredWarning, stacklevel=2)
                    break
        return self.trace[start:]

    def reset(self) -> None:
        """Back to the starting world, with an empty trace."""
        self.world = self.initial.clone()
        self._load(self._initial_stores)
        self.history.clear()
        self.trace.clear()

    @property
    def actions(self) -> list[Action]:
        """The actions taken so far: a script that replays this run exactly."""
        return [e.action for e in self.trace]
