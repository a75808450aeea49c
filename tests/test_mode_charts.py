"""The mode charts: one bar per mode and panel, proportional to the values, as an <img> with
a data: URL that an untrusted notebook shows."""

from __future__ import annotations

import base64
import re

import pandas as pd
import pytest

from absnb.experiments.mode_charts import charts_html, charts_svg

TABLE = pd.DataFrame(
    {
        "mode": ["aligned", "unaligned", "at-least-once"],
        "duration": [200.0, 20.0, None],
        "duplicates": [0, 0, 7],
    }
)
PANELS = [("duration", "checkpoint duration"), ("duplicates", "duplicates")]


def _bars(svg: str) -> list[float]:
    return [float(w) for w in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)"', svg)]


def test_one_bar_per_mode_and_panel_proportional_to_the_values():
    svg = charts_svg(TABLE, PANELS)
    duration, duplicates = _bars(svg)[:3], _bars(svg)[3:]
    assert duration[0] == pytest.approx(10 * duration[1], rel=0.01)
    assert duration[2] == 0  # a missing value draws no bar
    assert duplicates[:2] == [0, 0]
    assert duplicates[2] > 0
    for text in ("checkpoint duration", "aligned", "unaligned", "at-least-once", ">200<", ">7<"):
        assert text in svg


def test_the_html_is_an_img_with_the_svg_as_a_data_url():
    out = charts_html(TABLE, PANELS, "modes compared")
    assert out.startswith("<img ")
    assert 'src="data:image/svg+xml;base64,' in out
    data = re.search(r"base64,([^\"]+)", out).group(1)
    assert base64.b64decode(data).decode() == charts_svg(TABLE, PANELS)
    assert 'alt="modes compared"' in out


def test_an_unknown_column_is_named_with_the_columns_there_are():
    with pytest.raises(KeyError, match=r"no column 'seconds'.*mode, duration, duplicates"):
        charts_svg(TABLE, [("seconds", "time")])


@pytest.mark.parametrize(
    ("lang", "caption"),
    [("en", "longest alignment (steps)"), ("ko", "가장 긴 정렬 (스텝)"), ("zh", "最长对齐（步）")],
)
def test_the_captions_and_the_alt_text_are_in_the_language_set(lang: str, caption: str) -> None:
    from absnb.experiments.backpressure import SIM_PANELS
    from absnb.i18n import language

    table = pd.DataFrame({"mode": ["aligned"], **{c: [1.0] for c, _ in SIM_PANELS}})
    alt = "checkpointing under backpressure in the simulator"  # notebook 07's catalog
    with language(lang):
        page = charts_html(table, SIM_PANELS, alt)
    svg = base64.b64decode(re.search(r"base64,([^\"]+)", page).group(1)).decode()
    assert caption in svg
    assert ('alt="checkpointing' in page) == (lang == "en")
