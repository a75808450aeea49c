"""show_run: a real run drawn from its event log (rows made by hand, no Spark)."""

from __future__ import annotations

import base64
import html
import re
import shutil

import pytest

from absnb.core.events import EventRow
from absnb.views import show_run
from absnb.views.diagram import Scale, layout_run
from absnb.views.drawn_run import real_run
from absnb.views.graph import render_svg as dot_svg
from absnb.views.graph_frame import frame_dot
from absnb.views.run_layers import quiet_gaps, ticks
from absnb.views.run_state import moment, run_frame, tasks_of
from absnb.views.svg import CONTROL, CUT
from absnb.views.timeline_static import render_svg

A, B = "source[0]->count[0]", "source[1]->count[0]"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' not installed")


def rows() -> list[EventRow]:
    """Checkpoint 1 on source[0], source[1] -> count[0]: count[0] blocks A until B's barrier;
    a failure of count[0], and a restore of checkpoint 1, 10 s later."""
    r = [
        EventRow(1.0, 0, None, "triggered", checkpoint=1),
        EventRow(1.01, 0, "source[0]", "snapshot", checkpoint=1, sent={A: 5}, consumed={}),
        EventRow(1.02, 0, "count[0]", "barrier", A, 1),
        EventRow(1.02, 0, "count[0]", "block", A),
        EventRow(1.03, 0, "source[1]", "snapshot", checkpoint=1, sent={B: 3}, consumed={}),
        EventRow(1.05, 0, "count[0]", "barrier", B, 1),
        EventRow(1.05, 0, "count[0]", "snapshot", checkpoint=1, sent={}, consumed={A: 5, B: 3}),
        EventRow(1.05, 0, "count[0]", "unblock", A),
        EventRow(1.1, 0, None, "completed", checkpoint=1),
        EventRow(1.2, 0, "count[0]", "failure", detail="raise"),
        EventRow(11.2, 1, "count[0]", "restored", checkpoint=1),
    ]
    r += [EventRow(0.9 + i * 0.05, 0, "count[0]", "records", A, count=10) for i in range(6)]
    return sorted(r, key=lambda x: x.time)


def test_the_moment_knows_what_was_blocked_and_taken() -> None:
    m = moment(rows(), 1.04)
    assert (m.checkpoint, m.blocked, m.taken) == (1, {A}, {"source[0]", "source[1]"})
    assert m.status("count[0]") == "aligning"
    assert moment(rows(), 1.06).blocked == set()
    assert moment(rows(), 1.5).failed
    assert moment(rows(), 12).restored == 1
    assert tasks_of(rows()) == ["source[0]", "source[1]", "count[0]"]


def run_svg(rows: list[EventRow], width: float = 1024) -> str:
    """The real run's diagram, as show_run draws it."""
    return render_svg(layout_run(real_run(rows, "a run"), width=width))


def test_the_diagram_draws_lanes_alignment_cut_failure_restore_and_rates() -> None:
    svg = run_svg(rows())
    for text in ("source[0]", "count[0]", "coordinator", "checkpoint 1", "✗ count[0] fails",
                 "restored checkpoint 1", "records per second on each channel",
                 "peak 200/s"):  # fmt: skip
        assert text in svg
    assert svg.count('stroke-dasharray="3 2"') == 1  # one alignment band
    assert "≈10.0 s" in svg  # the restart's 10 quiet seconds, drawn narrow
    assert run_svg(rows()) == svg  # same log, same bytes


def test_a_quiet_stretch_is_drawn_narrow_and_time_keeps_its_order() -> None:
    gaps = quiet_gaps([0.0, 1.0, 2.0, 100.0, 101.0], -1.0, 102.0)
    sc = Scale(-1.0, 102.0, 1024, 190.0, 24.0, 0.0, 1.0, gaps, seconds=True)
    xs = [sc.x(t) for t in (0.0, 1.0, 2.0, 50.0, 100.0, 101.0)]
    assert xs == sorted(xs)
    assert xs[4] - xs[2] == pytest.approx(56.0)  # 98 s of nothing in 56 px
    assert all(not 2.0 < t < 100.0 for t in ticks(-1.0, 102.0, gaps))


def test_no_time_label_runs_into_a_gap_label() -> None:
    # a restart from 8 s to 14 s: its "≈6.0 s" and the round seconds around it
    times = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 8.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0]
    log = [EventRow(t, 0, "count[0]", "barrier", A, 1) for t in times]
    d = layout_run(real_run(log, "a run"), width=1280)
    (gap,) = [lb for lb in d.labels if lb.kind == "gap"]
    steps = [lb for lb in d.labels if lb.kind == "step"]
    assert gap.text == "≈6.0 s"
    assert not any(lb.box.overlaps(gap.box) for lb in steps)
    assert len(steps) >= 5  # the others are still labelled


def test_a_barrier_that_overtook_nothing_gets_no_mark() -> None:
    extra = [
        EventRow(1.04, 0, "count[0]", "overtaken", A, 1, count=0),
        EventRow(1.045, 0, "count[0]", "overtaken", B, 1, count=1234),
    ]
    svg = run_svg(sorted(rows() + extra, key=lambda r: r.time))
    assert "↷1,234" in svg
    assert "↷0<" not in svg


def test_counts_too_close_on_one_lane_are_drawn_as_their_sum() -> None:
    extra = [
        EventRow(1.04, 0, "count[0]", "overtaken", A, 1, count=1130),
        EventRow(1.041, 0, "count[0]", "overtaken", B, 1, count=463),  # a pixel later
        EventRow(1.04, 0, "source[0]", "overtaken", A, 1, count=7),  # another lane
    ]
    svg = run_svg(sorted(rows() + extra, key=lambda r: r.time))
    assert "↷1,593<" in svg
    assert "↷463<" not in svg
    assert "↷1,130<" not in svg
    assert "↷7<" in svg


def test_a_burst_of_one_bucket_shows_as_a_spike_and_letters_do_not_overlap() -> None:
    burst = [EventRow(3.0, 0, "count[0]", "records", B, count=500, span=0.05)]
    sinks = [
        EventRow(11.3, 1, "count[0]", "commit", detail="1 (on restore)"),
        EventRow(11.301, 1, "count[0]", "abort_txn", detail="2"),
    ]
    svg = run_svg(sorted(rows() + burst + sinks, key=lambda r: r.time))
    (line,) = re.findall(
        r'<polyline points="([^"]+)"[^>]*stroke-width="1.5"', svg.split(html.escape(B))[-1]
    )
    ys = {float(p.split(",")[1]) for p in line.split()}
    assert len(ys) == 2  # up from the axis to 10,000/s and down again: a spike
    assert ">C A<" in svg  # the commit and the abort on restore, one label


def test_a_close_up_shows_the_graph_at_a_moment_inside_it() -> None:
    later = [
        EventRow(20.0, 1, "count[0]", "block", B),
        EventRow(20.5, 1, "count[0]", "unblock", B),
    ]
    log = type("Log", (), {"rows": sorted(rows() + later, key=lambda r: r.time)})()
    assert show_run(log).at < 2  # the first alignment, by default
    assert 20.0 < show_run(log, window=(19.5, 21.0)).at < 20.5


def test_a_count_at_the_right_edge_is_drawn_to_the_left_of_its_mark() -> None:
    last = max(r.time for r in rows())
    edge = [EventRow(last + 1, 1, "count[0]", "overtaken", A, 1, count=3_141_592_653)]
    svg = run_svg(sorted(rows() + edge, key=lambda r: r.time), width=1024)
    text = "↷3,141,592,653"
    ((x, anchor),) = re.findall(rf'<text x="([\d.]+)"[^>]*text-anchor="(\w+)"[^>]*>{text}<', svg)
    right = float(x) + (9 * len(text) if anchor == "start" else 0)
    assert right <= 1024  # inside the picture


def test_the_graph_shows_the_blocked_channel_and_the_title_says_so() -> None:
    dot = frame_dot(run_frame(rows(), 1.04))
    assert "checkpoint 1, 2 tasks have their part, 1 channel(s) blocked" in dot
    assert dot.count("<B>blocked</B></FONT>> color=") == 1  # the blocked channel
    assert dot.count("snapshot taken") == 2
    assert '"source[0]" -> "count[0]" [label=<' in dot
    assert "failed, waiting for the restart" in frame_dot(run_frame(rows(), 5.0))


@needs_dot
def test_the_graph_is_drawn_as_the_simulator_s() -> None:
    svg = dot_svg(frame_dot(run_frame(rows(), 1.04)))
    assert "snapshot taken" in svg
    assert svg.count('stroke-width="2.5"') >= 1


def test_show_run_is_a_picture_an_untrusted_notebook_shows() -> None:
    class Run:  # what show_run reads of a SparkRun
        protocol, graph = "abs", None
        log = type("Log", (), {"rows": rows()})()

    view = show_run(Run(), window=(0.99, 1.11))
    bundle = view._repr_mimebundle_()
    urls = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', bundle["text/html"])
    assert len(urls) == 2  # the diagram and the graph
    diagram = base64.b64decode(urls[0]).decode()
    assert "checkpoint 1" in diagram
    assert "fails" not in diagram  # outside the window
    assert view.at == pytest.approx(1.02, abs=1e-3)  # inside the alignment
    with pytest.raises(TypeError, match="needs a SparkRun"):
        show_run(object())


class _WordCountRun:  # what show_run and simulate_like read of a SparkRun
    protocol = "abs"
    graph = type("Graph", (), {"name": "word_count"})()
    log = type("Log", (), {"rows": rows()})()


def _pictures(html: str) -> list[str]:
    urls = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    return [base64.b64decode(u).decode() for u in urls]


def test_the_simulated_run_stands_beside_the_real_one_in_steps_with_the_same_colours() -> None:
    view = show_run(_WordCountRun(), simulated=True)
    html = view.diagrams_html()
    assert html.startswith('<div class="absnb-run-beside" style="display:flex')
    real, simulated = _pictures(html)
    assert 'width="560"' in real
    assert 'width="560"' in simulated
    assert re.search(r">[\d.]+ s</text>", real)
    assert ">step " not in real
    assert ">step</text>" in simulated  # the simulator's own diagram: steps, every message
    assert "<title>source[0]-&gt;count[0]: " in simulated  # each message an arrow
    assert not re.search(r">[\d.]+ s</text>", simulated)
    assert min(map(int, re.findall(r'font-size="(\d+)"', real + simulated))) >= 14
    for colour in (CONTROL, CUT):  # barriers and cuts in the same colours
        assert colour in real
        assert colour in simulated
    full = _pictures(view._repr_mimebundle_()["text/html"])
    assert len(full) == 3  # the two diagrams and the graph under them
    assert show_run(_WordCountRun()).diagrams_html().count("<img") == 1


def test_the_counterpart_is_seeded_and_bad_simulated_input_is_named() -> None:
    a = show_run(_WordCountRun(), simulated=True).simulated
    assert a is not None
    assert a == show_run(_WordCountRun(), simulated=True).simulated
    assert {r.kind for r in a.rows} >= {"triggered", "snapshot", "completed", "block"}
    with pytest.raises(TypeError, match=r"simulated is \(stepper.trace, stepper.world\)"):
        show_run(_WordCountRun(), simulated="yes")
    log = type("Log", (), {"rows": rows()})()
    with pytest.raises(ValueError, match="names no protocol or job"):
        show_run(log, simulated=True)


def test_the_widget_s_slider_redraws_the_graph_beside_the_simulated_run() -> None:
    box = show_run(_WordCountRun(), simulated=True).widget()
    diagrams, slider, graph = box.children
    assert diagrams.value.count("<img") == 2
    before = graph.value
    slider.value = 5.0  # count[0] has failed by then
    assert graph.value != before
    assert "failed" in _pictures(graph.value)[0]
