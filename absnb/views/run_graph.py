"""The execution graph of a real run at one moment, from its event log, as SVG: one column
per operator, a task per box filled by its status (the graph view's colours and words:
aligning, taken its part of the checkpoint, failed), each channel a line, blocked ones
thick, dashed and vermillion."""

from __future__ import annotations

import html
from collections.abc import Sequence

from absnb.core.events import EventRow
from absnb.i18n import gettext as _
from absnb.views.palette import BLOCKED_COLOUR, EDGE_COLOUR, STATUS_COLOURS
from absnb.views.run_state import Moment, channels_of, moment, tasks_of
from absnb.views.svg import FONT
from absnb.views.svg import num as _n

BOX_W, BOX_H, COL, ROW = 150.0, 50.0, 250.0, 80.0


def graph_svg(rows: Sequence[EventRow], t: float, width: float = 1024) -> str:
    """The execution graph at time ``t`` (seconds since the run started)."""
    m = moment(rows, t)
    tasks = tasks_of(rows)
    columns: dict[str, list[str]] = {}
    for task in tasks:
        columns.setdefault(task.split("[")[0], []).append(task)
    place = {}
    for i, members in enumerate(columns.values()):
        for j, task in enumerate(members):
            place[task] = (40 + i * COL, 80 + j * ROW)
    height = 80 + ROW * max((len(v) for v in columns.values()), default=1) + 10
    body = [f'<rect width="{_n(width)}" height="{_n(height)}" fill="#ffffff"/>']
    body.append(_text(40, 26, title(m), size=20, anchor="start", font_weight="bold"))
    for c in channels_of(rows):
        src, dst = c.split("->")
        if src in place and dst in place:
            body.append(_edge(place[src], place[dst], c in m.blocked))
    for task, (x, y) in place.items():
        status = m.status(task)
        words = status_words()[status]
        dash = ' stroke-dasharray="6 3"' if status == "aligning" else ""
        body.append(
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{BOX_W}" height="{BOX_H}" rx="10" '
            f'fill="{STATUS_COLOURS[status]}" stroke="#333333" stroke-width="2"{dash}/>'
        )
        body.append(_text(x + BOX_W / 2, y + 17, task, size=16, anchor="middle"))
        body.append(_text(x + BOX_W / 2, y + 36, words, size=13, anchor="middle", fill="#444444"))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" font-family="{FONT}">\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )


def status_words() -> dict[str, str]:
    """A task's status in the words of the language set."""
    return {
        "taken": _("snapshot taken"),
        "aligning": _("aligning"),
        "failed": _("failed"),
        "idle": _("idle"),
    }


def title(m: Moment) -> str:
    """What the graph shows, in words (in the language set)."""
    at = f"{m.time:.2f}"
    if m.failed:
        return _("at {t} s: failed, waiting for the restart").format(t=at)
    if m.checkpoint is None:
        return _("at {t} s: no checkpoint yet").format(t=at)
    n = len(m.taken)
    part = _("1 task has its part") if n == 1 else _("{n} tasks have their part").format(n=n)
    done = _("complete") if m.checkpoint in m.completed else part
    text = _("at {t} s: checkpoint {n}, {done}").format(t=at, n=m.checkpoint, done=done)
    if m.blocked:
        text += _(", {k} channel(s) blocked").format(k=len(m.blocked))
    return text


def _edge(a: tuple[float, float], b: tuple[float, float], blocked: bool) -> str:
    x0, y0 = a[0] + BOX_W, a[1] + BOX_H / 2
    x1, y1 = b[0], b[1] + BOX_H / 2
    if blocked:
        style = f'stroke="{BLOCKED_COLOUR}" stroke-width="5" stroke-dasharray="10 5"'
    else:
        style = f'stroke="{EDGE_COLOUR}" stroke-width="2"'
    return f'<line x1="{_n(x0)}" y1="{_n(y0)}" x2="{_n(x1 - 6)}" y2="{_n(y1)}" {style}/>'


def _text(x: float, y: float, text: str, size: int = 16, anchor: str = "end", **style: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in style.items())
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size}" text-anchor="{anchor}" '
        f'dominant-baseline="middle"{extra}>{html.escape(text)}</text>'
    )
