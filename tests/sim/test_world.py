"""World, Stepper and schedulers: FIFO and blocking, errors a user can cause, recovery,
synchronous halting, value semantics, and the schedulers' choices.

Every scenario uses a tiny word count with one counter and one sink, so that every record's
route is known by hand: ``source[i] -> count -> sink``.
"""

from __future__ import annotations

import itertools
import re

import pytest

import absnb
from absnb.core.messages import Record
from absnb.sim.recovery import restore

# -- helpers ---------------------------------------------------------------------------------


def tiny(lines):
    """Word count with one counter and one sink (sources: one per entry of ``lines``)."""
    return absnb.word_count(lines, counters=1, sinks=1)


def ids(job):
    g = job.graph
    s0, s1 = g.task("source[0]"), g.task("source[1]")
    return (
        s0,
        s1,
        g.task("count"),
        g.task("sink"),
        g.channel("source[0]->count"),
        g.channel("source[1]->count"),
        g.channel("count->sink"),
    )


def transit(world):
    """What is in transit on every channel, by channel name."""
    return {str(c): world.channel_values(c) for c in world.graph.channels}


def play(stepper, actions):
    return [stepper.step(a) for a in actions]


# -- FIFO order, blocking, alignment ---------------------------------------------------------


def test_alignment_blocks_buffers_and_delivers_in_order_after_unblock():
    job = tiny([["a b", "d"], ["c"]])
    s0, s1, count, _sink, s0c, s1c, cs = ids(job)
    stepper = absnb.Stepper(absnb.World(job, "abs"))
    w = lambda: stepper.world  # noqa: E731

    stepper.step(absnb.Emit(s1))
    assert transit(w()) == {"source[0]->count": [], "source[1]->count": ["c"], "count->sink": []}
    trigger = stepper.step(absnb.TriggerCheckpoint())
    assert trigger.snapshots == ((s0, 1), (s1, 1))
    assert transit(w())["source[1]->count"] == ["c", "barrier 1"]
    stepper.step(absnb.Emit(s0))
    assert transit(w())["source[0]->count"] == ["barrier 1", "a", "b"]
    assert w().blocked == set()

    # The barrier on source[0]->count arrives first: count blocks that input.
    event = stepper.step(absnb.Deliver(s0c))
    assert event.blocked == (s0c,)
    assert w().blocked == {s0c}
    assert absnb.Deliver(s0c) not in w().enabled_actions()
    # A record sent on the blocked channel is buffered behind the others, in order.
    stepper.step(absnb.Emit(s0))
    assert w().blocked == {s0c}
    assert transit(w())["source[0]->count"] == ["a", "b", "d"]
    # The other input goes on: c is counted before the snapshot.
    stepper.step(absnb.Deliver(s1c))
    assert w().blocked == {s0c}
    assert w().state_of("count") == {"c": 1}
    assert transit(w())["count->sink"] == [("c", 1)]

    # The last barrier: count snapshots {c: 1}, forwards the barrier and unblocks.
    event = stepper.step(absnb.Deliver(s1c))
    assert event.snapshots == ((count, 1),)
    assert event.unblocked == (s0c,)
    assert w().blocked == set()
    assert transit(w())["count->sink"] == [("c", 1), "barrier 1"]

    # The buffered records come out in FIFO order: a, b, d.
    delivered = play(stepper, [absnb.Deliver(s0c)] * 3)
    assert [e.message.value for e in delivered] == ["a", "b", "d"]
    assert w().blocked == set()
    assert transit(w())["count->sink"] == [("c", 1), "barrier 1", ("a", 1), ("b", 1), ("d", 1)]

    # The sink gets them in the same order; the barrier completes checkpoint 1.
    events = play(stepper, [absnb.Deliver(cs)] * 5)
    assert [e.completed for e in events] == [(), (1,), (), (), ()]
    assert w().state_of("sink") == [("c", 1), ("a", 1), ("b", 1), ("d", 1)]
    snap = w().latest_snapshot()
    assert snap.state_of("count") == {"c": 1}
    assert snap.state_of("sink") == [("c", 1)]
    assert snap.tasks[s0].offset == 0
    assert snap.tasks[s1].offset == 1
    assert snap.channel_values() == {}  # ABS on an acyclic graph records no channel
    assert absnb.world_problems(w()) == []
    assert w().is_finished()
    assert absnb.exactly_once(w())


def test_fifo_per_channel_without_checkpoints():
    job = tiny([["x y z"], ["q"]])
    s0, _s1, _count, _sink, s0c, _s1c, _cs = ids(job)
    stepper = absnb.Stepper(absnb.World(job, "none"))
    event = stepper.step(absnb.Emit(s0))
    assert [(c, m.value, m.seq) for c, m in event.sent] == [
        (s0c, "x", 1),
        (s0c, "y", 2),
        (s0c, "z", 3),
    ]
    assert [e.message for e in play(stepper, [absnb.Deliver(s0c)] * 3)] == [
        Record("x", 1, ("source[0]", 0)),
        Record("y", 2, ("source[0]", 0)),
        Record("z", 3, ("source[0]", 0)),
    ]


# -- errors a user can cause -----------------------------------------------------------------


def test_not_enabled_action_says_why_and_lists_what_is_enabled():
    job = tiny([["a b", "d"], ["c"]])
    s0, s1, _count, _sink, s0c, _s1c, _cs = ids(job)
    stepper = absnb.Stepper(absnb.World(job, "abs"))
    play(
        stepper,
        [absnb.Emit(s1), absnb.TriggerCheckpoint(), absnb.Emit(s0), absnb.Deliver(s0c)],
    )
    before = stepper.world.clone()
    with pytest.raises(absnb.ActionNotEnabledError) as info:
        stepper.step(absnb.Deliver(s0c))
    message = str(info.value)
    assert "cannot deliver source[0]->count at step 4" in message
    assert "blocked by count" in message
    assert "Enabled now: deliver source[1]->count, source[0] emits" in message
    # A refused action changes nothing.
    assert stepper.world == before
    assert len(stepper.trace) == 4


@pytest.mark.parametrize(
    ("make_action", "why"),
    [
        (lambda ids: absnb.Deliver(ids[6]), "channel count->sink is empty"),
        (lambda ids: absnb.Emit(ids[2]), "count is not a source or process"),
        (lambda ids: absnb.Recover("full"), "no task has failed"),
        (lambda ids: absnb.Crash(absnb.TaskId("nobody")), "there is no task nobody"),
    ],
)
def test_not_enabled_reasons(make_action, why):
    job = tiny([["a"], ["b"]])
    world = absnb.World(job, "abs")
    action = make_action(ids(job))
    assert not world.is_enabled(action)
    with pytest.raises(absnb.ActionNotEnabledError, match=why):
        world.apply(action)


def test_emit_after_the_whole_log_and_anything_but_recover_after_a_crash():
    job = tiny([["a"], ["b"]])
    s0, _s1, count, _sink, s0c, _s1c, _cs = ids(job)
    world = absnb.World(job, "abs")
    world.apply(absnb.Emit(s0))
    with pytest.raises(absnb.ActionNotEnabledError, match="source\\[0\\] has emitted its whole"):
        world.apply(absnb.Emit(s0))
    world.apply(absnb.Crash(count))
    assert world.enabled_actions() == [absnb.Recover("full"), absnb.Recover("partial")]
    with pytest.raises(absnb.ActionNotEnabledError, match="count has failed: only Recover"):
        world.apply(absnb.Deliver(s0c))
    with pytest.raises(absnb.ActionNotEnabledError, match="unknown recovery mode 'some'"):
        world.apply(absnb.Recover("some"))


def ring_bank(transfers=0):
    return absnb.bank_transfer(
        {"A": 1_000, "B": 2_000, "C": 3_000},
        links=[("A", "B"), ("B", "C"), ("C", "A")],
        transfers=transfers,
    )


@pytest.mark.parametrize(
    ("src", "dst", "amount", "why"),
    [
        ("A", "C", 100, "there is no channel A->C"),
        ("C", "B", 100, "there is no channel C->B"),
    ],
)
def test_transfer_validation(src, dst, amount, why):
    job = ring_bank()
    world = absnb.World(job, "chandy-lamport")
    action = absnb.Transfer(job.graph.task(src), job.graph.task(dst), amount)
    with pytest.raises(absnb.ActionNotEnabledError, match=why):
        world.apply(action)
    assert world.state_of(src) == {"A": 1_000, "B": 2_000, "C": 3_000}[src]
    assert world.clock == 0


@pytest.mark.parametrize(
    ("amount", "why"),
    [
        (0, "cannot send 0 to B: an amount is a positive whole number, such as 100$"),
        (-100, "cannot send -100 to B"),
        (1.5, "cannot send 1.5 to B: .*, not a float"),
        ("100", "cannot send '100' to B: .*, not a str"),
    ],
)
def test_a_transfer_of_a_bad_amount_is_refused_where_it_is_made(amount, why):
    job = ring_bank()
    with pytest.raises(absnb.ActionNotEnabledError, match=why):
        absnb.Transfer(job.graph.task("A"), job.graph.task("B"), amount)


def test_transfer_allowed_only_after_the_pregenerated_ones():
    job = ring_bank(transfers=4)
    a, b = job.graph.task("A"), job.graph.task("B")
    world = absnb.World(job, "chandy-lamport")
    pending = [t for t in job.graph.tasks if job.inputs[t]]
    assert pending, "the seeded transfers should fill some input log"
    src = pending[0]
    dst = job.graph.tasks[(job.graph.tasks.index(src) + 1) % 3]
    with pytest.raises(absnb.ActionNotEnabledError, match="must first make the transfers"):
        world.apply(absnb.Transfer(src, dst, 100))
    # A valid transfer moves money now and is appended to the account's input log.
    fresh = absnb.World(ring_bank(), "chandy-lamport")
    fresh.apply(absnb.Transfer(a, b, 300))
    assert fresh.state_of("A") == 700
    assert fresh.channel_values("A->B") == [300]
    assert fresh.inputs[a] == (("B", 300),)


def test_transfer_from_a_source_is_rejected():
    job = tiny([["a"], ["b"]])
    s0, _s1, count, *_ = ids(job)
    with pytest.raises(absnb.ActionNotEnabledError, match="not an account"):
        absnb.World(job, "abs").apply(absnb.Transfer(s0, count, 100))


@pytest.mark.parametrize("protocol", ["abs", "abs-cyclic", "synchronous"])
def test_trigger_at_a_named_task_is_only_for_chandy_lamport(protocol):
    job = tiny([["a"], ["b"]])
    s0 = ids(job)[0]
    world = absnb.World(job, protocol)
    assert world.is_enabled(absnb.TriggerCheckpoint())
    with pytest.raises(absnb.ActionNotEnabledError, match="only Chandy-Lamport can start at"):
        world.apply(absnb.TriggerCheckpoint(at=s0))
    bank = absnb.bank_transfer()
    cl = absnb.World(bank, "chandy-lamport")
    event = cl.apply(absnb.TriggerCheckpoint(at=bank.graph.task("B")))
    assert event.snapshots == ((bank.graph.task("B"), 1),)


@pytest.mark.parametrize(
    ("at", "unreached"),
    [
        ("count", "source[0], source[1]"),
        ("source[0]", "source[1]"),
        ("sink", "source[0], source[1], count"),
    ],
)
def test_chandy_lamport_refuses_an_initiator_that_cannot_reach_every_task(at, unreached):
    """Markers only travel downstream: from count they never reach the sources, which would
    never record their state, and the snapshot would never complete."""
    job = tiny([["a"], ["b"]])
    world = absnb.World(job, "chandy-lamport")
    with pytest.raises(
        absnb.ActionNotEnabledError, match=re.escape(f"never reach {unreached}, so")
    ):
        world.apply(absnb.TriggerCheckpoint(at=job.graph.task(at)))
    assert world.coordinator.next_id == 1  # nothing was triggered
    one_way = absnb.bank_transfer(links=[("A", "B")])
    bank = absnb.World(one_way, "chandy-lamport")
    assert not bank.is_enabled(absnb.TriggerCheckpoint(at=one_way.graph.task("B")))
    assert bank.is_enabled(absnb.TriggerCheckpoint(at=one_way.graph.task("A")))


def test_trigger_refusals():
    job = tiny([["a"], ["b"]])
    with pytest.raises(absnb.ActionNotEnabledError, match="takes no checkpoints"):
        absnb.World(job, "none").apply(absnb.TriggerCheckpoint())
    world = absnb.World(job, "abs", max_checkpoints=5)
    world.apply(absnb.TriggerCheckpoint())
    with pytest.raises(absnb.ActionNotEnabledError, match="already pending"):
        world.apply(absnb.TriggerCheckpoint())
    once = absnb.World(absnb.bank_transfer(), "chandy-lamport", max_checkpoints=1)
    once.apply(absnb.TriggerCheckpoint())
    with pytest.raises(absnb.ActionNotEnabledError, match="allows 1 checkpoint"):
        once.apply(absnb.TriggerCheckpoint())


@pytest.mark.parametrize("job", [absnb.cyclic(), absnb.bank_transfer()], ids=["cyclic", "bank"])
def test_abs_algorithm_1_refuses_a_cyclic_graph(job):
    with pytest.raises(absnb.CyclicGraphError, match="abs-cyclic"):
        absnb.World(job, "abs")
    assert absnb.World(job, "abs", allow_deadlock=True).protocol.name == "abs"


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "7"])
def test_the_cyclic_job_refuses_numbers_that_never_reach_1(bad):
    # 0 -> 0 -> ... and -1 -> -2 -> -1 -> ... would loop forever; 2.5 is no Collatz number.
    with pytest.raises(absnb.GraphError, match=re.escape(f"at least 1, not {bad!r}")):
        absnb.cyclic([3, bad])


def test_a_bank_without_links_cannot_make_transfers():
    with pytest.raises(absnb.GraphError, match="no links, so it cannot make 2 transfer"):
        absnb.bank_transfer(links=[], transfers=2)
    assert absnb.bank_transfer(links=[], transfers=0).graph.channels == ()


def test_unknown_protocol():
    with pytest.raises(absnb.UnknownProtocolError, match="chandy-lamport"):
        absnb.World(tiny([["a"]]), "lamport")


def completed_snapshot(job, protocol="abs"):
    stepper = absnb.Stepper(absnb.World(job, protocol, checkpoint_interval=1))
    stepper.scheduler = absnb.RoundRobinScheduler()
    stepper.run(until=lambda w: w.latest_snapshot() is not None)
    snap = stepper.world.latest_snapshot()
    assert snap is not None
    return snap


@pytest.mark.parametrize(
    "other",
    [
        absnb.bank_transfer(),
        absnb.word_count(counters=3, sinks=3),
        absnb.cyclic(),
    ],
    ids=["bank", "word-count-3-counters", "cyclic"],
)
def test_restoring_a_snapshot_of_another_job_raises(other):
    snap = completed_snapshot(absnb.word_count(), "abs-cyclic")
    world = absnb.World(other, "abs-cyclic")
    before = world.clone()
    with pytest.raises(absnb.SnapshotMismatchError, match="word_count") as info:
        restore(world, snap)
    assert "restore it into a world built from the same job" in str(info.value)
    assert world == before
    # Into its own job it restores.
    own = absnb.World(absnb.word_count(), "abs-cyclic")
    restore(own, snap)
    assert {t: own.tasks[t].state for t in own.graph.tasks} == snap.task_states


# -- recovery --------------------------------------------------------------------------------


def test_partial_recovery_restarts_upstream_only_and_downstream_drops_duplicates():
    job = tiny([["a b", "d"], ["c"]])
    s0, s1, count, sink, s0c, s1c, cs = ids(job)
    stepper = absnb.Stepper(absnb.World(job, "abs"))
    # Checkpoint 1 as in the alignment test: count {c: 1}, sink [(c, 1)], source[0] at 0.
    play(
        stepper,
        [
            absnb.Emit(s1),
            absnb.TriggerCheckpoint(),
            absnb.Emit(s0),
            absnb.Deliver(s0c),
            absnb.Emit(s0),
            absnb.Deliver(s1c),
            absnb.Deliver(s1c),
            *[absnb.Deliver(s0c)] * 3,
            *[absnb.Deliver(cs)] * 3,  # (c, 1), barrier 1, (a, 1)
        ],
    )
    world = stepper.world
    assert world.latest_snapshot().checkpoint_id == 1
    assert world.state_of("sink") == [("c", 1), ("a", 1)]
    assert transit(world)["count->sink"] == [("b", 1), ("d", 1)]

    stepper.step(absnb.Crash(count))
    event = stepper.step(absnb.Recover("partial"))
    # count and its upstream restart from checkpoint 1; the sink keeps its state and input.
    assert event.restored == (1, (s0, s1, count))
    world = stepper.world
    assert world.state_of("count") == {"c": 1}
    assert world.state_of("sink") == [("c", 1), ("a", 1)]
    assert transit(world) == {
        "source[0]->count": [],
        "source[1]->count": [],
        "count->sink": [("b", 1), ("d", 1)],
    }

    stepper.scheduler = absnb.RoundRobinScheduler()
    rest = stepper.run()
    # source[0] emits a b and d again; count sends (a, 1) (b, 1) (d, 1) again as numbers
    # 2, 3, 4 on count->sink; the sink has seen up to 4 (b and d still in transit): it
    # drops all three.
    dropped = [e for e in rest if e.dropped]
    assert [(e.task, e.message.value, e.message.seq) for e in dropped] == [
        (sink, ("a", 1), 2),
        (sink, ("b", 1), 3),
        (sink, ("d", 1), 4),
    ]
    assert "(duplicate, dropped)" in dropped[0].describe()
    assert stepper.world.state_of("sink") == [("c", 1), ("a", 1), ("b", 1), ("d", 1)]
    assert stepper.world.is_finished()
    assert absnb.exactly_once(stepper.world)


@pytest.mark.parametrize(
    ("failed", "restarted"),
    [
        ("source[1]", ["source[1]"]),
        ("source[0]", ["source[0]"]),
        ("count", ["source[0]", "source[1]", "count"]),
        ("sink", ["source[0]", "source[1]", "count", "sink"]),
    ],
)
def test_partial_recovery_restart_set(failed, restarted):
    job = tiny([["a b"], ["c"]])
    stepper = absnb.Stepper(absnb.World(job, "abs"), absnb.RoundRobinScheduler())
    stepper.run(3)
    stepper.step(absnb.Crash(job.graph.task(failed)))
    event = stepper.step(absnb.Recover("partial"))
    assert [str(t) for t in event.restored[1]] == restarted
    assert event.restored[0] == 0
    stepper.run()
    assert absnb.exactly_once(stepper.world)


def test_full_recovery_restarts_every_task():
    job = tiny([["a b"], ["c"]])
    stepper = absnb.Stepper(absnb.World(job, "abs"), absnb.RoundRobinScheduler())
    stepper.run(3)
    stepper.step(absnb.Crash(job.graph.task("source[1]")))
    event = stepper.step(absnb.Recover("full"))
    assert event.restored == (0, job.graph.tasks)
    assert stepper.world.state_of("count") == {}
    assert all(not q for q in stepper.world.channels.values())


def test_a_second_crash_while_replaying_keeps_the_replay_order():
    """Regression: a task that failed again before it had replayed everything forgot the
    rest of its replay, consumed in another order, and the sink dropped the wrong records
    (output [(a, 1), (a, 1)])."""
    job = tiny([["a"], ["b"]])
    s0, s1, count, _sink, s0c, s1c, _cs = ids(job)
    stepper = absnb.Stepper(absnb.World(job, "none"))
    play(stepper, [absnb.Emit(s0), absnb.Emit(s1), absnb.Deliver(s0c)])
    assert transit(stepper.world)["count->sink"] == [("a", 1)]
    for _ in range(2):  # crash, recover, and crash again before any replay
        stepper.step(absnb.Crash(count))
        event = stepper.step(absnb.Recover("partial"))
        assert event.restored == (0, (s0, s1, count))
    play(stepper, [absnb.Emit(s0), absnb.Emit(s1)])
    # count consumed a (from source[0]) before it failed: it must replay that first.
    enabled = stepper.world.enabled_actions()
    assert absnb.Deliver(s0c) in enabled
    assert absnb.Deliver(s1c) not in enabled
    with pytest.raises(absnb.ActionNotEnabledError, match="must next consume from source\\[0\\]"):
        stepper.step(absnb.Deliver(s1c))

    # An adversary that always takes the last enabled action still gets exactly-once.
    stepper.scheduler = absnb.ManualScheduler(lambda world, acts: acts[-1] if acts else None)
    stepper.run()
    assert stepper.world.state_of("sink") == [("a", 1), ("b", 1)]
    assert absnb.exactly_once(stepper.world)


# -- synchronous snapshots halt the sources --------------------------------------------------


def emits(world):
    return [a for a in world.enabled_actions() if isinstance(a, absnb.Emit)]


def test_synchronous_halts_the_sources_until_the_checkpoint_completes():
    job = tiny([["a", "c"], ["b"]])
    s0, s1, _count, _sink, s0c, s1c, cs = ids(job)
    stepper = absnb.Stepper(absnb.World(job, "synchronous"))
    assert emits(stepper.world) == [absnb.Emit(s0), absnb.Emit(s1)]
    stepper.step(absnb.TriggerCheckpoint())
    assert stepper.world.tasks[s0].halted
    steps = [absnb.Deliver(s0c), absnb.Deliver(s1c), absnb.Deliver(cs)]
    for action in steps:
        assert emits(stepper.world) == []
        with pytest.raises(absnb.ActionNotEnabledError, match="halted until the checkpoint"):
            stepper.world.clone().apply(absnb.Emit(s0))
        event = stepper.step(action)
    assert event.completed == (1,)
    assert emits(stepper.world) == [absnb.Emit(s0), absnb.Emit(s1)]


def test_abs_does_not_halt_the_sources():
    job = tiny([["a", "c"], ["b"]])
    s0, s1, *_ = ids(job)
    world = absnb.World(job, "abs")
    world.apply(absnb.TriggerCheckpoint())
    assert emits(world) == [absnb.Emit(s0), absnb.Emit(s1)]


# -- value semantics -------------------------------------------------------------------------


def test_clone_is_independent_both_ways():
    job = tiny([["a b", "d"], ["c"]])
    s0, s1, count, sink, s0c, s1c, cs = ids(job)
    world = absnb.World(job, "abs")
    for action in [absnb.Emit(s0), absnb.TriggerCheckpoint(), absnb.Deliver(s0c)]:
        world.apply(action)
    key, values, clock = world.key(), transit(world), world.clock
    copy = world.clone()
    assert copy == world
    assert hash(copy) == hash(world)
    assert copy is not world

    # b, (a, 1) to the sink, the barrier from source[0], then from source[1]: count snapshots.
    for action in [absnb.Deliver(s0c), absnb.Deliver(cs), absnb.Deliver(s0c), absnb.Deliver(s1c)]:
        copy.apply(action)
    assert copy.state_of("count") == {"a": 1, "b": 1}
    assert copy.state_of("sink") == [("a", 1)]
    assert copy != world
    assert world.key() == key
    assert transit(world) == values
    assert world.clock == clock
    assert world.state_of("count") == {"a": 1}
    assert world.state_of("sink") == []
    assert world.coordinator.pending[1].acknowledged.keys() == {s0, s1}
    assert copy.coordinator.pending[1].acknowledged.keys() == {s0, s1, count}

    # And the other way: the original moves on, the clone stays.
    copy_key = copy.key()
    world.apply(absnb.Deliver(s0c))
    world.apply(absnb.Crash(sink))
    assert copy.key() == copy_key
    assert copy.failed is None


def test_equal_worlds_from_different_interleavings():
    job = tiny([["a"], ["b"]])
    s0, s1, *_ = ids(job)
    one, two = absnb.World(job, "none"), absnb.World(job, "none")
    one.apply(absnb.Emit(s0))
    one.apply(absnb.Emit(s1))
    two.apply(absnb.Emit(s1))
    two.apply(absnb.Emit(s0))
    assert one == two
    assert hash(one) == hash(two)
    assert len({one, two}) == 1
    assert one != absnb.World(job, "none")
    assert one.__eq__("a world") is NotImplemented


# -- schedulers and the stepper --------------------------------------------------------------


def test_manual_scheduler_asks_the_chooser_with_the_enabled_actions():
    job = tiny([["a"], ["b"]])
    s0, s1, _count, _sink, s0c, _s1c, cs = ids(job)
    calls = []

    def first_three(world, enabled):
        calls.append(list(enabled))
        assert list(enabled) == world.enabled_actions()
        return enabled[0] if len(calls) <= 3 else None

    stepper = absnb.Stepper(absnb.World(job, "abs"), absnb.ManualScheduler(first_three))
    events = stepper.run()
    trigger = absnb.TriggerCheckpoint()
    assert calls == [
        [absnb.Emit(s0), absnb.Emit(s1), trigger],
        [absnb.Deliver(s0c), absnb.Emit(s1), trigger],
        [absnb.Deliver(cs), absnb.Emit(s1), trigger],
        [absnb.Emit(s1), trigger],
    ]
    assert [e.action for e in events] == [absnb.Emit(s0), absnb.Deliver(s0c), absnb.Deliver(cs)]
    assert stepper.world.state_of("sink") == [("a", 1)]


def test_round_robin_takes_the_enabled_progress_actions_in_turn():
    job = tiny([["a"], ["b"]])
    s0, s1, _count, _sink, s0c, s1c, cs = ids(job)
    stepper = absnb.Stepper(absnb.World(job, "abs"), absnb.RoundRobinScheduler())
    stepper.run()
    # step k takes progress[k % len(progress)]: no trigger without an interval.
    assert stepper.actions == [
        absnb.Emit(s0),  # 0: [emit s0, emit s1]
        absnb.Emit(s1),  # 1: [deliver s0->count, emit s1]
        absnb.Deliver(s0c),  # 2: [deliver s0->count, deliver s1->count]
        absnb.Deliver(cs),  # 3: [deliver s1->count, deliver count->sink]
        absnb.Deliver(s1c),  # 4: [deliver s1->count]
        absnb.Deliver(cs),  # 5: [deliver count->sink]
    ]
    assert stepper.world.state_of("sink") == [("a", 1), ("b", 1)]


def test_round_robin_crashes_and_recovers_when_told():
    job = tiny([["a"], ["b"]])
    count = ids(job)[2]
    scheduler = absnb.RoundRobinScheduler(crash_at=2, crash_task="count", recovery="partial")
    stepper = absnb.Stepper(absnb.World(job, "abs"), scheduler)
    stepper.run()
    assert stepper.actions[2:4] == [absnb.Crash(count), absnb.Recover("partial")]
    assert sum(isinstance(a, absnb.Crash) for a in stepper.actions) == 1
    assert absnb.exactly_once(stepper.world)


def test_periodic_trigger_waits_more_than_the_interval():
    stepper = absnb.Stepper(
        absnb.World(absnb.word_count(), "abs", checkpoint_interval=3),
        absnb.RoundRobinScheduler(),
    )
    stepper.run()
    triggers = [e.step for e in stepper.trace if isinstance(e.action, absnb.TriggerCheckpoint)]
    assert triggers[0] == 4  # the first step with clock - 0 > 3
    assert all(b - a > 3 for a, b in itertools.pairwise(triggers))
    assert stepper.world.snapshots
    assert absnb.exactly_once(stepper.world)


def test_scripted_scheduler_refuses_a_disabled_action():
    job = tiny([["a"], ["b"]])
    s0c = ids(job)[4]
    stepper = absnb.Stepper(absnb.World(job, "abs"), absnb.ScriptedScheduler([absnb.Deliver(s0c)]))
    with pytest.raises(absnb.ActionNotEnabledError, match="empty"):
        stepper.run()
    assert stepper.trace == []


def test_run_until_a_number_of_steps_and_max_steps():
    stepper = absnb.Stepper(absnb.World(absnb.word_count(), "abs"), absnb.RandomScheduler(seed=3))
    assert len(stepper.run(3)) == 3
    assert len(stepper.run(until=2)) == 2
    assert len(stepper.trace) == 5
    assert stepper.world.clock == 5
    assert len(stepper.run(max_steps=4)) == 4
    assert len(stepper.run(0)) == 0
    assert len(stepper.trace) == 9


def test_run_until_a_predicate():
    stepper = absnb.Stepper(
        absnb.World(absnb.word_count(), "abs", checkpoint_interval=1),
        absnb.RandomScheduler(seed=0),
    )
    events = stepper.run(until=lambda w: w.latest_snapshot() is not None)
    assert events[-1].completed == (1,)
    assert all(not e.completed for e in events[:-1])
    assert not stepper.world.is_finished()
    assert stepper.run(until=lambda w: True) == []
    rest = stepper.run(until=lambda w: w.is_finished())
    assert rest
    assert stepper.world.is_finished()
    assert stepper.step() is None


def test_back_and_reset():
    stepper = absnb.Stepper(absnb.World(absnb.word_count(), "abs"), absnb.RandomScheduler(seed=1))
    assert stepper.back() is None
    start = stepper.world.clone()
    first = stepper.step()
    after_first = stepper.world.clone()
    second = stepper.step()
    assert stepper.back() == second
    assert stepper.world == after_first
    assert stepper.back() == first
    assert stepper.world == start
    assert stepper.trace == []
    stepper.run(5)
    stepper.reset()
    assert stepper.world == start
    assert stepper.trace == []
    assert stepper.world.clock == 0
    no_history = absnb.Stepper(absnb.World(absnb.word_count(), "abs"), history=False)
    no_history.step()
    with pytest.raises(RuntimeError, match="history=True"):
        no_history.back()


def test_stepper_works_on_a_copy_of_the_world():
    world = absnb.World(absnb.word_count(), "abs")
    start = world.clone()
    stepper = absnb.Stepper(world, absnb.RoundRobinScheduler())
    stepper.run()
    assert world == start
    assert world.clock == 0
    assert stepper.world.is_finished()


def test_a_bank_snapshot_does_not_restore_into_a_bank_with_other_balances() -> None:
    from absnb.sim.recovery import restore

    job = absnb.bank_transfer()
    g = job.graph
    stepper = absnb.Stepper(absnb.World(job, "chandy-lamport"))
    stepper.step(absnb.TriggerCheckpoint(at=g.task("A")))
    stepper.step(absnb.Deliver(g.channel("A->B")))
    stepper.step(absnb.Deliver(g.channel("B->A")))
    snapshot = stepper.world.latest_snapshot()
    other = absnb.World(absnb.bank_transfer({"A": 1, "B": 1}), "chandy-lamport")
    with pytest.raises(absnb.SnapshotMismatchError, match="same parameters"):
        restore(other, snapshot)
    assert other.state_of("A") == 1


def test_the_bank_takes_the_shipped_transfers_and_conserves_them() -> None:
    from absnb import datasets

    transfers = datasets.bank_transfers()
    job = absnb.bank_transfer(datasets.bank_accounts(), transfers=transfers)
    logs = {str(t): list(v) for t, v in job.inputs.items()}
    assert sum(len(v) for v in logs.values()) == len(transfers)
    src, dst, amount = transfers[0]
    assert logs[src][0] == (dst, amount)
    stepper = absnb.Stepper(absnb.World(job, "chandy-lamport", checkpoint_interval=6))
    stepper.run()
    final = stepper.world.output()
    expected = dict(datasets.bank_accounts())
    for s, d, a in transfers:
        expected[s] -= a
        expected[d] += a
    assert final == expected


def test_a_transfer_list_with_an_unknown_link_is_refused() -> None:
    with pytest.raises(absnb.GraphError, match="no link A->C"):
        absnb.bank_transfer(
            {"A": 10, "B": 10, "C": 0}, links=[("A", "B")], transfers=[("A", "C", 5)]
        )


def test_barriers_and_markers_print_by_name() -> None:
    assert str(absnb.CheckpointBarrier(3)) == "barrier 3"
    assert str(absnb.Marker(2)) == "marker 2"
