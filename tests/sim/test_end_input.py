"""The simulator's end-of-input event (Flink FLIP-147): a finished sender ends a channel; the
channel counts as aligned for every pending and future barrier, a task whose inputs have all
ended still takes part in checkpoints, and runs that end channels at random points stay
exactly-once after a crash."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import absnb
from absnb.core.errors import ActionNotEnabledError
from absnb.core.messages import EndOfInput
from absnb.sim.actions import Deliver, Emit, EndInput, Notify, TriggerCheckpoint
from absnb.sim.checks import reference_output
from absnb.sim.schedulers import mix
from absnb.sim.trace import action_from_json, action_to_json, replay, save_trace
from tests.sim.crashes import run_with_crash

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def drain(world: absnb.World, *, but: absnb.TaskId | None = None) -> None:
    """Deliver (and notify) until nothing is deliverable (not to ``but``), in order."""
    while True:
        moves = [
            a
            for a in world.enabled_actions()
            if (type(a) is Deliver and (but is None or a.channel.dst != but)) or type(a) is Notify
        ]
        if not moves:
            return
        world.apply(moves[0])


def finish_source(world: absnb.World, source: absnb.TaskId) -> None:
    while world.is_enabled(Emit(source)):
        world.apply(Emit(source))


@pytest.mark.parametrize("protocol", ["abs", "unaligned", "at-least-once"])
def test_an_ended_channel_counts_as_aligned_for_pending_and_later_barriers(protocol):
    job = absnb.word_count()
    world = absnb.World(job, protocol, checkpoint_interval=1_000)
    graph = job.graph
    s0, s1 = graph.tasks_of("source")
    finish_source(world, s0)
    world.apply(TriggerCheckpoint())  # 1: barriers from both sources
    drain(world, but=graph.task("count[0]"))  # count[0] aligns on s1's barrier only...
    for c in graph.outputs[s0]:
        world.apply(EndInput(c))  # ...s0 ends instead of delivering its barrier there
    drain(world)
    assert [c.checkpoint_id for c in world.coordinator.completed] == [1]
    world.apply(TriggerCheckpoint())  # 2: s0 has ended its channels, sends no barrier
    drain(world)
    assert [c.checkpoint_id for c in world.coordinator.completed] == [1, 2]
    assert all(type(m) is not EndOfInput for q in world.channels.values() for m in q)
    finish_source(world, s1)
    drain(world)
    assert world.is_finished()
    assert world.output() == reference_output(job)


def test_a_task_whose_inputs_have_all_ended_still_takes_part():
    job = absnb.word_count(sink="two-phase-commit")
    world = absnb.World(job, "abs", checkpoint_interval=1_000)
    graph = job.graph
    for s in graph.tasks_of("source"):
        finish_source(world, s)
        for c in graph.outputs[s]:
            world.apply(EndInput(c))
    drain(world)
    counts = graph.tasks_of("count")
    assert all(world.tasks[t].ended == frozenset(graph.inputs[t]) for t in counts)
    world.apply(TriggerCheckpoint())  # no barrier reaches the counters: they join anyway
    drain(world)
    assert [c.checkpoint_id for c in world.coordinator.completed] == [1]
    assert set(world.coordinator.completed[0].snapshot.tasks) == set(graph.tasks)
    assert world.uncommitted() == 0  # the final checkpoint committed the sinks' output
    assert world.output() == reference_output(job)


def test_end_input_is_refused_until_the_sender_has_finished():
    job = absnb.word_count()
    world = absnb.World(job, "abs")
    graph = job.graph
    c = graph.channel("source[0]->count[0]")
    with pytest.raises(ActionNotEnabledError, match="input log entries left"):
        world.apply(EndInput(c))
    out = graph.outputs[graph.task("count[0]")][0]
    with pytest.raises(ActionNotEnabledError, match="has not had the end of"):
        world.apply(EndInput(out))
    finish_source(world, c.src)
    world.apply(EndInput(c))
    with pytest.raises(ActionNotEnabledError, match="has ended already"):
        world.apply(EndInput(c))


def test_end_input_round_trips_and_a_trace_naming_it_replays(tmp_path):
    job = absnb.word_count()
    graph = job.graph
    action = EndInput(graph.channel("source[1]->count[0]"))
    assert action_from_json(action_to_json(action), graph) == action
    world = absnb.World(job, "unaligned", checkpoint_interval=4)
    stepper = absnb.Stepper(world, EndingScheduler(seed=11), history=False)
    stepper.run()
    assert any(type(e.action) is EndInput for e in stepper.trace)
    path = tmp_path / "run.jsonl"
    save_trace(path, world, stepper.actions, stepper.trace)
    again = replay(path)
    assert again.world == stepper.world
    assert [e.describe() for e in again.trace] == [e.describe() for e in stepper.trace]


class EndingScheduler(absnb.RandomScheduler):
    """Random, and ends a channel (one whose sender has finished) about one step in four,
    and every such channel once nothing else moves; the crash, when due, comes first."""

    def choose(self, world, enabled):
        if world.failed is None and world.clock != self.crash_at:
            ends = [EndInput(c) for c in world.graph.channels if world.is_enabled(EndInput(c))]
            if ends and (mix(self.seed, -2 - world.clock) % 4 == 0 or not _moves(enabled)):
                return ends[mix(self.seed, world.clock) % len(ends)]
        return super().choose(world, enabled)


def _moves(enabled):
    return [a for a in enabled if type(a) in (Deliver, Emit)]


@settings(max_examples=120, **SETTINGS)
@given(
    st.sampled_from(
        ["abs", "unaligned", "abs-timeout", "chandy-lamport", "synchronous", "abs-cyclic"]
    ),
    st.integers(0, 10_000),
    st.integers(1, 12),
    st.integers(0, 80) | st.none(),
)
def test_ending_channels_keeps_runs_exactly_once_after_a_crash(protocol, seed, every, crash):
    job = absnb.word_count(sink="two-phase-commit")
    stepper = run_with_crash(
        lambda: absnb.World(
            absnb.word_count(sink="two-phase-commit"), protocol, checkpoint_interval=every
        ),
        lambda at: EndingScheduler(seed=seed, crash_at=at),
        crash,
    )
    world = stepper.world
    assert world.is_finished()
    assert world.uncommitted() == 0
    assert world.output() == reference_output(job)
    assert all(world.tasks[t].ended for t in job.graph.tasks_of("sink"))


@settings(max_examples=60, **SETTINGS)
@given(st.integers(0, 10_000), st.integers(1, 12), st.integers(0, 80) | st.none())
def test_at_least_once_with_ended_channels_loses_nothing(seed, every, crash):
    job = absnb.word_count()
    stepper = run_with_crash(
        lambda: absnb.World(job, "at-least-once", checkpoint_interval=every),
        lambda at: EndingScheduler(seed=seed, crash_at=at),
        crash,
    )
    expected = reference_output(job)
    got = stepper.world.output()
    assert set(expected) <= set(got)


@settings(max_examples=60, **SETTINGS)
@given(st.sampled_from(["abs", "unaligned", "at-least-once"]), st.integers(0, 10_000))
def test_every_message_on_a_channel_is_in_the_trace_as_sent(protocol, seed):
    # What the space-time diagram draws from: every message that went on a channel is in the
    # event.sent of its step (the steps in which ended tasks join a checkpoint included).
    from collections import Counter

    job = absnb.word_count()
    world = absnb.World(job, protocol, checkpoint_interval=3)
    stepper = absnb.Stepper(world, EndingScheduler(seed=seed), history=False)
    stepper.run()
    assert any(type(e.action) is EndInput for e in stepper.trace)
    sent: Counter = Counter()
    arrived: Counter = Counter()
    for e in stepper.trace:
        sent.update((c, repr(m)) for c, m in e.sent)
        if type(e.action) is Deliver:
            arrived[(e.action.channel, repr(e.message))] += 1
    left = Counter((c, repr(m)) for c, q in stepper.world.channels.items() for m in q)
    assert sent == arrived + left


@pytest.mark.parametrize(
    "protocol",
    ["abs", "abs-cyclic", "chandy-lamport", "synchronous", "unaligned", "abs-timeout"],
)
def test_the_explorer_reaches_ends_of_input_and_every_invariant_holds(protocol):
    # With ends=True the explorer offers a finished sender's EndInput at every step where it
    # may, as the Spark runtime ends every run. Chandy-Lamport, Algorithm 2 and the
    # synchronous baseline count an ended channel as carrying the barrier they wait for
    # (absnb.protocols.ended); before they did, a snapshot triggered after an end deadlocked.
    from absnb.sim.explore import explore, feasible_snapshots, no_deadlock, output_is_exactly_once

    job = absnb.word_count(lines=[["a"], ["b"]], counters=1, sinks=1)
    timeout = {"alignment_timeout": 2} if protocol == "abs-timeout" else {}
    world = absnb.World(job, "abs" if timeout else protocol, max_checkpoints=1, **timeout)
    ended = []

    def saw(world, event):
        if type(event.action) is EndInput:
            ended.append(event.action.channel)

    result = explore(
        world,
        [feasible_snapshots, saw],
        [no_deadlock, output_is_exactly_once(reference_output(job))],
        ends=True,
    )
    assert result.ok, str(result)
    assert result.complete
    assert set(ended) == set(job.graph.channels)  # every channel ends on some path
    without = explore(world, [feasible_snapshots], [no_deadlock])
    assert without.states < result.states  # the ends are states the plain search never sees


def test_ends_are_offered_only_when_asked():
    world = absnb.World(absnb.word_count(lines=[["a"], ["b"]], counters=1, sinks=1), "abs")
    source = world.graph.task("source[0]")
    finish_source(world, source)
    offered = world.enabled_actions(ends=True)
    assert [a for a in offered if type(a) is EndInput] == [
        EndInput(c) for c in world.graph.outputs[source]
    ]
    assert not any(type(a) is EndInput for a in world.enabled_actions())
    assert all(world.is_enabled(a) for a in offered)


@pytest.mark.parametrize("protocol", ["abs-cyclic", "synchronous"])
def test_a_loop_head_cut_off_from_its_source_joins_checkpoints_triggered_later(protocol):
    # The head of a loop never has all its inputs ended while a number still circles: the
    # back-edge stays open. It is cut off all the same once its source's input ended, since
    # the back-edge's barrier comes only after its own (Alg. 2 logs it, does not align on
    # it); before it joined, a checkpoint triggered after the source ended deadlocked.
    from absnb.sim.explore import explore, feasible_snapshots, no_deadlock, output_is_exactly_once

    job = absnb.cyclic([2])
    world = absnb.World(job, protocol, max_checkpoints=2)
    head = world.tasks[job.graph.task("head")]
    assert head.awaited == (job.graph.channel("source->head"),)
    result = explore(
        world,
        [feasible_snapshots],
        [no_deadlock, output_is_exactly_once(reference_output(job))],
        ends=True,
    )
    assert result.ok, str(result)
    assert result.complete
