"""Every enabled action at once: the fast path of the action table's preconditions.

Whether one action may happen is its precondition in :mod:`absnb.sim.rules` (the one rule
set). :func:`enabled_actions` lists, in a fixed order, every action whose precondition
holds, asking the common cases inline (the hot path of every step), so that the
schedulers, the explorer and the views offer exactly what :func:`~absnb.sim.rules.why_not`
accepts; ``tests/sim/test_enabled.py`` checks it against the preconditions, action by
action, over random runs of every protocol and job.
"""

from __future__ import annotations

from itertools import compress

from absnb.sim.actions import (
    Action,
    Crash,
    Deliver,
    Emit,
    EndInput,
    Notify,
    Recover,
    Wait,
)
from absnb.sim.rules import can_trigger, deliverable, emittable, ticking, unfinished
from absnb.sim.state import WorldState

WAIT = Wait()
RECOVER = (Recover("full"), Recover("partial"))


def enabled_actions(
    state: WorldState, *, crashes: bool = False, ends: bool = False
) -> list[Action]:
    """The actions that can happen now, in a fixed order: deliveries by channel, emits by
    task, notifications, (with ``ends``) a finished sender ending each of its channels, a
    wait, then a checkpoint trigger, then (with ``crashes``) a crash of each task.

    A crash and an end of input are always possible (their preconditions accept them), but
    a run offers them only when asked, as faults and bounded inputs are what it explores."""
    if state.failed is not None:
        return list(RECOVER)
    acts = _deliveries(state)
    _emits(state, acts)
    if state.notices:
        acts.extend(Notify(t, pending[0]) for t, pending in state.notices.items())
    if ends:
        acts.extend(EndInput(c) for c in state.channels if unfinished(state, c) is None)
    if not acts and ticking(state):
        acts.append(WAIT)
    if can_trigger(state):
        acts.append(state.static.trigger)
    if crashes:
        acts.extend(Crash(t) for t in state.graph.tasks)
    return acts


def _deliveries(state: WorldState) -> list[Action]:
    """The enabled deliveries in channel order: Deliver's precondition
    (:func:`~absnb.sim.rules.deliverable`) asked of every channel at once, its cheap tests
    inline: an empty channel is never deliverable, and while no task replays a non-empty
    one is unless blocked."""
    deliveries, blocked = state.static.deliveries, state.blocked
    if state.replaying:
        pairs = zip(deliveries, state.channels.items(), strict=True)
        return [d for d, (c, q) in pairs if q and deliverable(state, c) is None]
    if blocked:
        return [
            d
            for d, (c, q) in zip(deliveries, state.channels.items(), strict=True)
            if q and c not in blocked
        ]
    return list(compress(deliveries, state.channels.values()))  # a non-empty queue is true


def _emits(state: WorldState, acts: list[Action]) -> None:
    """Append the enabled emits in task order: Emit's precondition
    (:func:`~absnb.sim.rules.emittable`) asked of every source and process, its first tests
    (halted, input log consumed) inline; the precondition itself is asked only of a task
    that replays or whose next entry may wait (the bank)."""
    tasks, inputs = state.tasks, state.inputs
    for t, emit, waits in state.static.emits:
        task = tasks[t]
        if task.halted or task.offset >= len(inputs[t]):
            continue
        if (not task.replay and not waits) or emittable(state, t) is None:
            acts.append(emit)


def progress_actions(state: WorldState) -> list[Action]:
    """The enabled deliveries, emits, notifications and waits: the run is over when there
    are none."""
    return [a for a in enabled_actions(state) if type(a) in _PROGRESS]


_PROGRESS = (Deliver, Emit, Notify, Wait)
