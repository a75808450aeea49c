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

from collections.abc import Sequence
from dataclasses import dataclass

from absnb.core.ids import TaskId
from absnb.i18n import gettext as _
from absnb.views.arrows import (
    CrashPoint,
    RecoveryPoint,
    crash_steps,
    recovery_steps,
    run_arrows,
)
from absnb.views.cut import Cut, classify, completed_cuts, run_cuts
from absnb.views.drawn_run import DrawnRun
from absnb.views.labels import CHAR_EM, LABEL_PX, Box, Label, Placer, around
from absnb.views.run_layers import (
    BUCKET,
    COORDINATOR_PX,
    GAP_PX,
    RunLayers,
    layers_of,
    quiet_gaps,
    ticks,
)
from absnb.views.strokes import (
    Crossing,
    CutLine,
    Point,
    Stroke,
    all_crossings,
    message_strokes,
)

WIDTH = 1024
"""Default width of the diagram in pixels: a notebook's output area in a 1280 px wide
JupyterLab window holds it without scaling it down, so labels stay at 18 px."""
LANE_PX = 20
TITLE_PX = 24
MAX_STATE_LABELS = 8
"""Channel-state labels beyond this many are left out (the messages stay emphasised)."""


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
    gaps: tuple[tuple[float, float], ...] = ()
    """A real run's quiet stretches, each drawn :data:`~absnb.views.run_layers.GAP_PX` wide."""
    seconds: bool = False
    """Time in seconds (a real run's), not in steps."""

    def px(self, p: Point) -> tuple[float, float]:
        if self.seconds:
            return self.x(p.x), self.top + p.y * self.gap
        span = max(self.last - self.first, 1.0)
        x = self.left + (p.x - self.first) / span * (self.width - self.left - self.right)
        return x, self.top + p.y * self.gap

    def x(self, t: float) -> float:
        """A real run's time in pixels: linear, each quiet stretch squeezed."""
        busy = (self.last - self.first) - sum(b - a for a, b in self.gaps)
        inner = self.width - self.left - self.right - GAP_PX * len(self.gaps)
        per_second = inner / max(busy, 1e-6)
        x = self.left + (t - self.first) * per_second
        for a, b in self.gaps:
            if t <= a:
                break
            inside = min(t, b) - a
            x += -inside * per_second + GAP_PX * inside / (b - a)
        return x

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
    layers: RunLayers | None = None
    """A real run's ticks, bands, dots, counts and rates (None for a simulated run)."""

    def lane(self, task: TaskId) -> int:
        return self.tasks.index(task)


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
    seconds = run.unit == "s"
    if cuts is None:
        cuts = run_cuts(run, run.now)
        cuts = completed_cuts(cuts, tasks) if seconds else cuts
    first, now = _steps_shown(run, cuts)
    strokes = [] if seconds else message_strokes(run_arrows(run), lanes, now, cuts)
    lines = tuple(
        CutLine(c, tuple(Point(c.positions[t], float(i)) for i, t in enumerate(tasks)))
        for c in cuts
    )
    crossings = all_crossings(strokes, lines)
    crashes = tuple(crash_steps(run))
    recoveries = tuple(recovery_steps(run))

    # Labels: checkpoint names in rows above the top lane, then everything else.
    axis = _("coordinator") if seconds else "step"
    left = 24 + max(len(str(t)) * LANE_PX for t in (*tasks, axis)) * CHAR_EM + 16
    right = 40.0
    quiet = seconds and not run.close_up
    gaps = quiet_gaps([r.time for r in run.rows], first, now) if quiet else ()
    row_of = _cut_rows(lines, Scale(first, now, width, left, right, 0.0, 1.0, gaps, seconds))
    top = 56 + ROW_PX * (max(row_of, default=0) + 2)
    gap = 170.0 if len(tasks) <= 2 else 120.0 if len(tasks) <= 4 else 90.0
    if seconds:  # room for the coordinator's lane above the checkpoints' names
        top += COORDINATOR_PX
    scale = Scale(first, now, width, left, right, top, gap, gaps, seconds)
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
    layers = None
    if seconds:
        rates = not run.close_up or now - first >= 20 * BUCKET  # a close up of a few buckets: none
        coordinator = (56 + LABEL_PX - top) / gap  # above the rows of checkpoint names
        lanes_of = {str(t): i for i, t in enumerate(tasks)}
        layers = layers_of(run.rows, lanes_of, scale.x, coordinator, rates)
        _place_counts(placer, scale, layers)
        _place_seconds(placer, scale, tick_y)
    else:
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
        layers,
    )


def _place_steps(placer: Placer, scale: Scale, first: float, now: float, tick_y: float) -> None:
    """The step numbers of the time axis."""
    for step in _ticks(first, now, scale):
        x, _y = scale.px(Point(step, 0))
        placer.place(f"{step:g}", "step", [(x, tick_y)])


ROW_PX = LABEL_PX * 1.6
"""The height of one row of checkpoint names above the top lane."""


def _steps_shown(run: DrawnRun, cuts: Sequence[Cut]) -> tuple[float, float]:
    """The first and the last step the diagram shows: the run's, widened to every
    task's point of every cut (half a step before it; a real run's, to it)."""
    first, before = run.first, 0.5 if run.unit == "step" else 0.0
    for cut in cuts:
        for t in run.tasks:
            first = min(first, cut.position(t) - before)
    return first, run.now


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


def _place_seconds(placer: Placer, scale: Scale, tick_y: float) -> None:
    """A real run's time axis: what each quiet stretch lasted, then round seconds."""
    for a, b in scale.gaps:
        x = (scale.x(a) + scale.x(b)) / 2
        placer.place(f"≈{b - a:.1f} s", "gap", [(x, tick_y)])
    for at in ticks(scale.first, scale.last, scale.gaps):
        placer.place(f"{at:.6g} s", "step", [(scale.x(at), tick_y)])


def _place_counts(placer: Placer, scale: Scale, layers: RunLayers) -> None:
    """↷n and P/C/A over their lanes."""
    for text, t, y in layers.counts:
        x, ly = scale.px(Point(t, y))
        kind = "overtaken" if text.startswith("↷") else "transaction"
        placer.place(text, kind, [(x, ly - 22), (x, ly - 44), (x, ly + 22)])


def _place_failures(
    placer: Placer,
    scale: Scale,
    lanes: dict[TaskId, int],
    crashes: Sequence[CrashPoint],
    recoveries: Sequence[RecoveryPoint],
    tick_y: float,
) -> None:
    """A label by each crash, and one under the time axis for each recovery."""
    crashed = _("✗ {task} fails") if scale.seconds else _("{task} crashes")
    for crash in crashes:
        x, y = scale.px(Point(crash.step, lanes[crash.task]))
        placer.place(crashed.format(task=crash.task), "crash", around(x, y, 6))
    for rec in recoveries:
        x, _y = scale.px(Point(rec.step, 0))
        what = (
            _("restored checkpoint {n}").format(n=rec.checkpoint_id or _("none"))
            if scale.seconds
            else _("recover from checkpoint {n}").format(n=rec.checkpoint_id)
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
