"""The static pictures of the performance charts: what an untrusted notebook shows."""

from __future__ import annotations

import re

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from absnb.jobs.paper_topology import SHUFFLES, paper_topology
from absnb.views import charts


def _fig6(medians: dict[tuple[str, float], list[float]]) -> pd.DataFrame:
    rows = [{"protocol": "none", "interval": None, "relative_runtime": 1.0, "repeat": 0}]
    for (protocol, interval), values in medians.items():
        for r, v in enumerate(values):
            rows.append(
                {
                    "protocol": protocol,
                    "interval": interval,
                    "relative_runtime": v,
                    "repeat": r,
                    "checkpoints": 1,
                    "persisted_data": 0,
                    "seconds": v,
                    "parallelism": 2,
                }
            )
    return pd.DataFrame(rows)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.floats(0.5, 3.0), min_size=3, max_size=3),
    st.lists(st.floats(0.5, 3.0), min_size=3, max_size=3),
)
def test_the_figure6_picture_draws_every_run_as_median_and_range(a, b) -> None:
    df = _fig6({("abs", 0.5): a, ("synchronous", 0.5): b, ("abs", 1.0): a[::-1]})
    chart = charts.figure6_picture(df, "test machine")
    svg = chart.svg
    # two measured lines and the paper's two, one legend entry each
    assert len(re.findall("<polyline", svg)) == 4
    assert "ABS (measured)" in svg
    assert "synchronous (paper" in svg
    # an error bar per measured point whose runs differ
    bars = sum(1 for vals in (a, b, a[::-1]) if max(vals) > min(vals))
    assert svg.count('class="error-bar"') == bars
    assert "median of 3 interleaved repetition(s)" in svg
    assert "test machine" in svg
    bundle = chart._repr_mimebundle_()
    assert 'src="data:image/svg+xml;base64,' in bundle["text/html"]
    assert "application/vnd.plotly.v1+json" in bundle


def test_the_job_picture_has_six_operators_and_three_shuffles() -> None:
    dot = charts.job_dot(paper_topology(parallelism=3))
    assert len(re.findall(r'^"\w+" \[label=', dot, re.M)) == 6
    shuffles = re.findall(r'^"(\w+)" -> "(\w+)" \[label="\w+ \(shuffle\)"', dot, re.M)
    assert sorted(shuffles) == sorted(SHUFFLES)
    assert dot.count(", x3") == 6
