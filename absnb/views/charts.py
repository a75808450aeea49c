"""Plotly charts of the performance experiments (:mod:`absnb.experiments.paper`).

Each function takes the DataFrame an experiment returned and draws it; nothing is
measured here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

COLORS = {
    "none": "#7f7f7f",
    "abs": "#1f77b4",
    "synchronous": "#d62728",
    "chandy-lamport": "#2ca02c",
    "abs-cyclic": "#9467bd",
}
NAMES = {
    "none": "no snapshots (baseline)",
    "abs": "ABS",
    "synchronous": "synchronous",
    "chandy-lamport": "Chandy-Lamport",
}


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
    text = f"median of {reps} interleaved repetition(s), bars: min to max"
    return f"{text}; {machine}" if machine else text


def figure6_chart(df: pd.DataFrame, machine: str = "", paper: bool = True) -> Any:
    """Runtime over the baseline's against the snapshot interval (the paper's Figure 6):
    one line per protocol, medians with min-max error bars; with ``paper``, the paper's
    digitised values (:data:`~absnb.experiments.paper.PAPER_FIGURE6`) dotted, against its
    own intervals on the top axis (a 260 s run on 10 nodes, where these are tens of
    seconds on a laptop)."""
    import plotly.graph_objects as go

    from absnb.experiments.paper import PAPER_BASELINE_SECONDS, PAPER_FIGURE6

    fig = go.Figure()
    fig.add_hline(
        y=1.0,
        line_dash="dash",
        line_color=COLORS["none"],
        annotation_text=NAMES["none"],
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
                name=f"{NAMES.get(str(protocol), str(protocol))} (measured)",
                line={"color": COLORS.get(str(protocol))},
                customdata=[(int(m["checkpoints"]), int(m["persisted_data"])) for m in more],
                hovertemplate="every %{x} s: x%{y:.2f}<br>%{customdata[0]} checkpoints"
                "<br>%{customdata[1]:,} bytes recorded in flight<extra></extra>",
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
                    name=f"{NAMES.get(protocol, protocol)} (paper, top axis)",
                    line={"color": COLORS.get(protocol), "dash": "dot"},
                    marker={"symbol": "diamond-open"},
                )
            )
    layout: dict[str, Any] = {}
    if paper:
        layout["xaxis2"] = {
            "title": f"the paper's interval (s; its baseline {PAPER_BASELINE_SECONDS:g} s)",
            "overlaying": "x",
            "side": "top",
            "rangemode": "tozero",
        }
    fig.update_layout(
        title={
            "text": "Runtime against the snapshot interval (Figure 6, the Figure 5 job)"
            f"<br><sup>{caption(df, machine)}</sup>",
        },
        xaxis_title="snapshot interval (s)",
        xaxis_rangemode="tozero",
        yaxis_title="runtime / runtime without snapshots",
        template="plotly_white",
        margin={"t": 120},
        **layout,
    )
    return fig


def channel_state_chart(df: pd.DataFrame) -> Any:
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
                name=NAMES.get(str(protocol), str(protocol)),
                marker_color=COLORS.get(str(protocol)),
            )
        )
    fig.update_layout(
        title="In-flight data recorded by the snapshots (all checkpoints of a run)",
        xaxis_title="snapshot interval (s)",
        yaxis_title="bytes",
        barmode="group",
        template="plotly_white",
    )
    return fig


def figure7_chart(df: pd.DataFrame, machine: str = "") -> Any:
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
                name=NAMES.get(str(protocol), str(protocol)),
                line={"color": COLORS.get(str(protocol))},
            )
        )
    interval = df["interval"].dropna()
    every = f" (snapshots every {interval.iloc[0]:g} s)" if len(interval) else ""
    fig.update_layout(
        title={
            "text": f"Runtime against parallelism{every} (Figure 7)"
            f"<br><sup>{caption(df, machine)}</sup>",
        },
        xaxis_title="parallelism (tasks per operator)",
        yaxis_title="runtime (s)",
        yaxis_rangemode="tozero",
        xaxis={"tickmode": "array", "tickvals": sorted(set(df["parallelism"]))},
        template="plotly_white",
    )
    return fig


def alignment_chart(df: pd.DataFrame) -> Any:
    """Histogram of alignment durations (milliseconds), with the median marked."""
    import plotly.graph_objects as go

    ms = df["alignment_duration"].astype(float) * 1000
    fig = go.Figure(go.Histogram(x=list(ms), nbinsx=30, marker_color=COLORS["abs"]))
    if len(ms):
        fig.add_vline(
            x=float(ms.median()),
            line_dash="dash",
            annotation_text=f"median {ms.median():.1f} ms",
        )
    fig.update_layout(
        title="ABS alignment durations (first barrier to last, per task snapshot)",
        xaxis_title="alignment duration (ms)",
        yaxis_title="task snapshots",
        template="plotly_white",
    )
    return fig
