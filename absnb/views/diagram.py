"""The geometry of the space-time diagram, which both renderers draw.

:func:`layout_run` turns a run's event rows (a :class:`~absnb.views.drawn_run.DrawnRun`;
:func:`absnb.views.timeline.layout` takes a stepper's trace and world) and a list of cuts
into a :class:`Diagram`: one lane per task (time to the right), one straight stroke per
message, one line per cut through every task's point, every place a message crosses a cut,
and the labels, placed in pixels so that none overlaps another. :mod:`absnb.views.timeline_static`
draws it as an SVG document, :func:`absnb.views.timeline.space_time` as a plotly figure.

The cut is drawn as a function of the lane: it meets each task's lane exactly once, at the
task's point, so every event of a task before its point lies left of the cut and every
later one right of it. A message's *net* crossing of the cut (forward minus backward) is
then always what :func:`~absnb.views.cut.classify` says: +1 for channel state, -1 for an
offending message, 0 otherwise. A message between neighbouring lanes crosses at most once.
One that spans several lanes may pass over a lane on that task's other side of the cut (it
was sent after that task recorded its state, say); it then crosses the cut and crosses
back. Those pairs are kept as ``genuine=False`` crossings, which the SVG draws as a hop
of the message over the cut.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from absnb.core.ids import TaskId
from absnb.i18n import gettext as _
from absnb.views.arrows import (
    Arrow,
    CrashPoint,
    RecoveryPoint,
    crash_steps,
    recovery_steps,
    run_arrows,
)
from absnb.views.cut import Cut, classify, run_cuts, side
from absnb.views.drawn_run import DrawnRun
from absnb.views.labels import CHAR_EM, LABEL_PX, Box, Label, Placer, around

WIDTH = 1024
"""Default width of the diagram in pixels: a notebook's output area in a 1280 px wide
JupyterLab window holds it without scaling it down, so labels stay at 18 px."""
LANE_PX = 20
TITLE_PX = 24
MAX_STATE_LABELS = 8
"""Channel-state labels beyond this many are left out (the messages stay emphasised)."""

Emphasis = Literal["", "channel state", "offending"]


class Point(NamedTuple):
    """A point in diagram coordinates: ``x`` a step, ``y`` a lane (0: the top task)."""

    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Stroke:
    """One message as drawn: a straight segment from its send to its delivery.

    ``state`` is ``delivered``, ``in flight`` (the segment ends at the current step half
    way to the receiver's lane: it has not arrived) or ``lost`` (discarded by a recovery;
    it ends half way at the recovery). ``emphasis`` is the strongest class the message has
    with respect to any cut drawn: ``offending`` over ``channel state``.
    """

    arrow: Arrow
    start: Point
    end: Point
    state: Literal["delivered", "in flight", "lost"]
    emphasis: Emphasis


class Crossing(NamedTuple):
    """A message stroke crossing a cut line at ``at``.

    ``forward``: from the before side to the after side. ``genuine``: the crossing that
    makes the message channel state (or offending); False for a pass over the cut that
    the same message undoes.
    """

    cut: int
    stroke: int
    at: Point
    forward: bool
    genuine: bool


@dataclass(frozen=True, slots=True)
class CutLine:
    """A cut as drawn: one point per lane, top to bottom, joined by straight pieces."""

    cut: Cut
    points: tuple[Point, ...]


@dataclass(frozen=True, slots=True)
class Scale:
    """Diagram coordinates to pixels (and back)."""

    first: float
    last: float
    width: float
    left: float
    right: float
    top: float
    gap: float

    def px(self, p: Point) -> tuple[float, float]:
        span = max(self.last - self.first, 1.0)
        x = self.left + (p.x - self.first) / span * (self.width - self.left - self.right)
        return x, self.top + p.y * self.gap

    def point(self, x: float, y: float) -> Point:
        span = max(self.last - self.first, 1.0)
        step = self.first + (x - self.left) / (self.width - self.left - self.right) * span
        return Point(step, (y - self.top) / self.gap)


@dataclass(frozen=True, slots=True)
class Diagram:
    """Everything both renderers draw, computed once."""

    title: str
    tasks: tuple[TaskId, ...]
    first: float
    now: float
    strokes: tuple[Stroke, ...]
    cuts: tuple[CutLine, ...]
    crossings: tuple[Crossing, ...]
    crashes: tuple[CrashPoint, ...]
    recoveries: tuple[RecoveryPoint, ...]
    bands: tuple[tuple[float, float, TaskId], ...]
    labels: tuple[Label, ...]
    reach: tuple[float, ...]
    """How far each cut line reaches above the top lane, up to its label (pixels)."""
    scale: Scale
    height: float

    def lane(self, task: TaskId) -> int:
        return self.tasks.index(task)


def _cut_x(line: CutLine, y: float) -> float:
    """Where the cut line is at height ``y`` (between the top and the bottom lane)."""
    pts = line.points
    i = min(max(int(y), 0), len(pts) - 1)
    if i == len(pts) - 1 or y <= pts[0].y:
        return pts[i].x
    a, b = pts[i], pts[i + 1]
    return a.x + (b.x - a.x) * (y - a.y)


def _crossings(stroke: Stroke, line: CutLine, cut_index: int, stroke_index: int) -> list[Crossing]:
    """Where ``stroke`` crosses ``line``: the side is known at its two ends (from the
    steps, so ties at a task's own point follow :func:`~absnb.views.cut.side`) and
    measured where it passes every lane in between."""
    a, s, e = stroke.arrow, stroke.start, stroke.end
    cut = line.cut
    ys = [s.y]
    lo, hi = sorted((s.y, e.y))
    inner = [float(k) for k in range(int(lo) + 1, int(-(-hi // 1))) if lo < k < hi]
    ys += inner if e.y > s.y else inner[::-1]
    ys.append(e.y)

    def x_at(y: float) -> float:
        return s.x + (e.x - s.x) * (y - s.y) / (e.y - s.y)

    gaps = [x_at(y) - _cut_x(line, y) for y in ys]
    sides = [side(cut, a.src, a.sent_step, sending=True)]
    for g in gaps[1:-1]:
        sides.append("before" if g < 0 else "after" if g > 0 else sides[-1])
    if stroke.state == "delivered":
        assert a.received_step is not None
        sides.append(side(cut, a.dst, a.received_step, sending=False))
    else:
        sides.append("before" if gaps[-1] < 0 else "after")
    found: list[tuple[Point, bool]] = []
    for j in range(len(ys) - 1):
        if sides[j] == sides[j + 1]:
            continue
        g0, g1 = gaps[j], gaps[j + 1]
        t = g0 / (g0 - g1) if g0 != g1 else 0.5
        t = min(max(t, 0.0), 1.0)
        y = ys[j] + (ys[j + 1] - ys[j]) * t
        found.append((Point(x_at(y), y), sides[j] == "before"))
    net = sides[-1] != sides[0]
    out, genuine_done = [], False
    for at, forward in found:
        genuine = net and not genuine_done and forward == (sides[0] == "before")
        genuine_done = genuine_done or genuine
        out.append(Crossing(cut_index, stroke_index, at, forward, genuine))
    return out


def _strokes(
    arrows: list[Arrow], lanes: dict[TaskId, int], now: float, cuts: Sequence[Cut]
) -> list[Stroke]:
    """One stroke per message, in the order sent. A message not delivered ends half way
    or so: the head of its channel nearest the receiver, the ones queued behind it
    further back, so the picture shows the channel's FIFO order."""
    queued: dict[object, list[Arrow]] = {}
    for a in arrows:
        if a.received_step is None:
            queued.setdefault((a.channel, a.lost_step), []).append(a)
    depth = {id(a): (k, len(q)) for q in queued.values() for k, a in enumerate(q)}
    order = sorted(range(len(arrows)), key=lambda i: (arrows[i].sent_step, i))
    out = [_stroke(arrows[i], lanes, now, depth) for i in order]
    return _emphasised(out, cuts)


def _stroke(
    a: Arrow, lanes: dict[TaskId, int], now: float, depth: dict[int, tuple[int, int]]
) -> Stroke:
    """The stroke of one message, without emphasis; ``depth``: the place of each message
    not delivered in its channel's queue, and the queue's length."""
    y0, y1 = lanes[a.src], lanes[a.dst]
    start = Point(float(a.sent_step), float(y0))
    if a.received_step is not None:
        return Stroke(a, start, Point(float(a.received_step), float(y1)), "delivered", "")
    k, n = depth[id(a)]
    y = y0 + (y1 - y0) * (0.75 - 0.5 * k / n)
    if a.lost_step is not None:
        return Stroke(a, start, Point(float(a.lost_step), y), "lost", "")
    return Stroke(a, start, Point(now, y), "in flight", "")


class _Spans:
    """Which strokes (sorted by start) may cross a cut spanning some steps: only those
    overlapping its span of steps can."""

    def __init__(self, strokes: Sequence[Stroke]) -> None:
        self.starts = [s.start.x for s in strokes]
        self.longest = max(
            (s.end.x - s.start.x for s in strokes if s.state == "delivered"), default=0.0
        )
        self.open_ended = [i for i, s in enumerate(strokes) if s.state != "delivered"]

    def near(self, lo: float, hi: float) -> list[int]:
        """The indices of the strokes that may overlap steps ``lo`` to ``hi``, in order."""
        starts = self.starts
        near = range(bisect.bisect_left(starts, lo - self.longest), bisect.bisect_right(starts, hi))
        return sorted({*near, *self.open_ended})


def _emphasised(strokes: list[Stroke], cuts: Sequence[Cut]) -> list[Stroke]:
    """``strokes`` with the strongest class each message has with respect to any of
    ``cuts``: ``offending`` over ``channel state``."""
    spans = _Spans(strokes)
    strongest: dict[int, Emphasis] = {}
    for cut in cuts:
        lo, hi = min(cut.positions.values()), max(cut.positions.values())
        for i in spans.near(lo, hi):
            s = strokes[i]
            if s.start.x > hi or s.end.x < lo or strongest.get(i) == "offending":
                continue
            kind = classify(s.arrow, cut)
            if kind == "offending" or kind == "channel state":
                strongest[i] = kind
    out = list(strokes)
    for i, emphasis in strongest.items():
        s = out[i]
        out[i] = Stroke(s.arrow, s.start, s.end, s.state, emphasis)
    return out


def _ticks(first: float, now: float, scale: Scale) -> list[float]:
    """Step numbers for the time axis, at least 70 px apart, on a 1-2-5 grid."""
    per_step = scale.px(Point(first + 1, 0))[0] - scale.px(Point(first, 0))[0]
    every = next(k * 10**e for e in range(7) for k in (1, 2, 5) if k * 10**e * per_step >= 70)
    start = -(-max(first, 0.0) // every) * every
    return [start + every * i for i in range(int((now - start) // every) + 1)]


def layout_run(
    run: DrawnRun,
    *,
    cuts: Sequence[Cut] | None = None,
    title: str | None = None,
    width: float = WIDTH,
) -> Diagram:
    """The geometry of ``run`` with ``cuts`` (default: the cut of every completed or
    pending checkpoint of the run), laid out ``width`` pixels wide."""
    tasks = run.tasks
    lanes = {t: i for i, t in enumerate(tasks)}
    if cuts is None:
        cuts = run_cuts(run, run.now)
    first, now = _steps_shown(run, cuts)
    strokes = _strokes(run_arrows(run), lanes, now, cuts)
    lines = tuple(
        CutLine(c, tuple(Point(c.positions[t], float(i)) for i, t in enumerate(tasks)))
        for c in cuts
    )
    crossings = _all_crossings(strokes, lines)
    crashes = tuple(crash_steps(run))
    recoveries = tuple(recovery_steps(run))

    # Labels: checkpoint names in rows above the top lane, then everything else.
    left = 24 + max(len(str(t)) * LANE_PX for t in (*tasks, "step")) * CHAR_EM + 16
    right = 40.0
    row_of = _cut_rows(lines, Scale(first, now, width, left, right, 0.0, 1.0))
    top = 56 + ROW_PX * (max(row_of, default=0) + 2)
    gap = 170.0 if len(tasks) <= 2 else 120.0 if len(tasks) <= 4 else 90.0
    scale = Scale(first, now, width, left, right, top, gap)
    placer = Placer(left, width - right, TITLE_PX * 1.8)
    for line, row in zip(lines, row_of, strict=True):
        x, _y = scale.px(line.points[0])
        kind = "by hand" if line.cut.status == "by hand" else "checkpoint"
        placer.place(_cut_label(line), kind, [(x, top - ROW_PX * (row + 1))])
    bottom = top + gap * (len(tasks) - 1)
    if len(strokes) <= 300:  # labels keep off arrowheads and snapshot points
        marks = [scale.px(st.end) for st in strokes]
        marks += [scale.px(p) for line in lines for p in line.points]
        placer.obstacles = [Box(mx - 10, my - 10, mx + 10, my + 10) for mx, my in marks]
    tick_y = bottom + 0.3 * gap + 20
    _place_steps(placer, scale, first, now, tick_y)
    _place_failures(placer, scale, lanes, crashes, recoveries, tick_y)
    _place_crossings(placer, scale, strokes, lines, crossings)
    height = max([bottom + 60, *(lb.box.y1 for lb in placer.labels)]) + 16
    return Diagram(
        title or run.title,
        tasks,
        first,
        now,
        tuple(strokes),
        lines,
        tuple(crossings),
        crashes,
        recoveries,
        _bands(crashes, recoveries, now),
        tuple(placer.labels),
        tuple(ROW_PX * row + 18 for row in row_of),
        scale,
        height,
    )


ROW_PX = LABEL_PX * 1.6
"""The height of one row of checkpoint names above the top lane."""


def _steps_shown(run: DrawnRun, cuts: Sequence[Cut]) -> tuple[float, float]:
    """The first and the last step the diagram shows: the run's, widened to every
    task's point of every cut."""
    first = run.first
    for cut in cuts:
        for t in run.tasks:
            first = min(first, cut.position(t) - 0.5)
    return first, run.now


def _all_crossings(strokes: Sequence[Stroke], lines: Sequence[CutLine]) -> list[Crossing]:
    """Every crossing of a record's stroke with a cut line."""
    spans = _Spans(strokes)
    crossings: list[Crossing] = []
    for ci, line in enumerate(lines):
        lo = min(p.x for p in line.points)
        hi = max(p.x for p in line.points)
        for si in spans.near(lo, hi):
            s = strokes[si]
            if s.arrow.kind == "record" and s.start.x <= hi and s.end.x >= lo:
                crossings += _crossings(s, line, ci, si)
    return crossings


def _bands(
    crashes: Sequence[CrashPoint], recoveries: Sequence[RecoveryPoint], now: float
) -> tuple[tuple[float, float, TaskId], ...]:
    """For each crash, the steps from it to the next recovery (or now) and the failed task."""
    bands = []
    for c in crashes:
        ends = [r.step for r in recoveries if r.step >= c.step]
        bands.append((float(c.step), float(min(ends)) if ends else now, c.task))
    return tuple(bands)


def _cut_label(line: CutLine) -> str:
    label = line.cut.label
    if line.cut.checkpoint_id is not None and label == f"checkpoint {line.cut.checkpoint_id}":
        label = _("checkpoint {n}").format(n=line.cut.checkpoint_id)
    return label + (_(" (pending)") if line.cut.status == "pending" else "")


def _cut_rows(lines: Sequence[CutLine], probe: Scale) -> list[int]:
    """The row above the top lane of each cut's name: the first where it overlaps no
    name placed before it (``probe``: the horizontal scale)."""
    rows = Placer(probe.left, probe.width - probe.right, -float("inf"))
    row_of = []
    for line in lines:
        x, _y = probe.px(line.points[0])
        label = rows.place(_cut_label(line), "", [(x, -ROW_PX * r) for r in range(len(lines))])
        assert label is not None  # one row per cut always fits
        row_of.append(round(-label.y / ROW_PX))
    return row_of


def _place_steps(placer: Placer, scale: Scale, first: float, now: float, tick_y: float) -> None:
    """The step numbers of the time axis."""
    for step in _ticks(first, now, scale):
        x, _y = scale.px(Point(step, 0))
        placer.place(f"{step:g}", "step", [(x, tick_y)])


def _place_failures(
    placer: Placer,
    scale: Scale,
    lanes: dict[TaskId, int],
    crashes: Sequence[CrashPoint],
    recoveries: Sequence[RecoveryPoint],
    tick_y: float,
) -> None:
    """A label by each crash, and one under the time axis for each recovery."""
    for crash in crashes:
        x, y = scale.px(Point(crash.step, lanes[crash.task]))
        placer.place(_("{task} crashes").format(task=crash.task), "crash", around(x, y, 6))
    for rec in recoveries:
        x, _y = scale.px(Point(rec.step, 0))
        what = (
            _("recover from checkpoint {n}").format(n=rec.checkpoint_id)
            if rec.checkpoint_id
            else _("recover from the initial state")
        )
        placer.place(what, "recovery", [(x, tick_y + 30 * k) for k in range(1, 7)])


def _place_crossings(
    placer: Placer,
    scale: Scale,
    strokes: Sequence[Stroke],
    lines: Sequence[CutLine],
    crossings: Sequence[Crossing],
) -> None:
    """Where a message genuinely crosses a cut: every offending message first, then at
    most :data:`MAX_STATE_LABELS` channel-state messages."""
    genuine = [cr for cr in crossings if cr.genuine]
    for cr in genuine:
        s = strokes[cr.stroke]
        if s.emphasis == "offending" and classify(s.arrow, lines[cr.cut].cut) == "offending":
            px, py = scale.px(cr.at)
            placer.place(
                _("✗ {message}: received before, sent after").format(message=s.arrow.label),
                "offending",
                around(px, py, 12),
            )
    placed_states = 0
    for cr in genuine:
        if placed_states >= MAX_STATE_LABELS:
            break
        s = strokes[cr.stroke]
        if classify(s.arrow, lines[cr.cut].cut) == "channel state":
            px, py = scale.px(cr.at)
            text = _("channel state {message}").format(message=s.arrow.label)
            if placer.place(text, "channel state", around(px, py, 3)):
                placed_states += 1
