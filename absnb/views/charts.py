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


def figure6_chart(df: pd.DataFrame) -> Any:
    """Runtime against the snapshot interval, one line per protocol and the baseline as a
    horizontal line (the paper's Figure 6); hover shows Chandy-Lamport's channel state."""
    import plotly.graph_objects as go

    fig = go.Figure()
    base = df[df["protocol"] == "none"]["seconds"].median()
    fig.add_hline(
        y=base,
        line_dash="dash",
        line_color=COLORS["none"],
        annotation_text=NAMES["none"],
        annotation_position="top left",
    )
    snapshots = df[df["protocol"] != "none"]
    for protocol, part in snapshots.groupby("protocol", sort=False):
        m = part.groupby("interval")[["seconds", "persisted_data", "checkpoints"]].median()
        fig.add_trace(
            go.Scatter(
                x=list(m.index),
                y=list(m["seconds"]),
                mode="lines+markers",
                name=NAMES.get(str(protocol), str(protocol)),
                line={"color": COLORS.get(str(protocol))},
                customdata=list(zip(m["checkpoints"], m["persisted_data"], strict=True)),
                hovertemplate="every %{x} s: %{y:.2f} s<br>%{customdata[0]} checkpoints"
                "<br>%{customdata[1]:,} bytes recorded in flight<extra></extra>",
            )
        )
    fig.update_layout(
        title="Runtime against the snapshot interval (Figure 6)",
        xaxis_title="snapshot interval (s)",
        yaxis_title="runtime (s)",
        yaxis_rangemode="tozero",
        template="plotly_white",
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


def figure7_chart(df: pd.DataFrame) -> Any:
    """Runtime against parallelism at a fixed interval (the paper's Figure 7)."""
    import plotly.graph_objects as go

    m = _median(df, "parallelism", "seconds")
    fig = go.Figure()
    for protocol, part in m.groupby("protocol", sort=False):
        fig.add_trace(
            go.Scatter(
                x=list(part["parallelism"]),
                y=list(part["seconds"]),
                mode="lines+markers",
                name=NAMES.get(str(protocol), str(protocol)),
                line={"color": COLORS.get(str(protocol))},
            )
        )
    interval = df["interval"].dropna()
    every = f" (snapshots every {interval.iloc[0]:g} s)" if len(interval) else ""
    fig.update_layout(
        title=f"Runtime against parallelism{every} (Figure 7)",
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
