"""Plotly charts of the performance experiments (:mod:`absnb.experiments.paper`).

Each function takes the DataFrame an experiment returned and draws it; nothing is
measured here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from absnb.i18n import N_
from absnb.i18n import gettext as _

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from absnb.core.job import Job

COLORS = {
    "none": "#7f7f7f",
    "abs": "#1f77b4",
    "synchronous": "#d62728",
    "chandy-lamport": "#2ca02c",
    "abs-cyclic": "#9467bd",
}
NAMES = {
    "none": N_("no snapshots (baseline)"),
    "abs": "ABS",
    "synchronous": N_("synchronous"),
    "chandy-lamport": "Chandy-Lamport",
}
"""Each protocol's name in the charts (translated where drawn: :func:`name`)."""


def name(protocol: object) -> str:
    """``protocol``'s name in the charts, in the language set."""
    return _(NAMES.get(str(protocol), str(protocol)))


def _median(df: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    return df.groupby(["protocol", x], dropna=False)[y].median().reset_index()


def _spread(df: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Median of ``y`` per protocol and ``x``, with the distance to the smallest and the
    largest run (asymmetric error bars) and the number of runs."""
    g = df.groupby(["protocol", x], dropna=False, sort=False)[y]
    out = g.median().to_frame("median")
    out["minus"] = out["median"] - g.min()
    out["plus"] = g.max() - out["median"]
    out["runs"] = g.size()
    return out.reset_index()


def caption(df: pd.DataFrame, machine: str = "") -> str:
    """What a chart shows the runs of: how many repetitions, on what machine."""
    reps = int(df["repeat"].nunique()) if "repeat" in df.columns else 1
    text = _("median of {reps} interleaved repetition(s), bars: min to max").format(reps=reps)
    return f"{text}; {machine}" if machine else text


def figure6_title() -> str:
    """Figure 6's title, in the language set."""
    return _("Runtime against the snapshot interval (Figure 6, the Figure 5 job)")


def figure7_title(df: pd.DataFrame) -> str:
    """Figure 7's title, with the interval its runs snapshot at, in the language set."""
    interval = df["interval"].dropna()
    if not len(interval):
        return _("Runtime against parallelism (Figure 7)")
    every = f"{interval.iloc[0]:g}"
    return _("Runtime against parallelism (snapshots every {t} s; Figure 7)").format(t=every)


def figure6_chart(df: pd.DataFrame, machine: str = "", paper: bool = True) -> go.Figure:
    """Runtime over the baseline's against the snapshot interval (the paper's Figure 6):
    one line per protocol, medians with min-max error bars; with ``paper``, the paper's
    digitised values (:data:`~absnb.jobs.paper_topology.PAPER_FIGURE6`) dotted, against its
    own intervals on the top axis (a 260 s run on 10 nodes, where these are tens of
    seconds on a laptop)."""
    import plotly.graph_objects as go

    from absnb.jobs.paper_topology import PAPER_BASELINE_SECONDS, PAPER_FIGURE6

    fig = go.Figure()
    fig.add_hline(
        y=1.0,
        line_dash="dash",
        line_color=COLORS["none"],
        annotation_text=name("none"),
        annotation_position="bottom left",
    )
    snapshots = df[df["protocol"] != "none"]
    spread = _spread(snapshots, "interval", "relative_runtime")
    extra = snapshots.groupby(["protocol", "interval"], sort=False)[
        ["checkpoints", "persisted_data"]
    ].median()
    for protocol, part in spread.groupby("protocol", sort=False):
        more = [extra.loc[(protocol, i)] for i in part["interval"]]
        fig.add_trace(
            go.Scatter(
                x=list(part["interval"]),
                y=list(part["median"]),
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": list(part["plus"]),
                    "arrayminus": list(part["minus"]),
                },
                mode="lines+markers",
                name=_("{name} (measured)").format(name=name(protocol)),
                line={"color": COLORS.get(str(protocol))},
                customdata=[(int(m["checkpoints"]), int(m["persisted_data"])) for m in more],
                hovertemplate=_("every %{x} s: x%{y:.2f}")
                + "<br>"
                + _("%{customdata[0]} checkpoints")
                + "<br>"
                + _("%{customdata[1]:,} bytes recorded in flight")
                + "<extra></extra>",
            )
        )
    if paper:
        for protocol, values in PAPER_FIGURE6.items():
            fig.add_trace(
                go.Scatter(
                    x=list(values),
                    y=list(values.values()),
                    xaxis="x2",
                    mode="lines+markers",
                    name=_("{name} (paper, top axis)").format(name=name(protocol)),
                    line={"color": COLORS.get(protocol), "dash": "dot"},
                    marker={"symbol": "diamond-open"},
                )
            )
    layout: dict[str, object] = {}
    if paper:
        layout["xaxis2"] = {
            "title": _("the paper's interval (s; its baseline {b} s)").format(
                b=f"{PAPER_BASELINE_SECONDS:g}"
            ),
            "overlaying": "x",
            "side": "top",
            "rangemode": "tozero",
        }
    fig.update_layout(
        title={
            "text": figure6_title() + f"<br><sup>{caption(df, machine)}</sup>",
        },
        xaxis_title=_("snapshot interval (s)"),
        xaxis_rangemode="tozero",
        yaxis_title=_("runtime / runtime without snapshots"),
        template="plotly_white",
        margin={"t": 120},
        **layout,
    )
    return fig


def channel_state_chart(df: pd.DataFrame) -> go.Figure:
    """In-flight data recorded per protocol and interval (bars): Chandy-Lamport's channel
    states; zero for ABS on an acyclic graph and for synchronous snapshots."""
    import plotly.graph_objects as go

    m = _median(df[df["protocol"] != "none"], "interval", "persisted_data")
    fig = go.Figure()
    for protocol, part in m.groupby("protocol", sort=False):
        fig.add_trace(
            go.Bar(
                x=[str(i) for i in part["interval"]],
                y=list(part["persisted_data"]),
                name=name(protocol),
                marker_color=COLORS.get(str(protocol)),
            )
        )
    fig.update_layout(
        title=_("In-flight data recorded by the snapshots (all checkpoints of a run)"),
        xaxis_title=_("snapshot interval (s)"),
        yaxis_title=_("bytes"),
        barmode="group",
        template="plotly_white",
    )
    return fig


def figure7_chart(df: pd.DataFrame, machine: str = "") -> go.Figure:
    """Runtime against parallelism at a fixed interval (the paper's Figure 7): medians
    with min-max error bars."""
    import plotly.graph_objects as go

    m = _spread(df, "parallelism", "seconds")
    fig = go.Figure()
    for protocol, part in m.groupby("protocol", sort=False):
        fig.add_trace(
            go.Scatter(
                x=list(part["parallelism"]),
                y=list(part["median"]),
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": list(part["plus"]),
                    "arrayminus": list(part["minus"]),
                },
                mode="lines+markers",
                name=name(protocol),
                line={"color": COLORS.get(str(protocol))},
            )
        )
    fig.update_layout(
        title={"text": figure7_title(df) + f"<br><sup>{caption(df, machine)}</sup>"},
        xaxis_title=_("parallelism (tasks per operator)"),
        yaxis_title=_("runtime (s)"),
        yaxis_rangemode="tozero",
        xaxis={"tickmode": "array", "tickvals": sorted(set(df["parallelism"]))},
        template="plotly_white",
    )
    return fig


def alignment_chart(df: pd.DataFrame) -> go.Figure:
    """Histogram of alignment durations (milliseconds), with the median marked."""
    import plotly.graph_objects as go

    ms = df["alignment_duration"].astype(float) * 1000
    fig = go.Figure(go.Histogram(x=list(ms), nbinsx=30, marker_color=COLORS["abs"]))
    if len(ms):
        fig.add_vline(
            x=float(ms.median()),
            line_dash="dash",
            annotation_text=_("median {ms} ms").format(ms=f"{ms.median():.1f}"),
        )
    fig.update_layout(
        title=_("ABS alignment durations (first barrier to last, per task snapshot)"),
        xaxis_title=_("alignment duration (ms)"),
        yaxis_title=_("task snapshots"),
        template="plotly_white",
    )
    return fig


# -- static pictures (untrusted notebooks, GitHub, nbviewer) --------------------------------
class _SeriesLine(TypedDict):
    name: str
    color: str
    points: list[tuple[float, float, float, float]]
    """``(x, y, minus, plus)``: error bars from ``y - minus`` to ``y + plus``."""


class Series(_SeriesLine, total=False):
    """One line of :func:`static_chart`."""

    dash: bool
    """A dotted line."""


def _spread_series(df: pd.DataFrame, x: str, y: str) -> list[Series]:
    series: list[Series] = []
    for protocol, part in _spread(df, x, y).groupby("protocol", sort=False):
        shown = name(protocol)
        series.append(
            {
                "name": _("{name} (measured)").format(name=shown) if x == "interval" else shown,
                "color": COLORS.get(str(protocol), "#000000"),
                "points": [
                    (float(r[x]), float(r["median"]), float(r["minus"]), float(r["plus"]))
                    for r in part.to_dict("records")
                ],
            }
        )
    return series


def static_chart(
    series: list[Series],
    *,
    title: str,
    subtitle: str,
    xlabel: str,
    ylabel: str,
    hline: float | None = None,
    xticks: list[float] | None = None,
    width: int = 720,
    height: int = 420,
) -> str:
    """A line chart as an SVG document, drawn without a browser: one line per series
    (``name``, ``color``, ``points`` of ``(x, y, minus, plus)``; error bars from ``y -
    minus`` to ``y + plus``; ``dash`` for a dotted line), a legend, ``hline`` dashed, ticks
    on the x axis at ``xticks`` (default: six evenly spaced).
    The picture a notebook keeps for readers whose notebook is not trusted."""
    from html import escape as esc

    left, right, top, bottom = 70, 250, 60, 50
    pw, ph = width - left - right, height - top - bottom
    xs = [p[0] for s in series for p in s["points"]] or [0.0, 1.0]
    lows = [p[1] - p[2] for s in series for p in s["points"]]
    highs = [p[1] + p[3] for s in series for p in s["points"]]
    ys = lows + highs + ([hline] if hline is not None else []) or [0.0, 1.0]
    x0, x1 = 0.0, max(xs) * 1.05 or 1.0
    y0, y1 = min(0.0, min(ys)), max(ys) * 1.08 or 1.0

    def px(x: float) -> float:
        return float(left + (x - x0) / (x1 - x0) * pw)

    def py(y: float) -> float:
        return float(top + ph - (y - y0) / (y1 - y0) * ph)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="20" font-size="15">{esc(title)}</text>',
        f'<text x="{left}" y="38" fill="#555">{esc(subtitle)}</text>',
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#333"/>',
    ]
    for xv in xticks if xticks is not None else [x0 + (x1 - x0) * i / 5 for i in range(6)]:
        out.append(
            f'<text x="{px(xv):.1f}" y="{top + ph + 16}" text-anchor="middle">{xv:.3g}</text>'
        )
    for i in range(6):
        yv = y0 + (y1 - y0) * i / 5
        out.append(f'<text x="{left - 6}" y="{py(yv) + 4:.1f}" text-anchor="end">{yv:.3g}</text>')
        out.append(
            f'<line x1="{left}" y1="{py(yv):.1f}" x2="{left + pw}" y2="{py(yv):.1f}" '
            'stroke="#eee"/>'
        )
    out.append(
        f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle">{esc(xlabel)}</text>'
    )
    out.append(
        f'<text transform="translate(16 {top + ph / 2}) rotate(-90)" text-anchor="middle">'
        f"{esc(ylabel)}</text>"
    )
    if hline is not None:
        out.append(
            f'<line x1="{left}" y1="{py(hline):.1f}" x2="{left + pw}" y2="{py(hline):.1f}" '
            'stroke="#7f7f7f" stroke-dasharray="6 4"/>'
        )
    for k, s in enumerate(series):
        color, pts = esc(s["color"]), sorted(s["points"])
        dash = ' stroke-dasharray="2 3"' if s.get("dash") else ""
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y, *_error in pts)
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{color}"{dash} stroke-width="2"/>'
        )
        for x, y, minus, plus in pts:
            if minus or plus:
                out.append(
                    f'<line class="error-bar" x1="{px(x):.1f}" y1="{py(y - minus):.1f}" '
                    f'x2="{px(x):.1f}" y2="{py(y + plus):.1f}" stroke="{color}"/>'
                )
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{color}"/>')
        ly = top + 14 + 18 * k
        out.append(
            f'<line x1="{left + pw + 12}" y1="{ly - 4}" x2="{left + pw + 32}" y2="{ly - 4}" '
            f'stroke="{color}"{dash} stroke-width="2"/>'
        )
        out.append(f'<text x="{left + pw + 38}" y="{ly}">{esc(s["name"])}</text>')
    out.append("</svg>")
    return "\n".join(out)


class Chart:
    """A plotly figure and its static picture in one output: Jupyter shows the figure
    where plotly renders (a trusted notebook) and the SVG ``<img>`` elsewhere."""

    def __init__(self, figure: go.Figure, svg: str, alt: str) -> None:
        self.figure, self.svg, self.alt = figure, svg, alt

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, object]:
        from absnb.views.pictures import picture_bundle

        bundle = dict(self.figure.to_plotly_json())
        plotly = {"data": bundle["data"], "layout": bundle["layout"]}
        return picture_bundle(self.svg, self.alt, {"application/vnd.plotly.v1+json": plotly})


def figure6_picture(df: pd.DataFrame, machine: str = "", paper: bool = True) -> Chart:
    """:func:`figure6_chart` with its static picture (the paper's values at its own
    intervals, scaled onto this run's largest interval, are the dotted lines)."""
    from absnb.jobs.paper_topology import PAPER_FIGURE6

    snapshots = df[df["protocol"] != "none"]
    series = _spread_series(snapshots, "interval", "relative_runtime")
    if paper:
        largest = float(snapshots["interval"].max())
        for protocol, values in PAPER_FIGURE6.items():
            scale = largest / max(values)
            series.append(
                {
                    "name": _("{name} (paper, x{k} s)").format(
                        name=name(protocol), k=f"{1 / scale:.3g}"
                    ),
                    "color": COLORS[protocol],
                    "dash": True,
                    "points": [(i * scale, v, 0.0, 0.0) for i, v in values.items()],
                }
            )
    svg = static_chart(
        series,
        title=figure6_title(),
        subtitle=caption(df, machine),
        xlabel=_("snapshot interval (s)"),
        ylabel=_("runtime / runtime without snapshots"),
        hline=1.0,
        xticks=sorted({float(i) for i in snapshots["interval"]}),
    )
    alt = _("Figure 6, measured and the paper's")
    return Chart(figure6_chart(df, machine, paper), svg, alt)


def figure7_picture(df: pd.DataFrame, machine: str = "") -> Chart:
    """:func:`figure7_chart` with its static picture."""
    svg = static_chart(
        _spread_series(df, "parallelism", "seconds"),
        title=figure7_title(df),
        subtitle=caption(df, machine),
        xlabel=_("parallelism (tasks per operator)"),
        ylabel=_("runtime (s)"),
        xticks=sorted({float(p) for p in df["parallelism"]}),
    )
    return Chart(figure7_chart(df, machine), svg, _("Figure 7, measured"))


def job_dot(job: Job) -> str:
    """The job's operators as DOT text: one box per operator with its parallelism, one
    edge per job-graph edge labelled with its partitioning; full shuffles (every task
    sends to every task) bold."""
    g = job.graph.job
    lines = ["digraph job {", "rankdir=LR;", 'node [shape=box, style=rounded, fontname="sans"];']
    for name, spec in g.operators.items():
        lines.append(f'"{name}" [label="{name}\\n{spec.kind}, x{spec.parallelism}"];')
    for e in g.edges:
        kind = type(e.partitioning).__name__.lower()
        shuffle = kind != "forward"
        style = ', penwidth=2.5, color="#d62728"' if shuffle else ""
        label = _("{kind} (shuffle)").format(kind=kind) if shuffle else kind
        lines.append(f'"{e.src}" -> "{e.dst}" [label="{label}", fontname="sans"{style}];')
    lines.append("}")
    return "\n".join(lines)


def job_picture(job: Job) -> str:
    """:func:`job_dot` drawn by Graphviz, as an ``<img>`` (shows in untrusted notebooks)."""
    from absnb.views.graph import render_svg
    from absnb.views.pictures import img_html

    svg: str = render_svg(job_dot(job))
    return img_html(svg, _("the operators of {job}").format(job=job.builder))
