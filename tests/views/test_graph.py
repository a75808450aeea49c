"""The graph view: DOT text of a world (golden files and targeted checks), and SVG.

Golden files live in ``tests/views/golden``; regenerate them with
``ABSNB_UPDATE_GOLDEN=1 python3 -m pytest tests/views`` and read every change by eye.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import absnb
from absnb.core.graph import JobGraph
from absnb.core.job import Job
from absnb.core.messages import Record
from absnb.operators import KeyedCount, Source
from absnb.views.graph import GraphvizNotFoundError, graph_svg, render_svg, show_graph, to_dot
from absnb.views.graph_text import channel_contents, short_state, task_status
from absnb.views.palette import BLOCKED_COLOUR, RECORDING_COLOUR, STATUS_COLOURS
from tests.views.worlds import SCENARIOS, SEED_001, bank_long_channel, bank_marker_at_b, build

GOLDEN = Path(__file__).parent / "golden"
ROOT = Path(__file__).resolve().parents[2]
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' not installed")


def check_golden(name: str, text: str) -> None:
    """Compare ``text`` with ``golden/<name>.dot``; rewrite it with ABSNB_UPDATE_GOLDEN=1."""
    path = GOLDEN / f"{name}.dot"
    if os.environ.get("ABSNB_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path}: run with ABSNB_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


def edge_line(dot: str, channel: str) -> str:
    """The DOT line of one channel's edge (``"A->B"``)."""
    src, dst = channel.split("->")
    (line,) = [ln for ln in dot.splitlines() if ln.strip().startswith(f'"{src}" -> "{dst}"')]
    return line


def node_line(dot: str, task: str) -> str:
    (line,) = [ln for ln in dot.splitlines() if ln.strip().startswith(f'"{task}" [')]
    return line


# -- golden files ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_to_dot_matches_golden_file(name: str) -> None:
    check_golden(name, to_dot(SCENARIOS[name]()))


# -- targeted checks ------------------------------------------------------------------------
def test_blocked_channel_is_red_bold_with_buffered_count() -> None:
    dot = to_dot(SCENARIOS["word_count_blocked"]())
    line = edge_line(dot, "source[0]->count[0]")
    assert f'color="{BLOCKED_COLOUR}"' in line
    assert "penwidth=2.5" in line
    assert "blocked: 2 buffered" in line
    assert "be<BR/>quick" in line  # one message a line, head first
    for other in ("source[0]->count[1]", "source[1]->count[0]", "count[0]->sink[0]"):
        assert "blocked" not in edge_line(dot, other)
        assert BLOCKED_COLOUR not in edge_line(dot, other)


def test_short_labels_say_the_same_in_fewer_characters() -> None:
    """``short=True`` (the panes of compare): the title names the protocol first, the
    groups of tasks are unlabelled, a blocked channel says ``blocked: n``, a barrier is
    ``▌n``, a node's lines wrap at 15 characters and keep ``taken: n`` together; what is
    drawn is the same."""
    world = SCENARIOS["word_count_blocked"]()
    dot = to_dot(world, short=True, with_legend=False)
    assert "<B>abs</B> · step 8<BR/>completed: 0 · pending: 1" in dot
    assert dot.count("label=<>;") == 3
    assert "parallelism" not in dot
    blocked = edge_line(dot, "source[0]->count[0]")
    assert "blocked: 2</B>" in blocked
    assert "buffered" not in blocked
    assert f'color="{BLOCKED_COLOUR}"' in blocked
    assert "be<BR/>quick" in blocked
    assert "<B>▌1</B>" in edge_line(dot, "source[0]->count[1]")
    assert "barrier" not in dot
    assert "<I>aligning 1:\u00a01/2</I>" in node_line(dot, "count[0]")
    halted = node_line(to_dot(SCENARIOS["synchronous_halted"](), short=True), "source[0]")
    assert "<I>halted,</I><BR/><I>taken:\u00a01</I>" in halted
    logging = edge_line(to_dot(SCENARIOS["cyclic_logging"](), short=True), "step->head")
    assert "logging: 1</B>" in logging
    assert "logged" not in logging


@needs_dot
def test_compact_graphs_fit_three_side_by_side_at_every_step() -> None:
    """compare's three default panes on word count: at every step of a seeded run their
    compact graphs are together at most 1,200 units wide, so that in a cell 800 pixels
    wide (1280x720 with JupyterLab's file browser open) their 18-point labels are drawn
    at least 12 pixels high (18 x 800 / 1,200)."""
    from absnb.views.graph import render_svg_fast
    from absnb.views.pictures import svg_size
    from absnb.views.widgets import COMPACT

    job = absnb.word_count()
    widths = []
    for protocol in ("abs", "chandy-lamport", "synchronous"):
        world = absnb.World(job, protocol, checkpoint_interval=4)
        stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=1))
        widths.append([svg_size(render_svg_fast(to_dot(world, **COMPACT)))[0]])
        for event in stepper.run():
            widths[-1].append(svg_size(render_svg_fast(to_dot(stepper.world, **COMPACT)))[0])
            assert event is not None
    together = [sum(w) for w in zip(*widths, strict=False)]
    assert len(together) > 30
    assert max(together) <= 1_200, max(together)


def test_aligning_task_shows_barriers_so_far() -> None:
    world = SCENARIOS["word_count_blocked"]()
    assert task_status(world, "count[0]") == ("aligning", "aligning checkpoint 1 (1/2 barriers)")
    assert task_status(world, "count[1]") == ("idle", "not in a snapshot")
    assert task_status(world, "source[0]") == ("taken", "state taken for checkpoint 1")


def test_back_edges_are_dashed_and_only_they() -> None:
    world = SCENARIOS["cyclic_logging"]()
    dot = to_dot(world)
    assert [str(c) for c in world.graph.back_edges] == ["step->head"]
    assert "style=dashed" in edge_line(dot, "step->head")
    for c in ("source->head", "head->step", "step->sink"):
        assert "dashed" not in edge_line(dot, c)


def test_backup_log_is_marked_with_its_count() -> None:
    dot = to_dot(SCENARIOS["cyclic_logging"]())
    line = edge_line(dot, "step->head")
    assert "logging: 1 logged" in line
    assert f'color="{RECORDING_COLOUR}"' in line
    assert "(5, 16, 1)" in line  # in flight behind the logged record


def test_marker_is_distinct_from_records() -> None:
    line = edge_line(to_dot(bank_marker_at_b()), "B->A")
    contents = line.split("</B></FONT><BR/>", 1)[1]  # after the "recording" note
    assert contents.startswith("1,000<BR/>2,000<BR/>")  # head first, plain records, one a line
    assert "<B>◆marker 1</B>" in contents
    assert "barrier" not in line  # Chandy-Lamport sends markers, never barriers
    assert "<B>1,000" not in line
    assert "<B>2,000" not in line


def test_barrier_is_distinct_from_records() -> None:
    line = edge_line(to_dot(SCENARIOS["word_count_blocked"]()), "source[1]->count[0]")
    assert re.search(r"to<BR/>be<BR/><FONT COLOR=\"#[0-9a-f]{6}\"><B>▌barrier 1</B></FONT>>", line)
    assert "marker" not in line


def test_recording_channel_counts_what_arrived() -> None:
    world = build(absnb.bank_transfer(), "chandy-lamport", [*SEED_001, "deliver B->A"])
    line = edge_line(to_dot(world), "B->A")
    assert "recording: 1 recorded" in line
    assert "2,000<BR/><FONT" in line  # 1,000 consumed, 2,000 and the marker still in flight
    assert "recording" not in edge_line(to_dot(world), "A->B")


def test_long_channel_is_shortened() -> None:
    world = bank_long_channel()
    line = edge_line(to_dot(world), "B->A")
    assert "50<BR/>100<BR/>150<BR/>… +7 more" in line
    assert "200" not in line
    short = edge_line(to_dot(world, max_messages=2), "B->A")
    assert "label=<50<BR/>100<BR/>… +8 more>" in short
    full = edge_line(to_dot(world, max_messages=10), "B->A")
    assert "<BR/>500>" in full
    assert "more" not in full


def test_channel_contents() -> None:
    assert channel_contents([Record("y" * 100)]) == "y" * 39 + "…"
    assert channel_contents([Record(1), Record(2)], 0) == "… +2 more"
    with pytest.raises(ValueError, match="max_messages"):
        channel_contents([], -1)


def test_failed_and_restoring_tasks() -> None:
    failed = SCENARIOS["word_count_failed"]()
    assert task_status(failed, "count[1]") == ("failed", "FAILED")
    line = node_line(to_dot(failed), "count[1]")
    assert STATUS_COLOURS["failed"] in line
    assert "penwidth=4" in line  # not by colour alone: a heavy border and the word
    assert "<I>FAILED</I>" in line
    recovering = SCENARIOS["word_count_partial_recovery"]()
    assert task_status(recovering, "count[1]") == ("restoring", "restoring (replaying 1 input)")
    assert task_status(recovering, "count[0]") == ("idle", "not in a snapshot")


def test_synchronous_sources_are_halted() -> None:
    world = SCENARIOS["synchronous_halted"]()
    kind, text = task_status(world, "source[1]")
    assert (kind, text) == ("halted", "halted (state taken for checkpoint 1)")


def test_short_state() -> None:
    assert short_state(12_000) == "12,000"
    assert short_state({"a": 2, "b": 1}) == "a:2 b:1"
    assert short_state({str(i): i for i in range(7)}) == "0:0 1:1 2:2 3:3 … (+3 more)"
    assert short_state([("to", 1), ("be", 2)]) == "(to, 1) (be, 2)"
    assert short_state({3, 1, 2}, max_items=2) == "1 2 … (+1 more)"
    assert short_state(None) == ""
    assert short_state("x" * 100).endswith("…")
    assert len(short_state("x" * 100)) == 40


def test_user_text_is_escaped() -> None:
    g = JobGraph('a<b>&"c"')
    g.add('in"put', "source", Source())
    g.add("count<&>", "operator", KeyedCount())
    g.connect('in"put', "count<&>")
    job = Job("custom", {}, g.compile(), {})
    job.inputs = {job.graph.task('in"put'): ("<i>&amp;", "x")}
    world = build(job, "abs", ['emit in"put', 'deliver in"put->count<&>', 'emit in"put'])
    dot = to_dot(world)
    assert 'digraph "a<b>&\\"c\\"" {' in dot
    assert '"in\\"put" -> "count<&>"' in dot
    assert "<B>count&lt;&amp;&gt;</B>" in dot
    assert "&lt;i&gt;&amp;amp;:1" in dot  # the word counted, escaped
    assert "label=<x>" in dot  # the record in flight
    assert "<i>" not in dot
    if shutil.which("dot"):
        svg = render_svg(dot)
        assert "count&lt;&amp;&gt;" in svg


# -- determinism ------------------------------------------------------------------------------
def test_same_world_twice_gives_the_same_dot() -> None:
    for make in SCENARIOS.values():
        assert to_dot(make()) == to_dot(make())


def test_to_dot_does_not_change_the_world() -> None:
    world = SCENARIOS["cyclic_logging"]()
    key, clock = world.key(), world.clock
    to_dot(world)
    assert world.key() == key
    assert world.clock == clock


_CHILD = """
import sys
from tests.views.worlds import SCENARIOS
from absnb.views.graph import to_dot
sys.stdout.buffer.write("".join(to_dot(SCENARIOS[n]()) for n in sorted(SCENARIOS)).encode())
"""


def test_dot_is_the_same_in_another_process_with_another_hash_seed() -> None:
    here = "".join(to_dot(SCENARIOS[n]()) for n in sorted(SCENARIOS))
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD], cwd=ROOT, env=env, capture_output=True, check=True
    )
    assert child.stdout.decode() == here


# -- rendering ------------------------------------------------------------------------------
@needs_dot
def test_render_svg_names_every_task() -> None:
    world = SCENARIOS["word_count_blocked"]()
    svg = graph_svg(world)
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg
    for t in world.graph.tasks:
        assert str(t) in svg
    assert "blocked: 2 buffered" in svg


@needs_dot
def test_graph_view_in_a_notebook() -> None:
    view = show_graph(bank_marker_at_b())
    assert repr(view) == "<GraphView bank_transfer chandy-lamport step=6>"
    assert "<svg" in view.svg()
    bundle = view._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}  # no raw SVG: untrusted shows html
    assert bundle["text/plain"] == "execution graph: bank_transfer chandy-lamport, step 6"
    assert "<GraphView" not in bundle["text/plain"]
    src = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', bundle["text/html"])
    assert src is not None
    assert base64.b64decode(src[1]).decode() == view.svg()


def test_missing_dot_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("graphviz")
    monkeypatch.setenv("PATH", "")
    with pytest.raises(GraphvizNotFoundError, match="apt-get install graphviz"):
        render_svg("digraph { a -> b }")


@needs_dot
def test_the_long_lived_dot_draws_what_a_fresh_dot_draws() -> None:
    from absnb.views import dot_process

    def positions(svg: str) -> dict[str, str]:
        found = re.findall(
            r"<title>([^<]+)</title>\n<(?:path|polygon)[^>]*? (?:d|points)=\"([^\"]+)", svg
        )
        return dict(found)

    for name in sorted(SCENARIOS):
        dot = to_dot(SCENARIOS[name]())
        fast = dot_process.render(dot)
        assert fast is not None
        assert positions(fast) == positions(render_svg(dot)), name
    stopped = dot_process._proc
    assert dot_process.render("digraph { a -> }") is None  # rejected: no SVG, no wait
    assert "<svg" in (dot_process.render("digraph { x -> y }") or "")  # and it goes on
    assert stopped is not None
    assert stopped is not dot_process._proc
    assert stopped.stdin is not None
    assert stopped.stdout is not None
    assert stopped.stdin.closed  # no pipe left to be warned unclosed at exit
    assert stopped.stdout.closed


@needs_dot
def test_a_long_lived_dot_that_died_is_replaced_and_its_pipes_closed() -> None:
    from absnb.views import dot_process

    assert dot_process.render("digraph { x -> y }") is not None
    dead = dot_process._proc
    assert dead is not None
    dead.kill()
    dead.wait()
    assert "<svg" in (dot_process.render("digraph { x -> y }") or "")
    assert dot_process._proc is not dead
    assert dead.stdin is not None
    assert dead.stdout is not None
    assert dead.stdin.closed
    assert dead.stdout.closed


@needs_dot
def test_the_long_lived_dot_is_outside_the_process_group() -> None:
    """ipykernel, shutting its kernel down, signals every child in its process group until
    none is left, and a child it cannot see gone (unreaped) kept each shutdown waiting
    2.5 s before jupyter_client sent SIGTERM, which ran no exit handler: ``dot`` lives in
    a session of its own."""
    from absnb.views import dot_process

    assert dot_process.render("digraph { x -> y }") is not None
    proc = dot_process._proc
    assert proc is not None
    assert os.getpgid(proc.pid) != os.getpgrp()


@needs_dot
def test_tasks_of_an_operator_stay_in_index_order_at_every_step() -> None:
    def left(svg: str, task: str) -> float:
        m = re.search(re.escape(f"<title>{task}</title>") + r'\n<path[^>]*d="M([\d.-]+)', svg)
        return float(m[1])

    for protocol in ("abs", "chandy-lamport", "synchronous"):
        stepper = absnb.Stepper(
            absnb.World(absnb.word_count(), protocol, checkpoint_interval=4),
            absnb.RandomScheduler(seed=3),
        )
        for _ in range(25):
            svg = render_svg(to_dot(stepper.world))
            for op in ("source", "count", "sink"):
                assert left(svg, f"{op}[0]") < left(svg, f"{op}[1]"), (protocol, op)
            stepper.step()


def test_a_graph_shows_an_english_label_in_every_language() -> None:
    """``GraphView.shows`` answers for the label as English writes it, so that a notebook's
    assertion holds in Korean and Chinese; the picture itself speaks the language set."""
    import absnb
    from absnb.i18n import gettext, language
    from absnb.views.graph import show_graph

    stepper = absnb.Stepper(
        absnb.World(absnb.word_count(), "abs", checkpoint_interval=4),
        absnb.RandomScheduler(seed=3),
    )
    for _ in range(9):
        stepper.step()
    english = show_graph(stepper.world)
    assert english.shows("taken: 1")
    assert "taken: 1" in english.dot
    assert not english.shows("aligning 1: 1/2")
    with language("ko"):
        korean = show_graph(stepper.world)
    assert korean.shows("taken: 1")
    assert not korean.shows("aligning 1: 1/2")
    assert "taken: 1" not in korean.dot
    assert gettext("taken: {ids}", "ko").format(ids="1") in korean.dot


def test_a_widget_made_with_lang_speaks_it_whatever_the_language_set() -> None:
    """``stepper_widget(..., lang="zh")`` and ``compare(..., lang="ko")`` keep their
    language on every redraw while the notebook's language is English."""
    import absnb
    from absnb.i18n import get_language, gettext
    from absnb.views import compare, stepper_widget

    assert get_language() == "en"
    widget = stepper_widget(absnb.word_count(), "abs", checkpoint_interval=4, lang="zh")
    assert widget.controls.step.description == gettext("Step ▶", "zh")
    widget.step()
    assert gettext("step {n}", "zh").format(n=1) in widget.status.value
    describe = gettext(
        "stepper widget: {graph}, protocol {protocol}, step {n} "
        "(run the notebook to step through it)",
        "zh",
    )
    assert widget.describe() == describe.format(graph="word_count", protocol="abs", n=1)
    panes = compare(absnb.word_count(), ("abs", "synchronous"), lang="ko")
    assert panes.controls.step.description == gettext("Step ▶", "ko")
    assert get_language() == "en"
