"""The space-time diagram of a real run, from its event log, in the simulator's look.

One lane per task (sources at the top, time in seconds to the right) under a lane for the
coordinator (checkpoints triggered and completed): barriers (and markers) arriving as
ticks, alignments as bands from the first blocked input to the snapshot, snapshots as
dots, each completed checkpoint's cut as a line through its tasks' snapshots, failures
and restores as vertical lines. Below, the records on every channel drawn as a rate
(records per second, per bucket of the log), not as arrows. Colours, font and labels are the
simulator's diagram's (:mod:`absnb.views.timeline_static`); same log, same bytes.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Collection, Sequence

from absnb.core.events import EventRow
from absnb.i18n import gettext as _
from absnb.views.diagram import WIDTH
from absnb.views.drawn_run import DrawnRun
from absnb.views.labels import wide
from absnb.views.palette import STATUS_COLOURS
from absnb.views.run_state import channels_of
from absnb.views.timeline_static import (
    CONTROL,
    CUT,
    FONT,
    LANE,
    OFFENDING,
    RECORD,
    RECOVERY,
    _n,
)

LEFT, RIGHT, TOP, GAP, FLOW = 190.0, 24.0, 64.0, 40.0, 30.0
BUCKET = 0.05


GAP_PX = 56.0
"""The width a long quiet stretch (a restart) is drawn at, whatever it lasted."""

GAP_LABEL_CLEAR = 52.0
"""How far a time tick's label stays from the centre of a gap's label (both 14 px text:
half of "≈12.3 s" and half of "15.5 s", with room between them)."""


class Scale:
    """Seconds to pixels, linear, except that every stretch with no event longer than a
    sixth of the run (Spark restarting an attempt, say) is drawn :data:`GAP_PX` wide and
    labelled with what it lasted."""

    def __init__(self, times: Sequence[float], width: float, compress: bool = True) -> None:
        times = sorted(times) or [0.0, 1.0]
        pad = max(times[-1] - times[0], 1e-3) * 0.01
        first, last = times[0] - pad, times[-1] + pad
        long = max(last - first, 1e-6) / 6
        pairs = itertools.pairwise(times) if compress else ()
        self.gaps = [(a, b) for a, b in pairs if b - a > long]
        busy = (last - first) - sum(b - a for a, b in self.gaps)
        self.per_second = (width - LEFT - RIGHT - GAP_PX * len(self.gaps)) / max(busy, 1e-6)
        self.first, self.last, self.width = first, last, width
        self.span = last - first

    def x(self, t: float) -> float:
        x = LEFT + (t - self.first) * self.per_second
        for a, b in self.gaps:
            if t <= a:
                break
            inside = min(t, b) - a
            x += -inside * self.per_second + GAP_PX * inside / (b - a)
        return x

    def ticks(self) -> list[float]:
        """Round times to label, none inside a compressed gap nor where its label
        ("≈5.2 s", centred on the gap) would run into theirs."""
        busy = self.span - sum(b - a for a, b in self.gaps)
        step = _tick(busy)
        labels = [(self.x(a) + self.x(b)) / 2 for a, b in self.gaps]
        at, out = (int(self.first / step) + 1) * step, []
        while at < self.last:
            inside = any(a < at < b for a, b in self.gaps)
            if not inside and all(abs(self.x(at) - c) >= GAP_LABEL_CLEAR for c in labels):
                out.append(at)
            at = round(at + step, 6)
        return out


def _text(x: float, y: float, text: str, size: int = 16, anchor: str = "end", **style: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in style.items())
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size}" text-anchor="{anchor}" '
        f'dominant-baseline="middle"{extra}>{html.escape(text)}</text>'
    )


def run_svg(
    run: DrawnRun,
    title: str | None = None,
    width: float = WIDTH,
    window: tuple[float, float] | None = None,
) -> str:
    """The diagram of a real run (:func:`~absnb.views.drawn_run.real_run`) as a complete
    SVG document; ``window`` (seconds from, to) draws only what happened then (a
    checkpoint close up). Its words are in the language set (:func:`absnb.set_language`);
    ``title`` defaults to the run's."""
    rows: Sequence[EventRow] = run.rows
    tasks = [str(t) for t in run.tasks]
    if window is not None:
        rows = [r for r in rows if window[0] <= r.time <= window[1]]
    lane = {t: TOP + GAP * (i + 1) for i, t in enumerate(tasks)}
    sc = Scale([r.time for r in rows] if window is None else window, width, window is None)
    bottom = TOP + GAP * (len(tasks) + 0.75)
    body = [f'<rect width="{_n(width)}" height="HEIGHT" fill="#ffffff"/>']
    heading = run.title if title is None else title
    body.append(_text(16, 26, heading, size=22, anchor="start", font_weight="bold"))
    body += _lanes(tasks, lane, sc, bottom)
    body += _bands(rows, lane, sc)
    body += _attempts(rows, sc, bottom)
    body += _cuts(rows, lane, sc)
    body += _marks(rows, lane, sc)
    rates = window is None or window[1] - window[0] >= 20 * BUCKET
    flow, height = _flow(rows, sc, bottom + 44, width) if rates else ([], bottom + 24)
    body += flow
    legend, height = _legend(rows, height + 10, width)
    body += legend
    height += 10
    doc = "\n".join(body).replace('height="HEIGHT"', f'height="{_n(height)}"', 1)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" font-family="{FONT}">\n{doc}\n</svg>\n'
    )


def _lanes(tasks: list[str], lane: dict[str, float], sc: Scale, bottom: float) -> list[str]:
    out = [_text(LEFT - 12, TOP, _("coordinator"), fill="#555555")]
    out.append(
        f'<line x1="{LEFT}" y1="{TOP}" x2="{_n(sc.width - RIGHT)}" y2="{TOP}" '
        'stroke="#999999" stroke-width="1" stroke-dasharray="4 4"/>'
    )
    for t in tasks:
        y = lane[t]
        out.append(_text(LEFT - 12, y, t))
        out.append(
            f'<line x1="{LEFT}" y1="{_n(y)}" x2="{_n(sc.width - RIGHT)}" y2="{_n(y)}" '
            f'stroke="{LANE}" stroke-width="1.5"/>'
        )
    for at in sc.ticks():
        x = sc.x(at)
        out.append(
            f'<line x1="{_n(x)}" y1="{_n(bottom)}" x2="{_n(x)}" y2="{_n(bottom + 6)}" '
            'stroke="#333333"/>'
        )
        out.append(_text(x, bottom + 16, f"{at:.6g} s", size=14, anchor="middle"))
    for a, b in sc.gaps:
        x0, x1 = sc.x(a) + 8, sc.x(b) - 8
        out.append(
            f'<rect x="{_n(x0)}" y="{_n(TOP - 8)}" width="{_n(x1 - x0)}" '
            f'height="{_n(bottom - TOP + 8)}" fill="#eeeeee"/>'
        )
        out.append(
            _text(
                (x0 + x1) / 2,
                bottom + 16,
                f"≈{b - a:.1f} s",
                size=14,
                anchor="middle",
                fill="#555555",
            )
        )
    return out


def _tick(span: float) -> float:
    for step in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 60):
        if span / step <= 10:
            return step
    return 120.0


def _bands(rows: Sequence[EventRow], lane: dict[str, float], sc: Scale) -> list[str]:
    """Alignments: from a task's first block to its snapshot (or its unblocks, if none)."""
    out: list[str] = []
    began: dict[tuple[int, str | None], float] = {}
    for r in rows:
        key = (r.attempt, r.task)
        if r.kind == "block":
            began.setdefault(key, r.time)
        elif r.kind in ("snapshot", "failure", "restored") and key in began:
            start = began.pop(key)
            if r.task in lane:
                x0, x1 = sc.x(start), max(sc.x(r.time), sc.x(start) + 3)
                out.append(
                    f'<rect x="{_n(x0)}" y="{_n(lane[r.task] - 11)}" width="{_n(x1 - x0)}" '
                    f'height="22" fill="{STATUS_COLOURS["aligning"]}" stroke="#b8a000" '
                    'stroke-dasharray="3 2"/>'
                )
    return out


def _attempts(rows: Sequence[EventRow], sc: Scale, bottom: float) -> list[str]:
    """A failure (vermillion) and a restore (green) as lines through every lane."""
    out, seen = [], set()
    for r in rows:
        if r.kind not in ("failure", "restored") or (r.kind, r.attempt) in seen:
            continue
        seen.add((r.kind, r.attempt))
        x = sc.x(r.time)
        colour = OFFENDING if r.kind == "failure" else RECOVERY
        label = (
            _("✗ {task} fails").format(task=r.task or _("a host"))
            if r.kind == "failure"
            else _("restored checkpoint {n}").format(n=r.checkpoint or _("none"))
        )
        out.append(
            f'<line x1="{_n(x)}" y1="{_n(TOP - 14)}" x2="{_n(x)}" y2="{_n(bottom)}" '
            f'stroke="{colour}" stroke-width="3" stroke-dasharray="8 4"/>'
        )
        anchor = "end" if r.kind == "failure" else "start"
        dx = -6 if r.kind == "failure" else 6
        out.append(_text(x + dx, TOP - 22, label, size=15, anchor=anchor, fill=colour))
    return out


def _cuts(rows: Sequence[EventRow], lane: dict[str, float], sc: Scale) -> list[str]:
    """Each completed checkpoint's cut: a line through its tasks' snapshots, top to bottom."""
    completed = {r.checkpoint for r in rows if r.kind == "completed"}
    points: dict[int, dict[str, float]] = {}
    for r in rows:
        if r.kind == "snapshot" and r.checkpoint in completed and r.task in lane:
            points.setdefault(r.checkpoint or 0, {})[r.task or ""] = r.time
    out = []
    for n, at in sorted(points.items()):
        xy = sorted(((lane[t], sc.x(x)) for t, x in at.items()))
        path = " ".join(f"{_n(x)},{_n(y)}" for y, x in xy)
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{CUT}" stroke-width="2.5" '
            'opacity="0.85"/>'
        )
        y, x = xy[-1]
        x = min(x, sc.width - 26)  # the last cut's label inside the picture
        out.append(_text(x, y + 20, _("cut {n}").format(n=n), size=14, anchor="middle", fill=CUT))
    return out


def _marks(rows: Sequence[EventRow], lane: dict[str, float], sc: Scale) -> list[str]:
    out = []
    for r in rows:
        x = sc.x(r.time)
        if r.kind in ("barrier", "marker") and r.task in lane:
            y = lane[r.task or ""]
            out.append(
                f'<line x1="{_n(x)}" y1="{_n(y - 9)}" x2="{_n(x)}" y2="{_n(y + 9)}" '
                f'stroke="{CONTROL}" stroke-width="3"/>'
            )
        elif r.kind == "snapshot" and r.task in lane:
            out.append(
                f'<circle cx="{_n(x)}" cy="{_n(lane[r.task or ""])}" r="5.5" '
                f'fill="{STATUS_COLOURS["taken"]}" stroke="{RECORD}" stroke-width="2"/>'
            )
        elif r.kind in ("triggered", "completed"):
            fill = "#ffffff" if r.kind == "triggered" else CUT
            out.append(
                f'<rect x="{_n(x - 4)}" y="{TOP - 4}" width="8" height="8" fill="{fill}" '
                f'stroke="{CUT}" stroke-width="1.5"/>'
            )
    return out + _overtaken(rows, lane, sc) + _transactions(rows, lane, sc)


OVERTAKEN_APART = 64.0
"""Overtaken counts on one lane closer than this (px) are drawn as one sum: two labels of
14 px text ("↷1,130") would overlap."""

BOLD_14_PX = 9.0
"""About the width of one character of 14 px bold text (digits, ↷)."""

SIGN_APART = 14.0
"""Transaction letters on one lane closer than this (px) are drawn as one label ("C A")."""

SIGNS = {"pre_commit": "P", "commit": "C", "abort_txn": "A"}


def _on_lanes(
    rows: Sequence[EventRow],
    lane: dict[str, float],
    sc: Scale,
    kinds: Collection[str],
    apart: float,
) -> list[tuple[str, float, list[EventRow]]]:
    """The rows of ``kinds`` per lane, grouped where each lies within ``apart`` px of the
    group's first: (task, x of the first, the group's rows)."""
    groups: dict[str, list[tuple[float, list[EventRow]]]] = {}
    for r in rows:
        if r.kind in kinds and r.task in lane:
            x, on_lane = sc.x(r.time), groups.setdefault(r.task or "", [])
            if on_lane and x - on_lane[-1][0] < apart:
                on_lane[-1][1].append(r)
            else:
                on_lane.append((x, [r]))
    return [(t, x, g) for t, on_lane in groups.items() for x, g in on_lane]


def _overtaken(rows: Sequence[EventRow], lane: dict[str, float], sc: Scale) -> list[str]:
    """↷n where barriers overtook n records; a barrier that overtook none gets no mark. A
    label that would run past the right edge is drawn to the left of its mark."""
    some = [r for r in rows if r.count]
    out = []
    for t, x, g in _on_lanes(some, lane, sc, ("overtaken",), OVERTAKEN_APART):
        label = f"↷{sum(r.count or 0 for r in g):,}"
        inside = x + 4 + BOLD_14_PX * len(label) <= sc.width
        out.append(
            _text(
                x + 4 if inside else x - 4,
                lane[t] - 15,
                label,
                size=14,
                anchor="start" if inside else "end",
                fill=CONTROL,
                font_weight="bold",
            )
        )
    return out


def _transactions(rows: Sequence[EventRow], lane: dict[str, float], sc: Scale) -> list[str]:
    """P, C and A over a sink's lane where it pre-committed, committed or aborted a
    transaction; letters that would overlap (a commit and an abort on restore) share one
    label, in the order they happened."""
    return [
        _text(
            x,
            lane[t] - 17,
            " ".join(SIGNS[r.kind] for r in g),
            size=14,
            anchor="middle",
            font_weight="bold",
        )
        for t, x, g in _on_lanes(rows, lane, sc, SIGNS, SIGN_APART)
    ]


def _flow(rows: Sequence[EventRow], sc: Scale, top: float, width: float) -> tuple[list[str], float]:
    """Every channel's record rate as a line in a strip of its own."""
    buckets: dict[str, dict[float, float]] = {}  # records per second, by bucket start
    span = BUCKET  # the widest bucket: a line breaks where more than three are missing
    for r in rows:
        if r.kind == "records" and r.channel is not None:
            b = buckets.setdefault(r.channel, {})
            b[r.time] = b.get(r.time, 0) + (r.count or 0) / (r.span or BUCKET)
            span = max(span, r.span or BUCKET)
    if max((len(b) for b in buckets.values()), default=0) < 3:  # too short a stretch
        return [], top - 20
    out = [_text(LEFT, top, _("records per second on each channel"), size=15, anchor="start")]
    y = top + 12
    for c in channels_of([r for r in rows if r.kind == "records"]):
        series = sorted(buckets.get(c, {}).items())
        peak = max((n for _t, n in series), default=0)
        out.append(_text(LEFT - 12, y + FLOW / 2 - 4, c, size=14))
        out.append(
            f'<line x1="{LEFT}" y1="{_n(y + FLOW)}" x2="{_n(width - RIGHT)}" '
            f'y2="{_n(y + FLOW)}" stroke="#cccccc"/>'
        )
        for run in _stretches(series, span):  # no line across a stretch with no records
            pts = " ".join(
                f"{_n(x)},{_n(y + FLOW - n / peak * (FLOW - 4))}" for x, n in _steps(run, sc, span)
            )
            out.append(
                f'<polyline points="{pts}" fill="none" stroke="{RECORD}" stroke-width="1.5"/>'
            )
        if peak:
            out.append(
                _text(
                    LEFT - 12,
                    y + FLOW / 2 + 14,
                    _("peak {rate}/s").format(rate=f"{peak:,.0f}"),
                    size=14,
                    fill="#555555",
                )
            )
        y += FLOW + 12
    return out, y


def _steps(run: list[tuple[float, float]], sc: Scale, span: float) -> list[tuple[float, float]]:
    """A stretch of buckets (each ``span`` s at most) as steps from the axis and back: each
    bucket's rate held over its own length, zero where no bucket was, so that a burst of one
    bucket shows as a spike, not as nothing."""
    pts: list[tuple[float, float]] = []
    for i, (t, n) in enumerate(run):
        end = min(run[i + 1][0], t + span) if i + 1 < len(run) else t + span
        if not pts or pts[-1][0] < sc.x(t):
            pts += [(pts[-1][0] if pts else sc.x(t), 0.0), (sc.x(t), 0.0)]
        pts += [(sc.x(t), n), (sc.x(end), n)]
    return [*pts, (pts[-1][0], 0.0)]


def _stretches(series: list[tuple[float, float]], span: float) -> list[list[tuple[float, float]]]:
    """``series`` cut where more than three buckets (``span`` s) in a row had no records."""
    runs: list[list[tuple[float, float]]] = []
    for t, n in series:
        if not runs or t - runs[-1][-1][0] > 3.5 * span:
            runs.append([])
        runs[-1].append((t, n))
    return runs


def legend_items() -> tuple[tuple[str, str, str], ...]:
    """What the diagram can show: ``(event kind, colour, words)``, words in the language set."""
    return (
        ("barrier", CONTROL, _("barrier arrives")),
        ("block", STATUS_COLOURS["aligning"], _("alignment (inputs blocked)")),
        ("snapshot", STATUS_COLOURS["taken"], _("snapshot")),
        ("completed", CUT, _("cut of a completed checkpoint")),
        ("failure", OFFENDING, _("failure")),
        ("restored", RECOVERY, _("restore")),
        ("overtaken", "#ffffff", _("↷n: barriers overtook n records there")),
        ("pre_commit", "#ffffff", _("P pre-commit, C commit, A abort (a sink's transaction)")),
    )


def _legend(rows: Sequence[EventRow], y: float, width: float) -> tuple[list[str], float]:
    """The legend of what ``rows`` show, in rows from ``y``; the elements and the bottom."""
    kinds = {r.kind for r in rows}
    items = [(colour, text) for kind, colour, text in legend_items() if kind in kinds]
    out, x = [], LEFT
    for colour, text in items:
        w = 40 + len(text) * 7.6 + wide(text) * 6.4  # a wide character is about 14 px
        if x + w > width - RIGHT:
            x, y = LEFT, y + 24
        out.append(
            f'<rect x="{_n(x)}" y="{_n(y)}" width="22" height="14" fill="{colour}" '
            'stroke="#555555"/>'
        )
        out.append(_text(x + 28, y + 7, text, size=14, anchor="start"))
        x += w
    return out, y + 24
