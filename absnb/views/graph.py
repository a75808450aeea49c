"""The execution graph in its current state: Graphviz DOT text (pure) and SVG.

:func:`to_dot` reads a :class:`~absnb.sim.world.World` and returns DOT source: one node per
task (name, operator state, source offset, snapshot status, coloured by status) grouped
by operator, and one edge per channel labelled with what is in flight on it, head first.
Blocked channels are red and bold, channels being recorded (Chandy-Lamport channel
state, Alg. 2 backup log) blue, back-edges dashed. The text depends only on the world's
state, never on set order or object ids, so it can be compared with golden files.

Only :func:`render_svg` needs Graphviz (the ``graphviz`` package and the ``dot`` binary);
it is imported when called, so ``to_dot`` works without it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, TypedDict

from absnb.core.errors import AbsnbError
from absnb.core.ids import ChannelId, TaskId
from absnb.i18n import get_language, language
from absnb.i18n import gettext as _
from absnb.protocols.two_phase_commit import TwoPhaseCommitState
from absnb.views.graph_frame import Edge, Frame, Node, OperatorGroup, escape, frame_dot
from absnb.views.graph_text import (
    LINE_CHARS,
    SHORT_LINE_CHARS,
    SHORT_NODE_CHARS,
    channel_contents,
    node_status,
    recording_notes,
    short_state,
    task_status,
    transaction_lines,
    wrap,
)
from absnb.views.legend import legend
from absnb.views.palette import (
    BLOCKED_COLOUR,
    RECORDING_COLOUR,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from absnb.sim.world import World


class DotOptions(TypedDict, total=False):
    """The keywords of :func:`to_dot`, which the views pass on."""

    max_messages: int
    max_state_items: int | None
    with_legend: bool
    short: bool


class GraphvizNotFoundError(AbsnbError, RuntimeError):
    """Graphviz (the ``dot`` program or the ``graphviz`` package) is not installed."""


def _task_node(world: World, t: TaskId, max_state_items: int | None, short: bool = False) -> Node:
    st = world.tasks[t]
    kind, status = task_status(world, t)
    width = SHORT_NODE_CHARS if short else LINE_CHARS
    lines = [f"<B>{escape(str(t))}</B>"]
    if isinstance(st.state, TwoPhaseCommitState):
        lines.extend(escape(line) for line in transaction_lines(st.state))
    elif state := short_state(st.state, max_state_items):
        lines.extend(escape(part) for part in wrap(state, width))
    if world.graph.kind(t) in ("source", "process"):
        lines.append(_("offset {n:,}/{of:,}").format(n=st.offset, of=len(world.inputs[t])))
    if note := node_status(kind, status):
        if short:  # a wrapped line keeps "taken: 1" together (a no-break space)
            note = note.replace(": ", ":\u00a0")
        lines.extend(f"<I>{escape(part)}</I>" for part in wrap(note, width))
    return Node(str(t), "<BR/>".join(lines), kind)


def _channel_edge(
    world: World, c: ChannelId, recording: dict[ChannelId, str], n: int, short: bool = False
) -> Edge:
    q = world.channels[c]
    lines: list[str] = []
    attrs: list[str] = []
    blocked = c in world.blocked
    if blocked:
        held = (_("blocked: {n:,}") if short else _("blocked: {n:,} buffered")).format(n=len(q))
        lines.append(f'<FONT COLOR="{BLOCKED_COLOUR}"><B>{held}</B></FONT>')
        attrs += [f'color="{BLOCKED_COLOUR}"', "penwidth=2.5"]
    note = recording.get(c)
    if note is not None:
        width = SHORT_LINE_CHARS if short else LINE_CHARS
        lines.extend(
            f'<FONT COLOR="{RECORDING_COLOUR}"><B>{escape(part)}</B></FONT>'
            for part in wrap(note, width)
        )
        if not blocked:
            attrs += [f'color="{RECORDING_COLOUR}"', "penwidth=2"]
    if q:
        lines.append(channel_contents(q, n, per_line=1, short=short))
    if c in world.graph.back_edges and _shows_loops(world):
        attrs += ["style=dashed", "constraint=false"]
    if lines:
        attrs.insert(0, "label=<" + "<BR/>".join(lines) + ">")
    return Edge(str(c.src), str(c.dst), tuple(attrs))


def _shows_loops(world: World) -> bool:
    """Back-edges are drawn dashed in dataflows (with sources) and whenever an ABS protocol
    treats loop inputs apart; in a plain process graph under Chandy-Lamport they are
    just an accident of the search order."""
    graph = world.graph
    has_sources = any(graph.kind(t) == "source" for t in graph.tasks)
    return has_sources or world.protocol.capabilities.treats_loops_apart


def _title(world: World, short: bool = False) -> str:
    """The graph's title: job, protocol, step and the coordinator's checkpoints; ``short``
    names the protocol first and counts completed checkpoints in one word."""
    coord = world.coordinator
    done = len(coord.completed)
    head = [f"<B>{escape(world.graph.name)}</B>", escape(world.protocol.name)]
    step = _("step {n:,}").format(n=world.clock)
    completed = _("1 checkpoint completed") if done == 1 else _("{n} checkpoints completed")
    parts = [step, completed.format(n=done)]
    if short:
        head = [f"<B>{escape(world.protocol.name)}</B>", step]
        parts = [_("completed: {n}").format(n=done)]
    if coord.pending:
        ids = ", ".join(str(n) for n in sorted(coord.pending))
        parts.append(_("pending: {ids}").format(ids=ids))
    if coord.declined:
        by = _("{n} by {task}")
        ids = ", ".join(by.format(n=n, task=escape(str(t))) for n, t, _why in coord.declined)
        parts.append(_("declined: {ids}").format(ids=ids))
    if coord.expired:
        ids = ", ".join(str(n) for n in coord.expired)
        parts.append(_("timed out: {ids}").format(ids=ids))
    return " · ".join(head) + "<BR/>" + " · ".join(parts)


def to_dot(
    world: World,
    *,
    max_messages: int = 3,
    max_state_items: int | None = 3,
    with_legend: bool = True,
    short: bool = False,
) -> str:
    """DOT source of ``world``'s execution graph in its current state (pure, deterministic).

    Drawn top to bottom, every label :data:`~absnb.views.palette.FONT_SIZE` points and long texts
    wrapped, so the graph of a teaching job stays narrower than a notebook cell (read from the back
    of a classroom, see issue 11).

    Args:
        world: the world to draw; it is only read.
        max_messages: in-flight messages shown per channel (head first) before
            ``… +n more``.
        max_state_items: entries of a dict, list or set state shown before
            ``… (+n more)`` (None: all).
        with_legend: draw the legend of node fills and channel marks under the graph.
        short: shorter labels, for graphs side by side: a title naming the protocol first,
            unlabelled groups of tasks, narrower lines, ``blocked: n`` and
            ``recording: n`` on channels, control messages as ``▌1`` and ``◆1``.
    """
    return frame_dot(world_frame(world, max_messages, max_state_items, with_legend, short))


def world_frame(
    world: World,
    max_messages: int = 3,
    max_state_items: int | None = 3,
    with_legend: bool = True,
    short: bool = False,
) -> Frame:
    """The frame of ``world``'s execution graph now (arguments as for :func:`to_dot`)."""
    graph = world.graph
    label = _title(world, short)
    if with_legend:
        label = (
            f'<TABLE BORDER="0" CELLSPACING="0"><TR><TD>{label}</TD></TR>'
            f"<TR><TD>{legend(world)}</TD></TR></TABLE>"
        )
    operators = []
    for name, spec in graph.operators.items():
        nodes = tuple(_task_node(world, t, max_state_items, short) for t in graph.tasks_of(name))
        # short: no label (the tasks' names say the operator), so the graph is lower
        about = _("{name} ({kind}, parallelism {n})").format(
            name=escape(name), kind=escape(spec.kind), n=spec.parallelism
        )
        operators.append(
            OperatorGroup(None if spec.parallelism == 1 else "" if short else about, nodes)
        )
    recording = recording_notes(world, short)
    edges = tuple(_channel_edge(world, c, recording, max_messages, short) for c in graph.channels)
    return Frame(graph.name, label, tuple(operators), edges)


# -- rendering --------------------------------------------------------------------------------
_INSTALL = (
    "install Graphviz: `apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` "
    "(macOS) or `conda install -c conda-forge graphviz`, plus the Python package "
    "(`pip install graphviz`); or use to_dot() and render the DOT text elsewhere"
)


def render_svg(dot: str) -> str:
    """Render DOT source to SVG text with Graphviz (a new ``dot`` process: the same
    DOT always gives the same bytes, so notebooks can store and compare it).

    Raises:
        GraphvizNotFoundError: the ``graphviz`` package or the ``dot`` program is missing.
    """
    try:
        import graphviz
    except ImportError:
        raise GraphvizNotFoundError(
            f"the Python package 'graphviz' is not installed: {_INSTALL}"
        ) from None
    try:
        svg: bytes = graphviz.Source(dot).pipe(format="svg")  # graphviz has no types
        return svg.decode("utf-8")
    except graphviz.ExecutableNotFound:
        raise GraphvizNotFoundError(
            f"the Graphviz program 'dot' was not found on PATH: {_INSTALL}"
        ) from None


@functools.lru_cache(maxsize=512)
def render_svg_fast(dot: str) -> str:
    """:func:`render_svg` through one long-lived ``dot`` process
    (:mod:`absnb.views.dot_process`): about 5 ms a graph instead of 40-80 ms, for redraws.
    The same drawing, though ``dot`` may order a stream's clusters differently in the
    text; falls back to :func:`render_svg`. Remembers the latest 512 drawings, so Back and
    the go-to slider redraw a step already seen without Graphviz, as it was drawn."""
    from absnb.views import dot_process

    svg = dot_process.render(dot)
    return svg if svg is not None else render_svg(dot)


def graph_svg(world: World, **kw: Unpack[DotOptions]) -> str:
    """SVG of ``world``'s execution graph (keywords as for :func:`to_dot`)."""
    return render_svg(to_dot(world, **kw))


class GraphView:
    """A drawing of a world at one moment, for a notebook.

    The DOT text is taken when the view is made; later steps of the world do not change it.
    Its output is the SVG as an ``<img>`` in ``text/html`` (what JupyterLab, GitHub and
    nbviewer show even for an untrusted notebook) and a one-line ``text/plain``.
    """

    kind = "execution graph"

    def __init__(self, world: World, **kw: Unpack[DotOptions]) -> None:
        self.dot = to_dot(world, **kw)
        self._english = self.dot
        if get_language() != "en":
            with language("en"):
                self._english = to_dot(world, **kw)
        self._name = f"{world.graph.name} {world.protocol.name} step={world.clock}"

    def shows(self, text: str) -> bool:
        """Whether the graph shows ``text``, a label as the English graph writes it
        (``"aligning 1: 1/2"``, ``"blocked: 2 buffered"``): in Korean or Chinese, whether
        it shows that label's translation. A notebook's assertion then holds in every
        language."""
        return text in self._english

    def svg(self) -> str:
        """The SVG text (Graphviz)."""
        return render_svg(self.dot)

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, object]:
        from absnb.views.pictures import picture_bundle

        return picture_bundle(self.svg(), f"{self.kind}: {self._name.replace(' step=', ', step ')}")

    def __repr__(self) -> str:
        return f"<GraphView {self._name}>"


def show_graph(world: World, **kw: Unpack[DotOptions]) -> GraphView:
    """The execution graph of ``world`` now, for display in a notebook."""
    return GraphView(world, **kw)
