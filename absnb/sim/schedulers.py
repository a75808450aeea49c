"""Schedulers: the one seam that decides what happens next.

A scheduler's :meth:`~Scheduler.choose` gets the world and its enabled actions and returns
one of them, or None to end the run. The built-in schedulers keep no state of their own:
their choice is a function of the world (its clock included), so going back a step and
stepping again repeats the same choice, and the same seed always gives the same trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from absnb.core.errors import ActionNotEnabledError, GraphError, InvalidTypeError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, TaskId
from absnb.sim.actions import (
    PROGRESS,
    Action,
    Crash,
    Recover,
    RecoveryMode,
    TriggerCheckpoint,
)
from absnb.sim.args import check_chooser, check_policy, check_script
from absnb.sim.events import Event
from absnb.sim.world import World

_MASK = (1 << 64) - 1


def mix(seed: int, step: int) -> int:
    """A 64-bit hash of (seed, step) (splitmix64): cheap, stateless, the same everywhere."""
    z = (seed * 0x9E3779B97F4A7C15 + step * 0xBF58476D1CE4E5B9 + 0x94D049BB133111EB) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class Scheduler(Protocol):
    """Decides the next action."""

    def choose(self, world: World, enabled: Sequence[Action]) -> Action | None:
        """One of ``enabled``, or None to stop."""
        ...


def check_names(scheduler: object, graph: ExecutionGraph) -> None:
    """Refuse, when a scheduler meets its world, a task or channel it names that the job
    does not have: a crash of a task that does not exist would otherwise pass unnoticed
    whenever the run ends before it is due.

    Raises:
        GraphError: names the entry, the unknown task or channel, and the ones there are.
    """
    if isinstance(scheduler, _Policy) and scheduler.crash_task is not None:
        try:
            graph.task(scheduler.crash_task)
        except GraphError as e:
            raise GraphError(f"crash_task={scheduler.crash_task!r}: {e}") from None
    if isinstance(scheduler, ScriptedScheduler):
        for i, action in enumerate(scheduler.actions):
            for key in ("task", "src", "dst", "at", "channel"):
                value = getattr(action, key, None)
                try:
                    if isinstance(value, TaskId):
                        graph.task(value)
                    elif isinstance(value, ChannelId):
                        graph.channel(value)
                except GraphError as e:
                    raise GraphError(f"script entry {i} ({action}): {e}") from None


def crash_not_fired(scheduler: object, world: World, trace: Sequence[Event]) -> str | None:
    """Why the crash an automatic scheduler was asked for did not happen in a run that
    ended at ``world`` (None: it happened, or none was asked for)."""
    if not isinstance(scheduler, _Policy) or scheduler.crash_at is None:
        return None
    if any(isinstance(e.action, Crash) for e in trace) or world.clock > scheduler.crash_at:
        return None
    return (
        f"crash_at={scheduler.crash_at}: the run ended at step {world.clock}, before the "
        f"crash was due, so no task crashed; use a crash_at below {world.clock}"
    )


class _Policy:
    """What the automatic schedulers share: periodic checkpoints while input remains, an
    injected crash, and recovery after it.

    Args:
        crash_at: the step at which to crash a task (None: no crash).
        crash_task: which task crashes (name or id); None picks one from the seed.
        recovery: ``full`` or ``partial``.
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        crash_at: int | None = None,
        crash_task: TaskId | str | None = None,
        recovery: RecoveryMode = "full",
    ) -> None:
        check_policy(seed, crash_at, recovery)
        self.seed = seed
        self.crash_at = crash_at
        self.crash_task = crash_task
        self.recovery = recovery

    def choose(self, world: World, enabled: Sequence[Action]) -> Action | None:
        if world.failed is not None:
            return Recover(self.recovery)
        progress = [a for a in enabled if type(a) in PROGRESS]
        if not progress:
            return TriggerCheckpoint() if world.needs_final_checkpoint() else None
        if self.crash_at is not None and world.clock == self.crash_at:
            if self.crash_task is None:
                tasks = world.graph.tasks
                return Crash(tasks[mix(self.seed, -1) % len(tasks)])
            return Crash(world.graph.task(self.crash_task))
        if (
            world.coordinator.is_due(world.clock)
            and world.can_trigger()
            and world.input_remaining()
        ):
            return TriggerCheckpoint()
        return self.pick(world, progress)

    def pick(self, world: World, progress: list[Action]) -> Action:
        raise NotImplementedError


class RandomScheduler(_Policy):
    """Seeded random: a uniform choice among deliveries and emits at every step."""

    def pick(self, world: World, progress: list[Action]) -> Action:
        return progress[mix(self.seed, world.clock) % len(progress)]

    def __repr__(self) -> str:
        return f"RandomScheduler(seed={self.seed})"


class RoundRobinScheduler(_Policy):
    """Takes the enabled deliveries and emits in turn, cycling with the clock."""

    def pick(self, world: World, progress: list[Action]) -> Action:
        return progress[world.clock % len(progress)]

    def __repr__(self) -> str:
        return "RoundRobinScheduler()"


class ScriptedScheduler:
    """Plays a list of actions in order; the run ends when the script does, unless ``then``
    goes on.

    The action for step k is ``actions[k - start]``, where ``start`` is the world's clock
    when the script begins, so stepping back and forth replays it exactly. With ``then`` (a
    scheduler), ``then`` chooses after the script, and wherever the script's action is not
    enabled (a step taken by hand, a crash, left the script); a scripted crash is played
    when the world allows it.

    Raises:
        ActionNotEnabledError: (from the world, without ``then``) a scripted action is not
            enabled when due.
        InvalidTypeError: ``then`` is not a scheduler.
    """

    def __init__(
        self, actions: Sequence[Action], start: int = 0, then: Scheduler | None = None
    ) -> None:
        check_script(actions, start)
        if then is not None and not callable(getattr(then, "choose", None)):
            raise InvalidTypeError(
                f"then must be a scheduler (an object with a choose method, such as "
                f"RandomScheduler(seed=0)), not {then!r:.80}"
            )
        self.actions = list(actions)
        self.start = start
        self.then = then

    def choose(self, world: World, enabled: Sequence[Action]) -> Action | None:
        i = world.clock - self.start
        if i < 0:
            raise ActionNotEnabledError(
                f"the script starts at step {self.start}, but the world is at step {world.clock}"
            )
        if i < len(self.actions):
            action = self.actions[i]
            # (a crash is never among the enabled actions a stepper offers: asked apart)
            if self.then is None or action in enabled or world.is_enabled(action):
                return action
        return None if self.then is None else self.then.choose(world, enabled)

    def __repr__(self) -> str:
        return f"ScriptedScheduler({len(self.actions)} actions)"


class ManualScheduler:
    """Asks an outside chooser (a widget, a person, a test) for every action."""

    def __init__(self, chooser: Callable[[World, Sequence[Action]], Action | None]) -> None:
        check_chooser(chooser)
        self.chooser = chooser

    def choose(self, world: World, enabled: Sequence[Action]) -> Action | None:
        return self.chooser(world, enabled)
