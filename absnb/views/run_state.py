"""What a real run's event log says about one moment (pure, no drawing): the tasks and
channels it names, which channels were blocked at time t, which tasks had taken their part
of the newest checkpoint, which were aligning, failed or restoring; and that moment as a
frame of the execution graph (:func:`run_frame`, drawn as the simulator's is).

It reads rows of :class:`~absnb.core.events.EventRow` only, so a log read back with
:func:`absnb.runtime.load_events` is drawn like a run's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from absnb.core.events import EventRow
from absnb.i18n import gettext as _
from absnb.views.graph_frame import Edge, Frame, Node, OperatorGroup, escape
from absnb.views.palette import BLOCKED_COLOUR


def tasks_of(rows: Sequence[EventRow]) -> list[str]:
    """The tasks the log names, sources first (by their depth from a task with no input)
    and by name within an operator."""
    channels = channels_of(rows)
    names = {r.task for r in rows if r.task is not None}
    names |= {c.split("->")[0] for c in channels} | {c.split("->")[1] for c in channels}
    depth = dict.fromkeys(names, 0)
    for _round in range(len(names)):  # longest path from an input-less task (no cycle grows it)
        for c in channels:
            src, dst = c.split("->")
            depth[dst] = max(depth[dst], min(depth[src] + 1, len(names)))
    return sorted(names, key=lambda t: (depth[t], t.split("[")[0], _subtask(t)))


def _subtask(task: str) -> int:
    rest = task.partition("[")[2]
    return int(rest.rstrip("]")) if rest.rstrip("]").isdigit() else 0


def channels_of(rows: Sequence[EventRow]) -> list[str]:
    """Every channel the log names (``src->dst``), sorted."""
    found = {r.channel for r in rows if r.channel is not None}
    for r in rows:
        for counts in (r.sent, r.consumed):
            found.update(counts or {})
    return sorted(found)


@dataclass
class Moment:
    """The run at one time: its checkpoint and every task's status in it."""

    time: float
    checkpoint: int | None = None
    """The newest checkpoint triggered by then (None: none yet)."""
    blocked: set[str] = field(default_factory=set)
    taken: set[str] = field(default_factory=set)
    aligning: set[str] = field(default_factory=set)
    failed: bool = False
    completed: list[int] = field(default_factory=list)
    restored: int | None = None

    def status(self, task: str) -> str:
        """``failed``, ``taken``, ``aligning`` or ``idle`` (the graph view's colours)."""
        if self.failed:
            return "failed"
        if task in self.taken:
            return "taken"
        return "aligning" if task in self.aligning else "idle"


def moment(rows: Sequence[EventRow], t: float) -> Moment:
    """The run at time ``t`` (rows in time order)."""
    m = Moment(t)
    for r in rows:
        if r.time > t:
            break
        _apply(m, r)
    return m


def _apply(m: Moment, r: EventRow) -> None:
    kind = r.kind
    if kind == "triggered":
        m.checkpoint, m.taken = r.checkpoint, set()
    elif kind == "block" and r.channel is not None:
        m.blocked.add(r.channel)
        m.aligning.add(r.task or "")
    elif kind == "unblock" and r.channel is not None:
        m.blocked.discard(r.channel)
    elif kind == "snapshot" and r.checkpoint == m.checkpoint and r.task is not None:
        m.taken.add(r.task)
        m.aligning.discard(r.task)
    elif kind == "completed" and r.checkpoint is not None:
        m.completed.append(r.checkpoint)
    elif kind == "failure":
        m.failed, m.blocked, m.aligning = True, set(), set()
    elif kind == "restored":
        m.failed, m.restored, m.taken = False, r.checkpoint, set()


def run_frame(rows: Sequence[EventRow], t: float, name: str = "run") -> Frame:
    """The execution graph at time ``t`` (seconds since the run started): every task
    filled by its status and saying it, grouped by operator; blocked channels vermillion
    and thick."""
    m = moment(rows, t)
    operators: dict[str, list[Node]] = {}
    for task in tasks_of(rows):
        status = m.status(task)
        label = f"<B>{escape(task)}</B>"
        if status != "idle":
            label += f"<BR/><I>{escape(status_words()[status])}</I>"
        operators.setdefault(task.split("[")[0], []).append(Node(task, label, status))
    groups = tuple(
        OperatorGroup(None if len(nodes) == 1 else escape(op), tuple(nodes))
        for op, nodes in operators.items()
    )
    edges = []
    for c in channels_of(rows):
        src, dst = c.split("->")
        attrs: tuple[str, ...] = ()
        if c in m.blocked:
            blocked = f'<FONT COLOR="{BLOCKED_COLOUR}"><B>{escape(_("blocked"))}</B></FONT>'
            attrs = (f"label=<{blocked}>", f'color="{BLOCKED_COLOUR}"', "penwidth=2.5")
        edges.append(Edge(src, dst, attrs))
    return Frame(name, escape(title(m)), groups, tuple(edges))


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
