"""The messages of a space-time diagram as drawn, and where they cross its cuts.

One straight stroke per message, from its send to its delivery (or half way, for one in
flight or discarded), emphasised by its class with respect to the cuts drawn; every place
a record's stroke crosses a cut line, genuine or a pass the same message undoes (see
:mod:`absnb.views.diagram`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from absnb.core.ids import TaskId
from absnb.views.arrows import Arrow
from absnb.views.cut import Cut, classify, side

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


def message_strokes(
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


def all_crossings(strokes: Sequence[Stroke], lines: Sequence[CutLine]) -> list[Crossing]:
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
