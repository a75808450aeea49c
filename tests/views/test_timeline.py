"""The space-time diagram (absnb.views.timeline): arrows, cuts, crashes and the figure."""

from __future__ import annotations

import base64
import itertools
from collections import Counter
from xml.etree import ElementTree

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import absnb
from absnb.core.format import show_message
from absnb.core.snapshot import GlobalSnapshot
from absnb.sim.actions import Crash, Deliver, Recover, Transfer, TriggerCheckpoint
from absnb.views.cut import Cut, classify, offending, snapshot_cut, snapshot_cuts
from absnb.views.diagram import Diagram
from absnb.views.simulated import simulated
from absnb.views.strokes import CutLine, Point, Stroke
from absnb.views.svg import OFFENDING
from absnb.views.timeline import (
    Arrow,
    CrashPoint,
    SnapshotPoint,
    checkpoint_cuts,
    completion_steps,
    crash_steps,
    layout,
    message_arrows,
    recovery_steps,
    show_timeline,
    snapshot_points,
    space_time,
)
from absnb.views.timeline_static import timeline_svg
from tests.sim.crashes import run_with_crash

SVG = "{http://www.w3.org/2000/svg}"

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
    drawn = simulated(s.trace, s.world)
    assert snapshot_points(drawn) == [SnapshotPoint(A, 1, 1), SnapshotPoint(B, 5, 1)]
    assert checkpoint_cuts(drawn) == {1: {A: 1, B: 5}}
    assert completion_steps(drawn) == {1: 8}


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
    assert crash_steps(simulated(s.trace, s.world)) == [CrashPoint(9, B)]
    [r] = recovery_steps(simulated(s.trace, s.world))
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


# -- the cut drawn as a cut: geometry, classes, SVG ------------------------------------------
def bank_run(seed: int, accounts: int = 2, steps: int | None = None) -> absnb.Stepper:
    """A seeded Chandy-Lamport bank run with transfers and periodic snapshots."""
    names = {"A": 10_000, "B": 5_000, "C": 8_000, "D": 2_000}
    job = absnb.bank_transfer(
        accounts=dict(list(names.items())[:accounts]), transfers=8 * accounts, seed=seed
    )
    s = absnb.Stepper(
        absnb.World(job, "chandy-lamport", checkpoint_interval=7),
        absnb.RandomScheduler(seed=seed),
        history=False,
    )
    s.run(steps)
    return s


def px_crossings(d: Diagram, stroke: Stroke, line: CutLine, samples: int = 600) -> list[int]:
    """Signed crossings (+1 from the left of the cut to its right) of a stroke with the
    cut line, found by walking along the stroke in pixels and comparing with the cut's x
    at the same height (independent of the layout's own bookkeeping)."""
    (xs, ys), (xe, ye) = d.scale.px(stroke.start), d.scale.px(stroke.end)
    pts = [d.scale.px(p) for p in line.points]
    signs = []
    for k in range(samples + 1):
        t = 0.001 + 0.998 * k / samples
        x, y = xs + (xe - xs) * t, ys + (ye - ys) * t
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            if y0 <= y <= y1:
                cut_x = x0 + (x1 - x0) * (y - y0) / (y1 - y0)
                break
        if x != cut_x:
            signs.append(1 if x > cut_x else -1)
    return [b for a, b in itertools.pairwise(signs) if a != b]


def records_before(trace: list, task: absnb.TaskId, step: float) -> tuple[Counter, Counter]:
    """Records ``task`` sent and received (by channel) in steps before ``step``: counted
    from the events, independently of the diagram."""
    sent: Counter = Counter()
    received: Counter = Counter()
    for e in trace:
        if e.step >= step:
            break
        for c, m in e.sent:
            if c.src == task and type(m) is not absnb.Marker:
                sent[c] += 1
        delivery = type(e.action) is Deliver and e.action.channel.dst == task
        if delivery and type(e.message) is not absnb.Marker:
            received[e.action.channel] += 1
    return sent, received


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), accounts=st.sampled_from([2, 4]))
def test_every_event_before_a_snapshot_point_lies_left_of_its_cut(seed: int, accounts: int) -> None:
    s = bank_run(seed, accounts)
    d = layout(s.trace, s.world)
    recorded = {(t, n): e.step for e in s.trace for t, n in e.snapshots}
    assert d.cuts, "the run took no snapshot"
    for line in d.cuts:
        for lane, task in enumerate(d.tasks):
            at = recorded[(task, line.cut.checkpoint_id)]
            cut_x, _ = d.scale.px(line.points[lane])
            for e in s.trace:
                if e.task != task or e.step == at:
                    continue
                x, _ = d.scale.px(Point(e.step, lane))
                assert (x < cut_x) == (e.step < at), (str(task), e.step, at)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), accounts=st.sampled_from([2, 4]))
def test_channel_state_is_what_crosses_each_cut_forward(seed: int, accounts: int) -> None:
    s = bank_run(seed, accounts)
    d = layout(s.trace, s.world)
    snapshots = {g.checkpoint_id: g for g in s.world.snapshots}
    for line in d.cuts:
        if line.cut.status != "completed":
            continue
        crossing: Counter = Counter()
        for stroke in d.strokes:
            if stroke.arrow.kind != "record" or stroke.state == "lost":
                continue
            signs = px_crossings(d, stroke, line)
            if accounts == 2:  # neighbouring lanes: never more than one crossing
                assert len(signs) <= 1
            assert sum(signs) in (0, 1)  # never net backwards: the cut is consistent
            if sum(signs) == 1:
                crossing[str(stroke.arrow.channel), stroke.arrow.label] += 1
        recorded = snapshots[line.cut.checkpoint_id].channel_values()
        expected = Counter((c, f"{v:,}") for c, values in recorded.items() for v in values)
        assert crossing == expected


def test_seed_001_channel_state_is_labelled_on_the_crossing() -> None:
    s = run(SEED_001)
    d = layout(s.trace, s.world)
    [line] = d.cuts
    labelled = sorted(lb.text for lb in d.labels if lb.kind == "channel state")
    assert labelled == ["channel state 1,000", "channel state 2,000"]
    for stroke in d.strokes:
        signs = px_crossings(d, stroke, line) if stroke.arrow.kind == "record" else []
        state = stroke.arrow.kind == "record" and stroke.arrow.channel == BA
        assert signs == ([1] if state else []), stroke.arrow.describe()


def test_in_flight_messages_are_dashed_and_end_at_the_current_step() -> None:
    s = run(SEED_001[:5])  # marker 1 on A->B; 1,000 and 2,000 on B->A
    d = layout(s.trace, s.world)
    flying = [f for f in d.strokes if f.state == "in flight"]
    held = sorted((str(c), show_message(m)) for c, q in s.world.channels.items() for m in q)
    assert sorted((str(f.arrow.channel), f.arrow.label) for f in flying) == held
    for f in flying:
        assert f.end.x == s.world.clock == 5
        lo, hi = sorted((d.lane(f.arrow.src), d.lane(f.arrow.dst)))
        assert lo < f.end.y < hi  # not at the receiver: it has not arrived
    # B->A holds 1,000 then 2,000: the head is drawn nearer to A (lane 0)
    ys = {f.arrow.label: f.end.y for f in flying if f.arrow.channel == BA}
    assert ys["1,000"] < ys["2,000"]
    svg = timeline_svg(s.trace, s.world)
    root = ElementTree.fromstring(svg)
    for line in root.iter(f"{SVG}line"):
        title = line.find(f"{SVG}title")
        if title is not None:
            dashed = "stroke-dasharray" in line.attrib
            flies = title.text.endswith("in flight")
            assert dashed == flies or "marker" in title.text, title.text
            if flies:
                assert float(line.attrib["x2"]) == pytest.approx(
                    d.scale.px(Point(5, 0))[0], abs=0.1
                )
    fig = space_time(s.trace, s.world)
    for trace in fig.data:
        if "in flight" in (trace.name or ""):
            assert trace.line.dash == "dash"
            assert list(trace.x[1::3]) == [5] * (len(trace.x) // 3)


def test_a_cut_by_hand_flags_exactly_the_offending_message() -> None:
    s = run(SEED_001)
    # A's state before step 0 (10,000, before it sent 1,000); B's before step 5 (3,000,
    # after the 1,000 arrived): B received what A never sent.
    cut = Cut.before({A: 0, B: 5}, label="inconsistent")
    arrows = message_arrows(s.trace, s.world)
    assert [a.describe() for a in offending(arrows, cut)] == [
        "A->B: 1,000 sent at 0, delivered at 4"
    ]
    d = layout(s.trace, s.world, cuts=[cut])
    assert [st.arrow.label for st in d.strokes if st.emphasis == "offending"] == ["1,000"]
    [bad] = [st for st in d.strokes if st.emphasis == "offending"]
    assert px_crossings(d, bad, d.cuts[0]) == [-1]  # crosses the cut backwards
    assert [lb.text for lb in d.labels if lb.kind == "offending"] == [
        "✗ 1,000: received before, sent after"
    ]
    svg = timeline_svg(s.trace, s.world, cuts=[cut])
    highlighted = [
        line.find(f"{SVG}title").text  # type: ignore[union-attr]
        for line in ElementTree.fromstring(svg).iter(f"{SVG}line")
        if line.attrib["stroke"] == OFFENDING and line.find(f"{SVG}title") is not None
    ]
    assert highlighted == ["A->B: 1,000 sent at 0, delivered at 4"]
    # the run's own cut of checkpoint 1 has no offending message
    [own] = snapshot_cuts(s.trace, s.world)
    assert offending(arrows, own) == []
    with pytest.raises(ValueError, match="step -1"):
        Cut.before({A: -1, B: 0})
    with pytest.raises(KeyError, match="no position for task B"):
        layout(s.trace, s.world, cuts=[Cut.before({A: 0})])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_offending_messages_of_any_cut_by_hand(seed: int, data: st.DataObject) -> None:
    s = bank_run(seed, 2, steps=30)
    steps = {t: data.draw(st.integers(0, s.world.clock), label=str(t)) for t in s.world.graph.tasks}
    cut = Cut.before(steps)
    arrows = message_arrows(s.trace, s.world)
    bad = offending(arrows, cut)
    # FIFO channels: the receiver got more records than the sender had sent at the cut
    # exactly when the cut is inconsistent, and by that many
    for c in s.world.graph.channels:
        sent, _ = records_before(s.trace, c.src, steps[c.src])
        _, received = records_before(s.trace, c.dst, steps[c.dst])
        assert sum(a.channel == c for a in bad) == max(0, received[c] - sent[c])
    d = layout(s.trace, s.world, cuts=[cut])
    for stroke in d.strokes:
        if stroke.arrow.kind == "record" and stroke.state != "lost":
            net = sum(px_crossings(d, stroke, d.cuts[0]))
            assert (net == -1) == (stroke.emphasis == "offending")


def test_svg_is_the_same_bytes_for_the_same_seed() -> None:
    one, two, other = (bank_run(seed, 4) for seed in (3, 3, 4))
    svg = timeline_svg(one.trace, one.world)
    assert svg == timeline_svg(two.trace, two.world)
    assert svg != timeline_svg(other.trace, other.world)
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert root.attrib["width"] == "1024"
    sizes = [float(t.attrib["font-size"]) for t in root.iter(f"{SVG}text")]
    assert min(sizes, default=0) >= 18


@pytest.mark.parametrize("width", [1024, 1280, 1920])
@pytest.mark.parametrize(
    "make",
    [
        lambda: bank_run(5, 4),
        lambda: bank_run(11, 2),
        lambda: absnb.Stepper(
            absnb.World(absnb.word_count(), "abs", checkpoint_interval=3),
            absnb.RandomScheduler(seed=2, crash_at=25),
        ),
    ],
)
def test_labels_never_overlap(make: object, width: int) -> None:
    s = make()  # type: ignore[operator]
    if not s.trace or s.world.clock < 40:
        s.run()
    d = layout(s.trace, s.world, width=width)
    kinds = Counter(lb.kind for lb in d.labels)
    assert kinds["checkpoint"] == len(d.cuts)  # every cut is named
    for a, b in itertools.combinations(d.labels, 2):
        assert not a.box.overlaps(b.box), (a.text, b.text)
    for lb in d.labels:
        assert d.scale.left - 0.01 <= lb.box.x0, lb.text
        assert lb.box.x1 <= width - d.scale.right + 0.01, lb.text
        assert 0 <= lb.box.y0 < lb.box.y1 <= d.height, lb.text


def test_plotly_and_svg_draw_the_same_geometry() -> None:
    s = run([*SEED_001[:7], Transfer(A, B, 500)])
    d = layout(s.trace, s.world)
    fig = space_time(s.trace, s.world)
    drawn = set()
    for trace in fig.data:
        if trace.mode == "lines+markers":
            xs, ys = list(trace.x), list(trace.y)
            drawn |= {(xs[i], ys[i], xs[i + 1], ys[i + 1]) for i in range(0, len(xs), 3)}
    assert drawn == {(st.start.x, st.start.y, st.end.x, st.end.y) for st in d.strokes}
    [cuts] = [t for t in fig.data if t.name == "pending cuts"]
    assert list(cuts.x)[:-1] == [p.x for p in d.cuts[0].points]


def test_show_timeline_carries_plotly_and_a_picture_for_untrusted_notebooks() -> None:
    s = run(SEED_001)
    bundle = show_timeline(s.trace, s.world, title="seed 001")._repr_mimebundle_()
    assert bundle["application/vnd.plotly.v1+json"]["layout"]["title"]["text"] == "seed 001"
    page = bundle["text/html"]
    assert page.startswith('<img class="absnb-picture"')
    encoded = page.split('src="data:image/svg+xml;base64,', 1)[1].split('"', 1)[0]
    assert base64.b64decode(encoded).decode() == timeline_svg(s.trace, s.world, title="seed 001")
    assert bundle["text/plain"] == "<space-time diagram: seed 001>"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_a_snapshot_composed_from_parts_of_different_checkpoints(
    seed: int, data: st.DataObject
) -> None:
    s = bank_run(seed, 4)
    done = s.world.snapshots
    assume(len(done) >= 2)
    parts = {
        t: data.draw(st.sampled_from(done), label=str(t)).tasks[t] for t in s.world.graph.tasks
    }
    mixed = GlobalSnapshot(0, done[0].job, done[0].fingerprint, parts)
    cut = snapshot_cut(mixed, s.trace)
    bad = offending(message_arrows(s.trace, s.world), cut)
    # the tasks' own counts: a receiver that had consumed more records on a channel than
    # the sender had sent at its part's moment received messages sent after the cut
    for c in s.world.graph.channels:
        beyond = parts[c.dst].received.get(c, 0) - parts[c.src].sent.get(c, 0)
        assert sum(a.channel == c for a in bad) == max(0, beyond), str(c)
    same = snapshot_cut(done[0], s.trace)
    assert same.positions == snapshot_cuts(s.trace, s.world)[0].positions
    assert offending(message_arrows(s.trace, s.world), same) == []
    with pytest.raises(ValueError, match="never records"):
        snapshot_cut(mixed, s.trace[:0])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), crash=st.integers(10, 60))
def test_crossings_net_out_to_the_class_of_each_message(seed: int, crash: int) -> None:
    """Word count has six lanes, so messages pass over other tasks' lanes: whatever the
    passes, forward minus backward crossings is the message's class, exactly one crossing
    is the genuine one for channel state or an offending message, and the others pair up
    as hops."""
    s = run_with_crash(
        lambda: absnb.World(absnb.word_count(), "abs", checkpoint_interval=4),
        lambda at: absnb.RandomScheduler(seed=seed, crash_at=at),
        crash,
    )
    arrows = message_arrows(s.trace, s.world)
    tasks = s.world.graph.tasks
    by_hand = Cut.before({t: (seed + 7 * i) % s.world.clock for i, t in enumerate(tasks)})
    cuts = [*snapshot_cuts(s.trace, s.world), by_hand]
    d = layout(s.trace, s.world, cuts=cuts)
    expected = {"channel state": 1, "offending": -1}
    per: dict[tuple[int, int], list] = {}
    for c in d.crossings:
        per.setdefault((c.cut, c.stroke), []).append(c)
    for ci, line in enumerate(d.cuts):
        for si, stroke in enumerate(d.strokes):
            if stroke.arrow.kind != "record" or stroke.state == "lost":
                continue
            found = per.get((ci, si), [])
            net = sum(1 if c.forward else -1 for c in found)
            assert net == expected.get(classify(stroke.arrow, line.cut), 0)
            assert sum(c.genuine for c in found) == abs(net)
            assert (len(found) - abs(net)) % 2 == 0
            assert sum(px_crossings(d, stroke, line)) == net
    assert len(arrows) == len(d.strokes)


def test_the_teaching_diagrams_render_as_svg_documents() -> None:
    from absnb.experiments.diagram_render import teaching_svgs

    svgs = teaching_svgs()
    assert sorted(svgs) == [
        "four_accounts",
        "inconsistent_cut",
        "seed_001_step_7",
        "word_count_crash",
    ]
    for svg in svgs.values():
        assert ElementTree.fromstring(svg).tag == f"{SVG}svg"
    assert "✗ 1,000: received before, sent after" in svgs["inconsistent_cut"]
    assert "sink[0] crashes" in svgs["word_count_crash"]


def test_an_end_of_input_is_drawn_as_a_control_message_and_named() -> None:
    from absnb.sim.actions import Emit, EndInput

    job = absnb.word_count()
    s0 = job.graph.tasks_of("source")[0]
    stepper = absnb.Stepper(absnb.World(job, "abs", checkpoint_interval=1_000))
    while stepper.world.is_enabled(Emit(s0)):
        stepper.step(Emit(s0))
    for c in job.graph.outputs[s0]:
        stepper.step(EndInput(c))
    for c in job.graph.outputs[s0]:  # the words, then the end behind them
        while stepper.world.is_enabled(Deliver(c)):
            stepper.step(Deliver(c))
    arrows = message_arrows(stepper.trace, stepper.world)
    ends = [a for a in arrows if a.kind == "end"]
    assert [(a.channel, a.label) for a in ends] == [
        (c, "end of input") for c in job.graph.outputs[s0]
    ]
    assert all(a.received_step is not None for a in ends)
    assert {a.kind for a in arrows} == {"record", "end"}  # words stay records
    names = {t.name for t in space_time(stepper.trace, stepper.world).data}
    assert {"records", "ends of input"} <= names
    svg = timeline_svg(stepper.trace, stepper.world)
    assert ">end of input</text>" in svg  # the legend names it


def test_each_kind_of_control_message_has_its_own_kind() -> None:
    from absnb.core.messages import (
        CancelCheckpointMarker,
        CheckpointBarrier,
        EndOfInput,
        Marker,
        Record,
    )
    from absnb.views.timeline import message_kind

    assert message_kind(CheckpointBarrier(1)) == "barrier"
    assert message_kind(Marker(1)) == "marker"
    assert message_kind(CancelCheckpointMarker(1)) == "cancel"
    assert message_kind(EndOfInput()) == "end"
    assert message_kind(Record("to")) == "record"
