"""The execution graph at one moment, whichever runtime made it: a frame of labelled
tasks grouped by operator and labelled channels, and its Graphviz DOT text.

Two adapters fill a frame: :func:`absnb.views.graph.world_frame` from a simulated world
(operator state, offsets, what is in flight on each channel, alignment progress) and
:func:`absnb.views.run_state.run_frame` from a real run's event rows (each task's status,
the channels blocked). :func:`frame_dot` draws either the same way; the text depends only
on the frame, so it can be compared with golden files.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from absnb.views.graph_layout import in_order, quote
from absnb.views.palette import EDGE_COLOUR, FONT_SIZE, STATUS_BORDERS, STATUS_COLOURS, font


def escape(text: str) -> str:
    """``text`` made safe inside a Graphviz HTML-like label: ``&``, ``<``, ``>`` and ``"``
    (not ``'``, whose ``&#x27;`` Graphviz would not need)."""
    return html.escape(text, quote=False).replace('"', "&quot;")


@dataclass(frozen=True, slots=True)
class Node:
    """A task: its printed name, its label (Graphviz HTML-like text) and its status kind
    (:data:`~absnb.views.palette.STATUS_COLOURS`: its fill and border)."""

    name: str
    label: str
    status: str


@dataclass(frozen=True, slots=True)
class OperatorGroup:
    """An operator's tasks, in index order; ``about`` labels a group of several (None: one
    task, not grouped)."""

    about: str | None
    nodes: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Edge:
    """A channel: its tasks' names and its DOT attributes (label, colour, width, style)."""

    src: str
    dst: str
    attrs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Frame:
    """What the graph shows: its name, its title (HTML-like, with a legend if any), its
    operators and its channels."""

    name: str
    title: str
    operators: tuple[OperatorGroup, ...]
    edges: tuple[Edge, ...]


def frame_dot(frame: Frame) -> str:
    """DOT source of ``frame``, drawn top to bottom, every label
    :data:`~absnb.views.palette.FONT_SIZE` points (pure, deterministic)."""
    out = [
        f"digraph {quote(frame.name)} {{",
        "  rankdir=TB; nodesep=0.25; ranksep=0.3;",
        f"  labelloc=t; fontname={font()}; fontsize={FONT_SIZE}; label=<{frame.title}>;",
        f'  node [shape=box style="rounded,filled" fontname={font()} fontsize={FONT_SIZE}];',
        f'  edge [fontname={font()} fontsize={FONT_SIZE} color="{EDGE_COLOUR}"];',
    ]
    for i, op in enumerate(frame.operators):
        nodes = [_node(n) for n in op.nodes]
        if op.about is None:
            out.extend(f"  {n}" for n in nodes)
            continue
        out.append(f"  subgraph cluster_{i} {{")
        out.append(
            f"    label=<{op.about}>; "
            f'style="rounded,dashed"; color="#999999"; fontsize={FONT_SIZE - 2};'
        )
        out.extend(f"    {n}" for n in nodes)
        out.append(in_order(n.name for n in op.nodes))
        out.append("  }")
    for e in frame.edges:
        head = f"{quote(e.src)} -> {quote(e.dst)}"
        out.append(f"  {head} [{' '.join(e.attrs)}];" if e.attrs else f"  {head};")
    out.append("}")
    return "\n".join(out) + "\n"


def _node(n: Node) -> str:
    style = STATUS_BORDERS[n.status]
    return f'{quote(n.name)} [label=<{n.label}> fillcolor="{STATUS_COLOURS[n.status]}" {style}];'
