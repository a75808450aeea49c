"""The space-time diagram as a plotly figure, with hover text and zoom.

:func:`figure_of` draws the :class:`~absnb.views.diagram.Diagram` that
:func:`~absnb.views.diagram.layout_run` computed: the same strokes, cuts and labels the SVG
of :mod:`absnb.views.timeline_static` draws, as a few traces (one per kind of mark, not
one per message) and shapes. plotly is imported only when a figure is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from absnb.i18n import gettext as _
from absnb.views import svg
from absnb.views.arrows import KIND_NAMES, MessageKind, kind_name
from absnb.views.diagram import Diagram
from absnb.views.labels import LABEL_PX
from absnb.views.strokes import Stroke

if TYPE_CHECKING:
    import plotly.graph_objects as go

Trace = dict[str, object]
"""A plotly trace as a plain dict (``type``, ``x``, ``y``, ...), validated by the figure."""

_UIREVISION = "absnb-space-time"

WEBGL_ARROWS = 500
"""Arrow traces with more arrows than this are drawn with WebGL (``scattergl``)."""


def _scatter(**props: object) -> Trace:
    """A scatter trace as a plain dict (validated once, by the figure)."""
    return {"type": "scatter", **props}


def _stroke_trace(
    strokes: list[Stroke], *, name: str, colour: str, dash: str, width: float, head: str = "arrow"
) -> Trace:
    """All ``strokes`` as one line trace with None gaps, a head marker at the far end.

    Past :data:`WEBGL_ARROWS` arrows the trace is drawn with WebGL and without heads: in
    Chromium a 5,000-event trace then draws in about 0.4 s and zooms in about 20 ms
    against 1.6 s and 1.3 s as SVG, and heads are unreadable at that density anyway.
    """
    xs: list[float | None] = []
    ys: list[float | None] = []
    texts: list[str] = []
    sizes: list[int] = []
    for s in strokes:
        text = s.arrow.describe()
        xs += (s.start.x, s.end.x, None)
        ys += (s.start.y, s.end.y, None)
        texts += (text, text, "")
        sizes += (0, 12, 0)
    line = {"color": colour, "dash": dash, "width": width}
    if len(strokes) > WEBGL_ARROWS:
        return _scatter(
            type="scattergl",
            x=xs,
            y=ys,
            mode="lines",
            name=name,
            line=line,
            hovertext=texts,
            hoverinfo="text",
        )
    return _scatter(
        x=xs,
        y=ys,
        mode="lines+markers",
        name=name,
        line=line,
        marker={
            "symbol": head,
            "angleref": "previous",
            "size": sizes,
            "color": colour,
            "line": {"color": colour, "width": 1},
        },
        hovertext=texts,
        hoverinfo="text",
        connectgaps=False,
    )


def _points(
    xs: list[float],
    ys: list[float],
    texts: list[str],
    *,
    name: str,
    symbol: str,
    colour: str,
    size: int,
) -> Trace:
    return _scatter(
        x=xs,
        y=ys,
        mode="markers",
        name=name,
        marker={"symbol": symbol, "color": colour, "size": size, "line": {"width": 1.5}},
        hovertext=texts,
        hoverinfo="text",
    )


def figure_of(d: Diagram) -> go.Figure:
    """The plotly figure of a laid-out diagram: the same strokes, cuts and labels the SVG
    draws (:func:`absnb.views.timeline_static.render_svg`), with hover text and zoom."""
    import plotly.graph_objects as go

    data: list[Trace] = [_lanes(d)]
    data += _message_traces(d)
    data += _replay_marks(d)
    data += _cut_traces(d)
    data += _snapshot_marks(d)
    data += _failure_marks(d)
    annotations = _annotations(d)
    n = len(d.tasks)
    low = min([-0.6, *(a["y"] - 0.2 for a in annotations)])
    high = max(
        [n - 0.5, *(d.scale.point(lb.x, lb.y).y + 0.2 for lb in d.labels if lb.kind != "step")]
    )
    layout = {
        "title": {"text": d.title, "font": {"size": 22}},
        "font": {"size": LABEL_PX},
        "xaxis": {"title": {"text": _("step")}, "range": [d.first - 0.5, d.now + 0.5]},
        "yaxis": {
            "tickmode": "array",
            "tickvals": list(range(n)),
            "ticktext": [str(t) for t in d.tasks],
            "range": [high, low],
            "zeroline": False,
            "showgrid": False,
            "tickfont": {"size": 20},
        },
        "hovermode": "closest",
        "height": int(d.height + 60),
        "shapes": _shapes(d),
        "annotations": annotations,
        "legend": {"orientation": "h", "y": -0.18},
        "plot_bgcolor": "#ffffff",
        "uirevision": _UIREVISION,
    }
    return go.Figure(data=data, layout=layout)


def _lanes(d: Diagram) -> Trace:
    """One horizontal line per task."""
    lines_x: list[float | None] = []
    lines_y: list[float | None] = []
    for i in range(len(d.tasks)):
        lines_x += (d.first, d.now, None)
        lines_y += (i, i, None)
    return _scatter(
        x=lines_x,
        y=lines_y,
        mode="lines",
        name="tasks",
        line={"color": svg.LANE, "width": 2},
        hoverinfo="skip",
        showlegend=False,
    )


def _message_traces(d: Diagram) -> list[Trace]:
    """The messages of each kind (:data:`KIND_NAMES`) delivered and in flight, then the
    channel-state and offending messages, then those a recovery discarded."""
    plain = [s for s in d.strokes if not s.emphasis]
    dense = sum(s.arrow.kind != "record" for s in d.strokes) > 30
    data = []
    for kind in KIND_NAMES:
        data += _kind_traces([s for s in plain if s.arrow.kind == kind], kind, dense)
    state = [s for s in d.strokes if s.emphasis == "channel state"]
    if state:
        data.append(
            _stroke_trace(state, name="channel state", colour=svg.RECORD, dash="solid", width=4)
        )
    bad = [s for s in d.strokes if s.emphasis == "offending"]
    if bad:
        data.append(
            _stroke_trace(
                bad,
                name=_("offending: received before the cut, sent after"),
                colour=svg.OFFENDING,
                dash="solid",
                width=6,
            )
        )
    lost = [s for s in plain if s.state == "lost"]
    if lost:
        data.append(
            _stroke_trace(
                lost,
                name=_("discarded by recovery"),
                colour=svg.LOST,
                dash="dot",
                width=1.5,
                head="x-thin-open",
            )
        )
    return data


def _kind_traces(strokes: list[Stroke], kind: MessageKind, dense: bool) -> list[Trace]:
    """The messages of one kind (not emphasised): delivered, and in flight."""
    control = kind != "record"
    colour = svg.CONTROL if control else svg.RECORD
    width = (2.0 if dense else 3.0) if control else 1.5
    delivered = [s for s in strokes if s.state == "delivered"]
    flying = [s for s in strokes if s.state == "in flight"]
    data = []
    if delivered:
        data.append(
            _stroke_trace(
                delivered,
                name=kind_name(kind, several=True),
                colour=colour,
                dash="dot" if control else "solid",
                width=width,
            )
        )
    if flying:
        data.append(
            _stroke_trace(
                flying,
                name=_("{messages} in flight").format(messages=kind_name(kind, several=True)),
                colour=colour,
                dash="dash",
                width=width,
                head="arrow-open",
            )
        )
    return data


def _replay_marks(d: Diagram) -> list[Trace]:
    """Marks at the duplicates a task dropped and at the messages replayed from a
    snapshot's channel state."""
    data = []
    dropped = [s for s in d.strokes if s.arrow.dropped]
    if dropped:
        data.append(
            _points(
                [s.end.x for s in dropped],
                [s.end.y for s in dropped],
                [s.arrow.describe() for s in dropped],
                name=_("dropped duplicates"),
                symbol="circle-x-open",
                colour="#222222",
                size=13,
            )
        )
    replayed = [s for s in d.strokes if s.arrow.restored]
    if replayed:
        data.append(
            _points(
                [s.start.x for s in replayed],
                [s.start.y for s in replayed],
                [s.arrow.describe() for s in replayed],
                name=_("replayed from snapshot"),
                symbol="square-open",
                colour=svg.RECOVERY,
                size=12,
            )
        )
    return data


def cut_name(status: str) -> str:
    """The legend's name of a kind of cut, in the language set."""
    names = {
        "completed": _("checkpoint cuts"),
        "pending": _("pending cuts"),
        "by hand": _("cuts by hand"),
    }
    return names[status]


_CUT_DASHES = {"completed": "solid", "pending": "dash", "by hand": "dashdot"}


def _cut_traces(d: Diagram) -> list[Trace]:
    """The cut lines, one trace per status (completed, pending, by hand)."""
    data = []
    for status in _CUT_DASHES:
        name = cut_name(status)
        of = [line for line in d.cuts if line.cut.status == status]
        if not of:
            continue
        cx: list[float | None] = []
        cy: list[float | None] = []
        hover: list[str] = []
        for line in of:
            what = f"{line.cut.label}: " + ", ".join(
                _("{task} at {step:g}").format(task=t, step=p.x)
                for t, p in zip(d.tasks, line.points, strict=True)
            )
            cx += [p.x for p in line.points] + [None]
            cy += [p.y for p in line.points] + [None]
            hover += [what] * len(line.points) + [""]
        colour = svg.BY_HAND if status == "by hand" else svg.CUT
        data.append(
            _scatter(
                x=cx,
                y=cy,
                mode="lines",
                name=name,
                line={"color": colour, "width": 4, "dash": _CUT_DASHES[status]},
                opacity=0.85,
                hovertext=hover,
                hoverinfo="text",
            )
        )
    return data


def _snapshot_marks(d: Diagram) -> list[Trace]:
    """Each task's point on each cut: its snapshot, or the state chosen by hand (none for
    a task the cut still waits for)."""
    data = []
    for by_hand in (False, True):
        px, py, ptext = [], [], []
        for line in d.cuts:
            if (line.cut.status == "by hand") != by_hand:
                continue
            for t, p in zip(d.tasks, line.points, strict=True):
                if t not in line.cut.waiting:
                    px.append(p.x)
                    py.append(p.y)
                    ptext.append(f"{t}'s state for {line.cut.label} at {p.x:g}")
        if px:
            data.append(
                _points(
                    px,
                    py,
                    ptext,
                    name=_("states chosen by hand") if by_hand else _("task snapshots"),
                    symbol="circle" if by_hand else "diamond",
                    colour=svg.BY_HAND if by_hand else svg.CUT,
                    size=14,
                )
            )
    return data


def _failure_marks(d: Diagram) -> list[Trace]:
    """Marks at the crashes, on the failed task's lane, and at the recoveries, above the
    lanes."""
    data = []
    if d.crashes:
        data.append(
            _points(
                [float(c.step) for c in d.crashes],
                [float(d.lane(c.task)) for c in d.crashes],
                [f"{c.task} crashes at {c.step}" for c in d.crashes],
                name="crashes",
                symbol="x",
                colour="#000000",
                size=18,
            )
        )
    if d.recoveries:
        rtext = []
        for r in d.recoveries:
            what = (
                _("checkpoint {n}").format(n=r.checkpoint_id)
                if r.checkpoint_id
                else _("the initial state")
            )
            rtext.append(
                _("recover ({mode}) at {step} from {what}: {tasks} restart").format(
                    mode=r.mode, step=r.step, what=what, tasks=", ".join(str(t) for t in r.tasks)
                )
            )
        data.append(
            _points(
                [float(r.step) for r in d.recoveries],
                [-0.5] * len(d.recoveries),
                rtext,
                name="recoveries",
                symbol="triangle-down",
                colour=svg.RECOVERY,
                size=14,
            )
        )
    return data


def _shapes(d: Diagram) -> list[dict[str, object]]:
    """Behind the traces: a grey band from each crash to its recovery, a dotted line at
    each recovery and one at the current step."""
    bottom = len(d.tasks) - 0.5
    shapes: list[dict[str, object]] = []
    for start, end, _task in d.bands:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "y",
                "x0": start,
                "x1": end,
                "y0": -0.5,
                "y1": bottom,
                "fillcolor": "#000000",
                "opacity": 0.16,
                "line": {"width": 0},
                "layer": "below",
            }
        )
    dotted: list[tuple[float, dict[str, object]]] = [
        (r.step, {"color": svg.RECOVERY, "width": 3, "dash": "dot"}) for r in d.recoveries
    ]
    dotted.append((d.now, {"color": "#555555", "width": 1.5, "dash": "dot"}))
    for x, line in dotted:
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "y",
                "x0": x,
                "x1": x,
                "y0": -0.5,
                "y1": bottom,
                "layer": "below",
                "line": line,
            }
        )
    return shapes


class Annotation(TypedDict):
    """A plotly annotation: a label in data coordinates."""

    x: float
    y: float
    xref: str
    yref: str
    text: str
    showarrow: bool
    bgcolor: str
    font: dict[str, object]


_LABEL_COLOURS = {"offending": svg.OFFENDING, "checkpoint": svg.CUT, "recovery": "#00684A"}


def _annotations(d: Diagram) -> list[Annotation]:
    """The diagram's labels, but the step numbers (the x axis has them), in data
    coordinates."""
    annotations: list[Annotation] = []
    for label in d.labels:
        if label.kind == "step":  # the x axis says it
            continue
        p = d.scale.point(label.x, label.y)
        annotations.append(
            {
                "x": p.x,
                "y": p.y,
                "xref": "x",
                "yref": "y",
                "text": label.text,
                "showarrow": False,
                "bgcolor": "rgba(255,255,255,0.8)",
                "font": {"size": LABEL_PX, "color": _LABEL_COLOURS.get(label.kind, "#111111")},
            }
        )
    return annotations
