"""The space-time diagram as a static SVG document, and a display object for notebooks.

:func:`timeline_svg` draws the :class:`~absnb.views.diagram.Diagram` of a trace: same input,
same bytes. :func:`~absnb.views.timeline.show_timeline` returns a
:class:`~absnb.views.timeline.Timeline` whose rich display carries the interactive plotly figure
*and* the SVG as an ``<img>`` with a ``data:`` URL in ``text/html``, the one picture JupyterLab
shows for an untrusted notebook (it renders neither raw SVG nor plotly output there).

Colours are from the Okabe-Ito palette (safe for colour-blind readers), and nothing is
told apart by colour alone: control messages are dotted, messages in flight dashed, an
offending message thick with a cross in its label, cuts of the run solid, pending ones
dashed and cuts by hand dash-dotted.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from absnb.i18n import gettext as _
from absnb.views.arrows import KIND_NAMES, kind_name
from absnb.views.cut import Cut
from absnb.views.diagram import LANE_PX, TITLE_PX, WIDTH, Diagram, layout_run
from absnb.views.labels import LABEL_PX
from absnb.views.run_marks import quiet_stretches, rates_svg, run_legend, run_marks
from absnb.views.strokes import CutLine, Point, Stroke
from absnb.views.svg import (
    BY_HAND,
    CONTROL,
    CUT,
    FONT,
    LANE,
    LOST,
    OFFENDING,
    RECORD,
    RECOVERY,
)
from absnb.views.svg import num as _n
from absnb.views.svg import text as _text

if TYPE_CHECKING:
    from absnb.sim.events import Event
    from absnb.sim.world import World

BURIED = 150
"""Above this many record arrows the cuts are drawn a second time over them."""
_CUT_DASH = {"completed": "", "pending": "12 7", "by hand": "14 6 3 6"}


def _stroke_style(s: Stroke) -> tuple[str, float, str, str]:
    """Colour, width, dash pattern and arrowhead id of one message."""
    if s.emphasis == "offending":
        return OFFENDING, 5.0, "", "head-offending"
    if s.state == "lost":
        return LOST, 2.0, "3 4", "head-lost"
    control = s.arrow.kind != "record"
    colour = CONTROL if control else RECORD
    width = 3.0 if control else 2.0
    if s.emphasis == "channel state":
        width += 1.5
    dash = "3 5" if control else ""
    if s.state == "in flight":
        dash = "10 6"
        return colour, width, dash, "head-open-control" if control else "head-open-record"
    return colour, width, dash, "head-control" if control else "head-record"


def _strokes(d: Diagram, strokes: list[Stroke], dense: bool) -> list[str]:
    """The message lines; with many markers or barriers those are drawn thinner and
    paler so that the records and the cuts stay readable."""
    out = []
    for s in strokes:
        colour, width, dash, head = _stroke_style(s)
        (xa, ya), (xb, yb) = d.scale.px(s.start), d.scale.px(s.end)
        coords = f'x1="{_n(xa)}" y1="{_n(ya)}" x2="{_n(xb)}" y2="{_n(yb)}"'
        if s.emphasis == "offending":
            out.append(
                f'<line {coords} stroke="#ffffff" stroke-width="{_n(width + 6)}" '
                'stroke-linecap="round"/>'
            )
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        if dense and s.arrow.kind != "record":
            width, extra = width - 1, extra + ' stroke-opacity="0.6"'
        out.append(
            f'<line {coords} stroke="{colour}" stroke-width="{_n(width)}"{extra} '
            f'marker-end="url(#{head})"><title>{html.escape(s.arrow.describe())}</title></line>'
        )
    return out


def _defs() -> str:
    heads = []
    for name, colour in (("record", RECORD), ("control", CONTROL), ("offending", OFFENDING)):
        heads.append(
            f'<marker id="head-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="5" '
            f'markerHeight="5" orient="auto-start-reverse" markerUnits="strokeWidth">'
            f'<path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        )
        heads.append(
            f'<marker id="head-open-{name}" viewBox="0 0 10 10" refX="9" refY="5" '
            f'markerWidth="6" markerHeight="6" orient="auto" markerUnits="strokeWidth">'
            f'<path d="M0,0 L10,5 L0,10" fill="none" stroke="{colour}" stroke-width="2"/>'
            "</marker>"
        )
    heads.append(
        '<marker id="head-lost" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto" markerUnits="strokeWidth">'
        f'<path d="M1,1 L9,9 M9,1 L1,9" stroke="{LOST}" stroke-width="2"/></marker>'
    )
    heads.append(
        '<pattern id="down" width="14" height="14" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="14" height="14" fill="#000000" '
        'fill-opacity="0.10"/><line x1="0" y1="0" x2="0" y2="14" stroke="#000000" '
        'stroke-opacity="0.35" stroke-width="5"/></pattern>'
    )
    return "<defs>" + "".join(heads) + "</defs>"


def _cut_path(d: Diagram, line: CutLine, reach: float) -> str:
    """The cut line, reaching up to its label above the top lane and a little below the
    bottom one."""
    sc = d.scale
    pts = [sc.px(p) for p in line.points]
    pts = [(pts[0][0], pts[0][1] - reach), *pts, (pts[-1][0], pts[-1][1] + 0.3 * sc.gap)]
    return "M" + " L".join(f"{_n(x)},{_n(y)}" for x, y in pts)


def _legend(d: Diagram, y: float) -> tuple[list[str], float]:
    """The legend entries present in ``d``, laid out in rows from ``y``; returns the
    elements and the height used."""
    entries = _legend_entries(d)
    out = []
    x, row = d.scale.left, 0
    for colour, dash, width, text in entries:
        w = 56 + len(text) * LABEL_PX * 0.62 + 28
        if x + w > d.scale.width - d.scale.right and x > d.scale.left:
            x, row = d.scale.left, row + 1
        cy = y + row * 32
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line x1="{_n(x)}" y1="{_n(cy)}" x2="{_n(x + 44)}" y2="{_n(cy)}" '
            f'stroke="{colour}" stroke-width="{_n(width)}"{dash_attr}/>'
        )
        out.append(_text(x + 54, cy, text, anchor="start"))
        x += w
    return out, 32.0 * (row + 1) if entries else 0.0


def _legend_entries(d: Diagram) -> list[tuple[str, str, float, str]]:
    """``(colour, dash, width, text)`` of each kind of mark ``d`` draws."""
    entries: list[tuple[str, str, float, str]] = []
    kinds = {s.arrow.kind for s in d.strokes}
    if "record" in kinds:
        entries.append((RECORD, "", 2.0, _("record")))
    controls = [k for k in KIND_NAMES if k in kinds and k != "record"]
    if controls:
        entries.append((CONTROL, "3 5", 3.0, " / ".join(kind_name(k) for k in controls)))
    states = {s.state for s in d.strokes}
    emphases = {s.emphasis for s in d.strokes}
    if "in flight" in states:
        entries.append((RECORD, "10 6", 2.0, _("in flight (not yet delivered)")))
    if "channel state" in emphases:
        entries.append((RECORD, "", 3.5, _("channel state: sent before the cut, received after")))
    if "offending" in emphases:
        entries.append(
            (OFFENDING, "", 5.0, _("✗ received before the cut, sent after: inconsistent"))
        )
    if "lost" in states:
        entries.append((LOST, "3 4", 2.0, _("discarded by a recovery")))
    statuses = {line.cut.status for line in d.cuts}
    for status in ("completed", "pending", "by hand"):
        if status in statuses:
            colour = BY_HAND if status == "by hand" else CUT
            name = {
                "by hand": _("cut by hand"),
                "completed": _("cut of a completed checkpoint"),
                "pending": _("cut of a pending checkpoint"),
            }[status]
            entries.append((colour, _CUT_DASH[status], 4.0, name))
    if d.bands:
        entries.append(("url(#down)", "", 14.0, _("task down: crash to recovery")))
    return entries + run_legend(d)


def render_svg(d: Diagram) -> str:
    """The diagram as a complete SVG document, drawn back to front."""
    sc = d.scale
    W = sc.width
    body: list[str] = [_defs(), f'<rect width="{_n(W)}" height="HEIGHT" fill="#ffffff"/>']
    body.append(_text(sc.left, TITLE_PX, d.title, size=TITLE_PX, anchor="start", weight="bold"))
    body += quiet_stretches(d) + _lanes(d) + run_marks(d)
    dense = sum(s.arrow.kind != "record" for s in d.strokes) > 30
    body += _strokes(d, [s for s in d.strokes if s.arrow.kind != "record"], dense)
    body += _cut_lines(d)  # over the markers and barriers (the marker often runs along it)
    body += _hops(d)
    records = [s for s in d.strokes if s.arrow.kind == "record"]
    body += _strokes(d, records, dense)
    if len(records) > BURIED:  # so many records that the cuts under them vanish: again on top
        body += _cut_lines(d, opacity=0.6)
    body += _snapshot_marks(d)
    body += _crash_marks(d)
    body += _labels(d)
    bottom = d.height
    if d.layers is not None and d.layers.rates:
        strip, bottom = rates_svg(d, bottom)
        body += strip
    legend, used = _legend(d, bottom + 8)
    body += legend
    height = bottom + used + 16
    doc = "\n".join(body).replace('height="HEIGHT"', f'height="{_n(height)}"', 1)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(W)}" height="{_n(height)}" '
        f'viewBox="0 0 {_n(W)} {_n(height)}" font-family="{FONT}">\n{doc}\n</svg>\n'
    )


def _lanes(d: Diagram) -> list[str]:
    """Behind everything: the bands where a task is down, the line at the current step,
    one lane per task with its name, the time axis's name and a line at each recovery."""
    sc = d.scale
    top, bottom = sc.top, sc.top + sc.gap * (len(d.tasks) - 1)
    y0, y1 = top - 0.5 * sc.gap, bottom + 0.5 * sc.gap
    out = []
    for start, end, _task in d.bands:
        x0, _y = sc.px(Point(start, 0))
        x1, _y = sc.px(Point(end, 0))
        out.append(
            f'<rect x="{_n(x0)}" y="{_n(y0)}" width="{_n(max(x1 - x0, 14))}" '
            f'height="{_n(y1 - y0)}" fill="url(#down)"/>'
        )
    xn, _y = sc.px(Point(d.now, 0))
    out.append(
        f'<line x1="{_n(xn)}" y1="{_n(y0)}" x2="{_n(xn)}" y2="{_n(y1)}" stroke="#555555" '
        'stroke-width="1.5" stroke-dasharray="2 4"/>'
    )
    for i, task in enumerate(d.tasks):
        x0, y = sc.px(Point(d.first, i))
        out.append(
            f'<line x1="{_n(x0)}" y1="{_n(y)}" x2="{_n(xn)}" y2="{_n(y)}" stroke="{LANE}" '
            'stroke-width="2"/>'
        )
        out.append(_text(sc.left - 14, y, str(task), size=LANE_PX, anchor="end", weight="bold"))
    tick_y = bottom + 0.3 * sc.gap + 20
    if not sc.seconds:
        out.append(_text(sc.left - 14, tick_y, "step", fill="#444444", anchor="end"))
    for r in d.recoveries:
        x, _y = sc.px(Point(r.step, 0))
        out.append(
            f'<line x1="{_n(x)}" y1="{_n(y0)}" x2="{_n(x)}" y2="{_n(y1)}" stroke="{RECOVERY}" '
            'stroke-width="3" stroke-dasharray="1 5" stroke-linecap="round"/>'
        )
    return out


def _cut_lines(d: Diagram, opacity: float = 0.85) -> list[str]:
    """One path per cut, through every task's point, up to its name."""
    out = []
    for line, reach in zip(d.cuts, d.reach, strict=True):
        colour = BY_HAND if line.cut.status == "by hand" else CUT
        dash = _CUT_DASH[line.cut.status]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<path d="{_cut_path(d, line, reach)}" fill="none" stroke="{colour}" stroke-width="4" '
            f'stroke-opacity="{opacity}" stroke-linejoin="round"{dash_attr}/>'
        )
    return out


def _hops(d: Diagram) -> list[str]:
    """A gap in the cut line where a message passes over a cut it does not cross (a
    crossing that is not genuine): the message then hops over the cut."""
    sc = d.scale
    out = []
    for c in d.crossings:
        if c.genuine:
            continue
        s = d.strokes[c.stroke]
        (xa, ya), (xb, yb) = sc.px(s.start), sc.px(s.end)
        x, y = sc.px(c.at)
        length = max(((xb - xa) ** 2 + (yb - ya) ** 2) ** 0.5, 1.0)
        dx, dy = (xb - xa) / length * 12, (yb - ya) / length * 12
        out.append(
            f'<line x1="{_n(x - dx)}" y1="{_n(y - dy)}" x2="{_n(x + dx)}" y2="{_n(y + dy)}" '
            f'stroke="#ffffff" stroke-width="{_n(_stroke_style(s)[1] + 8)}"/>'
        )
    return out


def _snapshot_marks(d: Diagram) -> list[str]:
    """Each task's point on each cut: a diamond for its snapshot, a circle for a state
    chosen by hand (none for a task the cut still waits for)."""
    out = []
    for line in d.cuts:
        by_hand = line.cut.status == "by hand"
        colour = BY_HAND if by_hand else CUT
        for task, p in zip(d.tasks, line.points, strict=True):
            if task in line.cut.waiting:
                continue
            x, y = d.scale.px(p)
            if by_hand:
                out.append(f'<circle cx="{_n(x)}" cy="{_n(y)}" r="8" fill="{colour}"/>')
            else:
                out.append(
                    f'<path d="M{_n(x)},{_n(y - 11)} L{_n(x + 9)},{_n(y)} L{_n(x)},{_n(y + 11)} '
                    f'L{_n(x - 9)},{_n(y)} z" fill="{colour}" stroke="#ffffff" stroke-width="1.5"/>'
                )
    return out


def _crash_marks(d: Diagram) -> list[str]:
    """A cross at each crash, on the failed task's lane."""
    out = []
    for crash in d.crashes:
        x, y = d.scale.px(Point(crash.step, d.lane(crash.task)))
        out.append(
            f'<path d="M{_n(x - 11)},{_n(y - 11)} L{_n(x + 11)},{_n(y + 11)} M{_n(x + 11)},'
            f'{_n(y - 11)} L{_n(x - 11)},{_n(y + 11)}" stroke="#000000" stroke-width="5" '
            'stroke-linecap="round"/>'
        )
    return out


_LABEL_FILLS = {
    "overtaken": CONTROL,
    "gap": "#555555",
    "offending": OFFENDING,
    "checkpoint": CUT,
    "by hand": BY_HAND,
    "recovery": "#00684A",
}
_BOLD_LABELS = ("offending", "checkpoint", "by hand", "crash", "overtaken", "transaction")


def _labels(d: Diagram) -> list[str]:
    """Every label, where :func:`~absnb.views.diagram.layout_run` placed it."""
    return [
        _text(
            label.x,
            label.y,
            label.text,
            fill=_LABEL_FILLS.get(label.kind, "#111111"),
            weight="bold" if label.kind in _BOLD_LABELS else "normal",
        )
        for label in d.labels
    ]


def timeline_svg(
    trace: Sequence[Event],
    world: World,
    *,
    cuts: Sequence[Cut] | None = None,
    title: str | None = None,
    width: float = WIDTH,
) -> str:
    """The space-time diagram of ``trace`` (ending in ``world``) as a complete SVG
    document, ``width`` pixels wide: the same bytes for the same trace.

    Args:
        cuts: the cuts to draw; default the cut of every completed or pending checkpoint
            of the run. Add a :class:`~absnb.views.cut.Cut` composed by hand to see what
            an inconsistent one looks like.
        title: the heading; default ``<job> under <protocol>``.
    """
    from absnb.views.simulated import simulated

    run = simulated(trace, world)
    return render_svg(layout_run(run, cuts=cuts, title=title, width=width))
