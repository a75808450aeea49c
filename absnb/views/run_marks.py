"""The marks only a real run's diagram has (:mod:`absnb.views.run_layers`), drawn in SVG
for :func:`absnb.views.timeline_static.render_svg`: its quiet stretches, the coordinator's
lane, alignments, barriers arriving, snapshots, and the record rates under the time axis.
A simulated run's diagram has none of them, and gets nothing from here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from absnb.i18n import gettext as _
from absnb.views.palette import STATUS_COLOURS
from absnb.views.run_layers import FLOW, rates_title
from absnb.views.svg import CONTROL, CUT, RECORD, num, text

if TYPE_CHECKING:
    from absnb.views.diagram import Diagram

QUIET = "#eeeeee"


def quiet_stretches(d: Diagram) -> list[str]:
    """Behind the lanes: a grey band where a long quiet stretch is drawn narrow."""
    sc = d.scale
    above = d.layers.coordinator if d.layers is not None else -0.5
    y0, y1 = sc.top + above * sc.gap - 12, sc.top + (len(d.tasks) - 0.7) * sc.gap
    return [
        f'<rect x="{num(sc.x(a) + 8)}" y="{num(y0)}" width="{num(sc.x(b) - sc.x(a) - 16)}" '
        f'height="{num(y1 - y0)}" fill="{QUIET}"/>'
        for a, b in sc.gaps
    ]


def run_marks(d: Diagram) -> list[str]:
    """The coordinator's lane and a real run's marks on the lanes."""
    if d.layers is None:
        return []
    sc = d.scale
    y = sc.top + d.layers.coordinator * sc.gap
    out = [
        text(sc.left - 14, y, _("coordinator"), fill="#555555", anchor="end"),
        f'<line x1="{num(sc.x(d.first))}" y1="{num(y)}" x2="{num(sc.x(d.now))}" y2="{num(y)}" '
        'stroke="#999999" stroke-width="1.5" stroke-dasharray="4 4"/>',
    ]
    for t0, t1, lane in d.layers.aligning:
        x0, x1, ly = sc.x(t0), max(sc.x(t1), sc.x(t0) + 3), sc.top + lane * sc.gap
        out.append(
            f'<rect x="{num(x0)}" y="{num(ly - 14)}" width="{num(x1 - x0)}" height="28" '
            f'fill="{STATUS_COLOURS["aligning"]}" stroke="#b8a000" stroke-dasharray="3 2"/>'
        )
    for kind, t, lane in d.layers.marks:
        x, ly = sc.x(t), sc.top + lane * sc.gap
        if kind == "barrier":
            out.append(
                f'<line x1="{num(x)}" y1="{num(ly - 12)}" x2="{num(x)}" y2="{num(ly + 12)}" '
                f'stroke="{CONTROL}" stroke-width="3"/>'
            )
        elif kind == "snapshot":
            out.append(
                f'<circle cx="{num(x)}" cy="{num(ly)}" r="6" fill="{STATUS_COLOURS["taken"]}" '
                f'stroke="{RECORD}" stroke-width="2"/>'
            )
        else:
            fill = "#ffffff" if kind == "triggered" else CUT
            out.append(
                f'<rect x="{num(x - 5)}" y="{num(ly - 5)}" width="10" height="10" '
                f'fill="{fill}" stroke="{CUT}" stroke-width="1.5"/>'
            )
    return out


def rates_svg(d: Diagram, top: float) -> tuple[list[str], float]:
    """Every channel's record rate as a line in a strip of its own, from ``top``; the
    elements and the strip's bottom."""
    assert d.layers is not None
    sc = d.scale
    out = [text(sc.left, top + 10, rates_title(), size=16, anchor="start")]
    y, right = top + 24, sc.width - sc.right
    for channel, peak, stretches in d.layers.rates:
        out.append(text(sc.left - 14, y + FLOW / 2 - 8, channel, size=14, anchor="end"))
        out.append(
            f'<line x1="{num(sc.left)}" y1="{num(y + FLOW)}" x2="{num(sc.width - sc.right)}" '
            f'y2="{num(y + FLOW)}" stroke="#cccccc"/>'
        )
        for points in stretches:
            pts = " ".join(
                f"{num(min(max(sc.x(t), sc.left), right))},{num(y + FLOW - n / peak * (FLOW - 4))}"
                for t, n in points
            )
            out.append(
                f'<polyline points="{pts}" fill="none" stroke="{RECORD}" stroke-width="1.5"/>'
            )
        if peak:
            rate = _("peak {rate}/s").format(rate=f"{peak:,.0f}")
            out.append(
                text(sc.left - 14, y + FLOW / 2 + 10, rate, size=14, fill="#555555", anchor="end")
            )
        y += FLOW + 14
    return out, y


def run_legend(d: Diagram) -> list[tuple[str, str, float, str]]:
    """``(colour, dash, width, text)`` of each real-run mark ``d`` draws."""
    if d.layers is None:
        return []
    kinds = {kind for kind, _t, _y in d.layers.marks}
    entries = []
    if "barrier" in kinds:
        entries.append((CONTROL, "", 3.0, _("barrier arrives")))
    if d.layers.aligning:
        entries.append((STATUS_COLOURS["aligning"], "", 14.0, _("alignment (inputs blocked)")))
    if "snapshot" in kinds:
        entries.append((STATUS_COLOURS["taken"], "", 12.0, _("snapshot")))
    counts = [c for c, _t, _y in d.layers.counts]
    if any(c.startswith("↷") for c in counts):
        entries.append(("#ffffff", "", 1.0, _("↷n: barriers overtook n records there")))
    if any(not c.startswith("↷") for c in counts):
        entries.append(
            ("#ffffff", "", 1.0, _("P pre-commit, C commit, A abort (a sink's transaction)"))
        )
    return entries
