"""World.key is exactly the state that decides the future (issue 12, item 3)."""

from __future__ import annotations

import absnb
from absnb.sim.actions import Crash, Emit, Recover, TriggerCheckpoint
from absnb.sim.checks import reference_output
from absnb.sim.events import Event
from absnb.sim.explore import explore, feasible_snapshots, no_deadlock, output_is_exactly_once


def old_key(world: absnb.World) -> object:
    """The key before issue 12: trigger times and the completed/aborted history, but not
    the contents of the snapshot recovery restores."""
    c = world.coordinator
    pending = tuple(
        (p.checkpoint_id, p.triggered_at, tuple(sorted(p.acknowledged))) for p in c.pending.values()
    )
    return (
        tuple(task.key() for task in world.tasks.values()),
        tuple(tuple(q) for q in world.channels.values()),
        frozenset(world.blocked),
        (
            c.next_id,
            c.last_trigger,
            pending,
            tuple(x.checkpoint_id for x in c.completed),
            tuple(c.aborted),
        ),
        world.failed,
        tuple(len(v) for v in world.inputs.values()),
        tuple(sorted(world.notices.items())),
    )


def _drain(world: absnb.World) -> None:
    while progress := world.progress_actions():
        world.apply(progress[0])


def _two_worlds() -> tuple[absnb.World, absnb.World]:
    """A and B each send 100, but the snapshot (started at A) falls between the two
    transfers in a different order: same state now, different snapshot contents."""
    job = absnb.bank_transfer()
    worlds = []
    for first, second in (("A", "B"), ("B", "A")):
        world = absnb.World(job, "chandy-lamport")
        g = world.graph
        other = {"A": "B", "B": "A"}
        world.apply(absnb.Transfer(g.task(first), g.task(other[first]), 100))
        world.apply(TriggerCheckpoint(at=g.task("A")))
        world.apply(absnb.Transfer(g.task(second), g.task(other[second]), 100))
        _drain(world)
        worlds.append(world)
    return worlds[0], worlds[1]


def test_worlds_equal_under_the_old_key_recover_differently() -> None:
    one, two = _two_worlds()
    assert [s.checkpoint_id for s in one.snapshots] == [1]
    assert [s.checkpoint_id for s in two.snapshots] == [1]
    assert old_key(one) == old_key(two)  # the old key merged them...
    assert one.key() != two.key()  # ...the new one does not,
    assert one.key(recovery=False) == two.key(recovery=False)  # only because of recovery
    for world in (one, two):
        world.apply(Crash(world.graph.task("B")))
        world.apply(Recover("full"))
    # ...and indeed they recover differently: to the balances each snapshot recorded.
    assert (one.state_of("A"), one.state_of("B")) == (9_900, 5_000)
    assert (two.state_of("A"), two.state_of("B")) == (10_000, 4_900)


def test_trigger_times_do_not_split_states_without_an_interval() -> None:
    job = absnb.word_count([["a"], ["b"]], counters=1, sinks=1)
    early, late = absnb.World(job, "abs"), absnb.World(job, "abs")
    early.apply(TriggerCheckpoint())
    _drain(early)
    late.apply(Emit(late.graph.task("source[0]")))
    late.apply(TriggerCheckpoint())
    _drain(late)
    assert early.coordinator.completed[0].triggered_at != late.coordinator.completed[0].triggered_at
    assert early.key(recovery=False) == late.key(recovery=False)


def test_exploration_visits_only_distinct_states() -> None:
    """The 2x2x2 word count with one checkpoint: each state the explorer keeps differs in
    what decides its future; before issue 12 it kept 14,452, now 3,596."""
    job = absnb.word_count([["to be", "or"], ["be"]])
    result = explore(
        absnb.World(job, "abs", max_checkpoints=1),
        [feasible_snapshots],
        [no_deadlock, output_is_exactly_once(reference_output(job))],
    )
    assert result.ok
    assert result.complete
    assert result.states < 14_452 // 2


NEW_KEY = absnb.World.key


def _recoveries(job: absnb.Job) -> tuple[set[object], bool]:
    """Every world right after a recovery that a full exploration with crashes reaches
    (told apart by the new key, whatever key the explorer deduplicates by)."""
    seen: set[object] = set()

    def note(world: absnb.World, event: Event) -> None:
        if type(event.action) is Recover:
            seen.add(NEW_KEY(world, recovery=False))

    result = explore(absnb.World(job, "chandy-lamport", max_checkpoints=2), [note], crashes=True)
    return seen, result.complete


def test_explore_with_crashes_reaches_recoveries_the_old_key_missed(monkeypatch) -> None:
    """Deduplicating by the old key merged worlds whose snapshots differ, so the explorer
    never crashed and recovered one of them: 101 distinct recovered worlds instead of 108
    on this bank of three transfers and two snapshots."""
    job = absnb.bank_transfer({"A": 200, "B": 100}, transfers=3, seed=1)
    now, complete = _recoveries(job)
    assert complete
    monkeypatch.setattr(absnb.World, "key", lambda self, *, recovery=True: old_key(self))
    before, complete_before = _recoveries(job)
    assert complete_before
    assert before < now  # every recovery reached before is reached now, and more
