"""The space-time diagram (absnb.views.timeline): arrows, cuts, crashes and the figure."""

from __future__ import annotations

import pytest

import absnb
from absnb.sim.actions import Crash, Deliver, Recover, Transfer, TriggerCheckpoint
from absnb.sim.format import show_message
from absnb.views.timeline import (
    Arrow,
    CrashPoint,
    SnapshotPoint,
    checkpoint_cuts,
    completion_steps,
    crash_steps,
    message_arrows,
    recovery_steps,
    snapshot_points,
    space_time,
)

JOB = absnb.bank_transfer()
A, B = JOB.graph.task("A"), JOB.graph.task("B")
AB, BA = JOB.graph.channel("A->B"), JOB.graph.channel("B->A")

SEED_001 = [
    Transfer(A, B, 1000),  # 0
    TriggerCheckpoint(at=A),  # 1: A records 9,000, marker on A->B
    Transfer(B, A, 1000),  # 2
    Transfer(B, A, 2000),  # 3
    Deliver(AB),  # 4: the 1,000 reaches B
    Deliver(AB),  # 5: the marker reaches B: B records 3,000, marker on B->A
    Deliver(BA),  # 6: 1,000
    Deliver(BA),  # 7: 2,000
    Deliver(BA),  # 8: the marker: checkpoint 1 complete
]
CRASH = [Crash(B), Recover()]  # 9, 10


def run(actions: list, job: absnb.Job = JOB, protocol: str = "chandy-lamport") -> absnb.Stepper:
    stepper = absnb.Stepper(absnb.World(job, protocol))
    for action in actions:
        stepper.step(action)
    return stepper


def summary(arrows: list[Arrow]) -> list[tuple]:
    return [(str(a.channel), a.label, a.kind, a.sent_step, a.received_step) for a in arrows]


def assert_in_flight_matches(stepper: absnb.Stepper) -> None:
    """The arrows still in flight are exactly what the world's channels hold."""
    arrows = message_arrows(stepper.trace, stepper.world)
    for c, q in stepper.world.channels.items():
        flying = [a.label for a in arrows if a.channel == c and a.in_flight]
        assert flying == [show_message(m) for m in q], str(c)


def test_seed_001_arrows_match_sends_to_deliveries() -> None:
    s = run(SEED_001)
    arrows = message_arrows(s.trace, s.world)
    assert summary(arrows) == [
        ("A->B", "1,000", "record", 0, 4),
        ("A->B", "marker 1", "marker", 1, 5),
        ("B->A", "1,000", "record", 2, 6),
        ("B->A", "2,000", "record", 3, 7),
        ("B->A", "marker 1", "marker", 5, 8),
    ]
    assert all((a.src, a.dst) == a.channel for a in arrows)
    assert not any(a.dropped or a.restored or a.in_flight for a in arrows)
    assert arrows[0].describe() == "A->B: 1,000 sent at 0, delivered at 4"


def test_seed_001_cut_and_completion() -> None:
    s = run(SEED_001)
    assert snapshot_points(s.trace) == [SnapshotPoint(A, 1, 1), SnapshotPoint(B, 5, 1)]
    assert checkpoint_cuts(s.trace) == {1: {A: 1, B: 5}}
    assert completion_steps(s.trace) == {1: 8}


def test_in_flight_messages_have_no_delivery() -> None:
    s = run(SEED_001[:5])  # the 1,000 on A->B delivered; marker, 1,000, 2,000 in flight
    arrows = message_arrows(s.trace, s.world)
    assert [(a.label, a.received_step) for a in arrows if a.in_flight] == [
        ("marker 1", None),
        ("1,000", None),
        ("2,000", None),
    ]
    assert "in flight" in arrows[1].describe()
    assert_in_flight_matches(s)


def test_recovery_replays_the_recorded_channel_state() -> None:
    s = run(SEED_001 + CRASH)
    assert crash_steps(s.trace) == [CrashPoint(9, B)]
    [r] = recovery_steps(s.trace)
    assert (r.step, r.checkpoint_id, set(r.tasks), r.mode) == (10, 1, {A, B}, "full")
    arrows = message_arrows(s.trace, s.world)
    replayed = [a for a in arrows if a.restored]
    assert summary(replayed) == [
        ("B->A", "1,000", "record", 10, None),
        ("B->A", "2,000", "record", 10, None),
    ]
    assert all(a.in_flight for a in replayed)
    assert replayed[0].describe() == "B->A: 1,000 replayed from snapshot at 10, in flight"
    s.step(Deliver(BA))
    arrows = message_arrows(s.trace, s.world)
    assert [a.received_step for a in arrows if a.restored] == [11, None]
    assert_in_flight_matches(s)


def test_recovery_discards_messages_to_restarted_tasks() -> None:
    s = run([*SEED_001, Transfer(A, B, 500), Crash(A), Recover()])  # 9, 10, 11
    arrows = message_arrows(s.trace, s.world)
    [lost] = [a for a in arrows if a.label == "500"]
    assert (lost.sent_step, lost.received_step, lost.lost_step) == (9, None, 11)
    assert not lost.in_flight
    assert_in_flight_matches(s)


def test_trace_restoring_an_unknown_checkpoint_is_an_error() -> None:
    s = run(SEED_001 + CRASH)
    with pytest.raises(ValueError, match="no completed checkpoint 1"):
        message_arrows(s.trace, s.initial)


def test_messages_in_transit_when_the_trace_began() -> None:
    first = run(SEED_001[:4])
    s = absnb.Stepper(first.world)
    s.step(Deliver(AB))
    s.step(Deliver(AB))
    arrows = message_arrows(s.trace, s.world)
    assert summary(arrows) == [
        ("A->B", "1,000", "record", 4, 4),
        ("A->B", "marker 1", "marker", 4, 5),
        ("B->A", "marker 1", "marker", 5, None),
    ]


def test_partial_recovery_marks_dropped_duplicates() -> None:
    for seed in range(1, 20):
        s = absnb.Stepper(
            absnb.World(absnb.word_count(), "abs", checkpoint_interval=5),
            absnb.RandomScheduler(seed=seed, crash_at=30, recovery="partial"),
            history=False,
        )
        s.run()
        dropped = [e.step for e in s.trace if e.dropped]
        if dropped:
            break
    else:
        pytest.fail("no seed in 1..19 drops a duplicate")
    arrows = message_arrows(s.trace, s.world)
    assert [a.received_step for a in arrows if a.dropped] == dropped
    assert all(a.kind == "record" for a in arrows if a.dropped)
    fig = space_time(s.trace, s.world)
    [marks] = [t for t in fig.data if t.name == "dropped duplicates"]
    assert list(marks.x) == dropped


@pytest.mark.parametrize(
    ("job", "protocol"),
    [
        (absnb.word_count(), "abs"),
        (absnb.cyclic(), "abs-cyclic"),
        (absnb.bank_transfer(transfers=20), "chandy-lamport"),
    ],
)
@pytest.mark.parametrize("recovery", ["full", "partial"])
def test_in_flight_arrows_are_what_the_channels_hold(
    job: absnb.Job, protocol: str, recovery: str
) -> None:
    for seed in range(4):
        s = absnb.Stepper(
            absnb.World(job, protocol, checkpoint_interval=4),
            absnb.RandomScheduler(seed=seed, crash_at=12 + 5 * seed, recovery=recovery),
            history=False,
        )
        s.run(25)
        assert_in_flight_matches(s)
        s.run()
        assert_in_flight_matches(s)
        arrows = message_arrows(s.trace, s.world)
        delivered = sum(1 for e in s.trace if type(e.action) is Deliver)
        assert sum(a.received_step is not None for a in arrows) == delivered


def test_figure_has_the_named_traces() -> None:
    s = run([*SEED_001, *CRASH, Deliver(BA)])
    fig = space_time(s.trace, s.world, title="seed 001")
    assert [t.name for t in fig.data] == [
        "tasks",
        "records",
        "records in flight",
        "markers",
        "channel state",
        "replayed from snapshot",
        "checkpoint cuts",
        "task snapshots",
        "crashes",
        "recoveries",
    ]
    assert fig.layout.title.text == "seed 001"
    assert list(fig.layout.yaxis.ticktext) == ["A", "B"]
    [cut] = [t for t in fig.data if t.name == "checkpoint cuts"]
    assert list(cut.x) == [1, 5, None]
    assert list(cut.y) == [0, 1, None]
    assert "checkpoint 1" in [a.text for a in fig.layout.annotations]
    [records] = [t for t in fig.data if t.name == "records"]
    assert "A->B: 1,000 sent at 0, delivered at 4" in records.hovertext
    [state] = [t for t in fig.data if t.name == "channel state"]
    assert "B->A: 1,000 sent at 2, delivered at 6" in state.hovertext
    [crash] = [t for t in fig.data if t.name == "crashes"]
    assert (list(crash.x), list(crash.y)) == ([9], [1])
    # the band from the crash to the recovery, the recovery line, the line at "now"
    assert [sh.type for sh in fig.layout.shapes] == ["rect", "line", "line"]
    assert all(a.font.size >= 18 for a in fig.layout.annotations)


def test_figure_of_abs_names_barriers() -> None:
    s = absnb.Stepper(
        absnb.World(absnb.word_count(), "abs", checkpoint_interval=5),
        absnb.RandomScheduler(seed=1, crash_at=30),
    )
    s.run()
    names = {t.name for t in space_time(s.trace, s.world).data}
    assert {"records", "barriers", "checkpoint cuts", "crashes", "recoveries"} <= names
    assert not any("marker" in n for n in names)


def test_views_observe_and_are_deterministic() -> None:
    s = run(SEED_001 + CRASH)
    key, lines = s.world.key(), [e.describe() for e in s.trace]
    one = space_time(s.trace, s.world).to_json()
    two = space_time(s.trace, s.world).to_json()
    assert one == two
    assert s.world.key() == key
    assert [e.describe() for e in s.trace] == lines
    assert space_time(s.trace, s.world).layout.uirevision == "absnb-space-time"


def test_figure_of_a_5000_event_trace() -> None:
    words = ["to", "be", "or", "not", "that", "is", "the", "question"]
    lines = [" ".join(words[(i + j) % len(words)] for j in range(5)) for i in range(460)]
    job = absnb.word_count([lines[0::2], lines[1::2]])
    s = absnb.Stepper(
        absnb.World(job, "abs", checkpoint_interval=50),
        absnb.RandomScheduler(seed=7),
        history=False,
    )
    s.run()
    assert len(s.trace) >= 5000
    fig = space_time(s.trace, s.world)
    delivered = sum(1 for e in s.trace if type(e.action) is Deliver)
    assert len(message_arrows(s.trace, s.world)) == delivered
    assert len(fig.data) < 10  # one trace per kind, not one per arrow


def test_long_traces_draw_their_arrows_with_webgl_and_short_ones_with_heads() -> None:
    from absnb.views.timeline import WEBGL_ARROWS

    lines = ["to be or not to be"] * 150
    job = absnb.word_count([lines, lines])
    stepper = absnb.Stepper(
        absnb.World(job, "abs", checkpoint_interval=25),
        absnb.RandomScheduler(seed=1),
        history=False,
    )
    stepper.run(3_000)
    arrows = message_arrows(stepper.trace, stepper.world)
    delivered_records = [a for a in arrows if a.kind == "record" and a.received_step is not None]
    assert len(delivered_records) > WEBGL_ARROWS
    fig = space_time(stepper.trace, stepper.world)
    kinds = {t.name: t.type for t in fig.data}
    assert kinds["records"] == "scattergl"
    assert kinds["barriers"] == "scatter"
    short = absnb.Stepper(absnb.World(absnb.word_count(), "abs", checkpoint_interval=4))
    short.run()
    assert {t.type for t in space_time(short.trace, short.world).data} == {"scatter"}
