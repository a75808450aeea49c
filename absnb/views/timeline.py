"""The space-time diagram of a run: one line per task, one arrow per message.

The pure part (:func:`message_arrows`, :func:`snapshot_points`, :func:`checkpoint_cuts`,
:func:`completion_steps`, :func:`crash_steps`, :func:`recovery_steps`) reads a trace and
the world it ended in and returns plain values; :func:`space_time` draws them with plotly
(imported only when a figure is drawn). Neither changes the trace or the world.

Example:
    >>> import absnb
    >>> from absnb.views.timeline import message_arrows
    >>> s = absnb.Stepper(absnb.World(absnb.word_count(), "abs", checkpoint_interval=5),
    ...                   absnb.RandomScheduler(seed=1))
    >>> _ = s.run()
    >>> arrows = message_arrows(s.trace, s.world)
    >>> all(a.received_step is not None for a in arrows)
    True
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import RECORD_TYPES, CheckpointBarrier, Marker, Message
from absnb.sim.actions import Crash, Deliver, Recover, RecoveryMode
from absnb.sim.events import Event
from absnb.sim.format import show_message

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from absnb.sim.world import World

MessageKind = Literal["record", "barrier", "marker"]


@dataclass(frozen=True, slots=True)
class Arrow:
    """One message on the diagram, from its send to its delivery.

    Attributes:
        channel: the channel it travelled on.
        src, dst: the sending and the receiving task.
        sent_step: the step that sent it; for a message put back in transit by a recovery
            (``restored``), the recovery's step; for one already in transit when the trace
            began, the trace's first step.
        received_step: the step that delivered it; None if it was not delivered (still in
            flight at the end, or ``lost_step`` is set).
        kind: ``record``, ``barrier`` (ABS) or ``marker`` (Chandy-Lamport).
        label: the message as text (``1,000``, ``barrier 1``).
        dropped: delivered, but a duplicate the receiver dropped (partial recovery).
        restored: replayed from the snapshot's channel state by a recovery.
        lost_step: the recovery step that discarded it from its channel (the receiver
            restarted); None otherwise.
    """

    channel: ChannelId
    src: TaskId
    dst: TaskId
    sent_step: int
    received_step: int | None
    kind: MessageKind
    label: str
    dropped: bool = False
    restored: bool = False
    lost_step: int | None = None

    @property
    def in_flight(self) -> bool:
        """True when the message is still in its channel at the end of the trace."""
        return self.received_step is None and self.lost_step is None

    def describe(self) -> str:
        """Hover text: ``A->B: 1,000 sent at 0, delivered at 4``."""
        how = "replayed from snapshot" if self.restored else "sent"
        text = f"{self.channel}: {self.label} {how} at {self.sent_step}, "
        if self.received_step is not None:
            text += f"delivered at {self.received_step}"
            if self.dropped:
                text += " (duplicate, dropped)"
        elif self.lost_step is not None:
            text += f"discarded by the recovery at {self.lost_step}"
        else:
            text += "in flight"
        return text


class SnapshotPoint(NamedTuple):
    """A task recorded its state for a checkpoint at a step."""

    task: TaskId
    step: int
    checkpoint_id: CheckpointId


class CrashPoint(NamedTuple):
    """A task crashed at a step."""

    step: int
    task: TaskId


class RecoveryPoint(NamedTuple):
    """A recovery at a step restored a checkpoint (0: the initial state) into tasks."""

    step: int
    checkpoint_id: CheckpointId
    tasks: tuple[TaskId, ...]
    mode: RecoveryMode


def message_kind(message: Message) -> MessageKind:
    """``barrier``, ``marker`` or ``record``."""
    kind = type(message)
    if kind is CheckpointBarrier:
        return "barrier"
    if kind is Marker:
        return "marker"
    return "record"


# -- the pure part ---------------------------------------------------------------------------
class _Pending:
    """A message whose end is not known yet (mutable while the trace is read)."""

    __slots__ = ("channel", "dropped", "lost", "message", "received", "restored", "sent")

    def __init__(self, channel: ChannelId, sent: int, message: Message, restored: bool) -> None:
        self.channel = channel
        self.sent = sent
        self.message = message
        self.restored = restored
        self.received: int | None = None
        self.dropped = False
        self.lost: int | None = None

    def arrow(self) -> Arrow:
        c, m = self.channel, self.message
        return Arrow(
            c,
            c.src,
            c.dst,
            self.sent,
            self.received,
            message_kind(m),
            show_message(m),
            self.dropped,
            self.restored,
            self.lost,
        )


def message_arrows(trace: Sequence[Event], world: World) -> list[Arrow]:
    """Every message of ``trace``, matched send to delivery, in the order sent.

    Channels are FIFO, so a delivery takes the oldest message still on its channel. A
    recovery discards the messages on every channel into a restarted task and puts the
    snapshot's channel state back in transit there (``restored``). ``world`` is the world
    the trace ended in (``stepper.world``): it holds the completed snapshots.

    Raises:
        ValueError: the trace restores a checkpoint that ``world`` has not completed.
    """
    snapshots = {s.checkpoint_id: s for s in world.snapshots}
    start = trace[0].step if trace else 0
    queues: dict[ChannelId, deque[_Pending]] = {}
    pending: list[_Pending] = []
    for event in trace:
        action = event.action
        if type(action) is Deliver:
            c = action.channel
            q = queues.get(c)
            if q and event.overtaken:  # an unaligned barrier overtook records on its channel
                i = next(i for i, x in enumerate(q) if type(x.message) not in RECORD_TYPES)
                p = q[i]
                del q[i]
            elif q:
                p = q.popleft()
            else:  # in transit before the trace began
                assert event.message is not None
                p = _Pending(c, start, event.message, False)
                pending.append(p)
            p.received = event.step
            p.dropped = event.dropped
        if event.restored is not None:
            n, tasks = event.restored
            if n and n not in snapshots:
                raise ValueError(
                    f"step {event.step} restores checkpoint {n}, but the world given has no "
                    f"completed checkpoint {n} (it has {sorted(snapshots) or 'none'}): pass "
                    "the world the trace ended in (stepper.world)"
                )
            states = snapshots[n].channel_states if n else {}
            restarted = set(tasks)
            for c in world.graph.channels:
                if c.dst not in restarted:
                    continue
                q = queues.setdefault(c, deque())
                for p in q:
                    p.lost = event.step
                q.clear()
                for m in states.get(c, ()):
                    p = _Pending(c, event.step, m, True)
                    pending.append(p)
                    q.append(p)
        for c, m in event.sent:
            p = _Pending(c, event.step, m, False)
            pending.append(p)
            q = queues.get(c)
            if q is None:
                q = queues[c] = deque()
            q.append(p)
    return [p.arrow() for p in pending]


def snapshot_points(trace: Sequence[Event]) -> list[SnapshotPoint]:
    """Every ``(task, step, checkpoint id)`` at which a task recorded its state."""
    return [SnapshotPoint(t, e.step, n) for e in trace for t, n in e.snapshots]


def completion_steps(trace: Sequence[Event]) -> dict[CheckpointId, int]:
    """The step at which each completed checkpoint completed."""
    return {n: e.step for e in trace for n in e.completed}


def checkpoint_cuts(trace: Sequence[Event]) -> dict[CheckpointId, dict[TaskId, int]]:
    """For every completed checkpoint, the step at which each task recorded its state:
    the cut the global snapshot was taken along."""
    recorded: dict[CheckpointId, dict[TaskId, int]] = {}
    cuts: dict[CheckpointId, dict[TaskId, int]] = {}
    for e in trace:
        for t, n in e.snapshots:
            recorded.setdefault(n, {})[t] = e.step
        for n in e.completed:
            cuts[n] = dict(recorded.get(n, {}))
    return cuts


def crash_steps(trace: Sequence[Event]) -> list[CrashPoint]:
    """Every crash: its step and the failed task."""
    return [CrashPoint(e.step, e.action.task) for e in trace if type(e.action) is Crash]


def recovery_steps(trace: Sequence[Event]) -> list[RecoveryPoint]:
    """Every recovery: its step, the checkpoint restored and the tasks that restarted."""
    out = []
    for e in trace:
        if e.restored is not None and type(e.action) is Recover:
            out.append(RecoveryPoint(e.step, e.restored[0], e.restored[1], e.action.mode))
    return out


# -- the figure ------------------------------------------------------------------------------
_COLOURS = {"record": "#636EFA", "barrier": "#FF7F0E", "marker": "#FF7F0E"}
_CUT = "#AB63FA"
_CRASH = "#D62728"
_RECOVERY = "#2CA02C"
_GREY = "#888888"
_UIREVISION = "absnb-space-time"


def _scatter(**props: Any) -> dict[str, Any]:
    """A scatter trace as a plain dict (validated once, by the figure)."""
    return {"type": "scatter", **props}


WEBGL_ARROWS = 500
"""Arrow traces with more arrows than this are drawn with WebGL (``scattergl``)."""


def _arrow_trace(
    arrows: list[Arrow],
    y: dict[TaskId, int],
    end: int | None,
    *,
    name: str,
    colour: str,
    dash: str,
    width: float,
    head: str = "arrow",
) -> Any:
    """All ``arrows`` as one line trace with None gaps; a head marker at the far end
    (at ``end`` for messages without one).

    Past :data:`WEBGL_ARROWS` arrows the trace is drawn with WebGL and without heads: in
    Chromium a 5,000-event trace then draws in about 0.4 s and zooms in about 20 ms
    against 1.6 s and 1.3 s as SVG, and heads are unreadable at that density anyway.
    """
    xs: list[int | None] = []
    ys: list[int | None] = []
    texts: list[str] = []
    sizes: list[int] = []
    for a in arrows:
        far = a.received_step if a.received_step is not None else a.lost_step
        text = a.describe()
        xs += (a.sent_step, far if far is not None else end, None)
        ys += (y[a.src], y[a.dst], None)
        texts += (text, text, "")
        sizes += (0, 9, 0)
    if len(arrows) > WEBGL_ARROWS:
        return _scatter(
            type="scattergl",
            x=xs,
            y=ys,
            mode="lines",
            name=name,
            line={"color": colour, "dash": dash, "width": width},
            hovertext=texts,
            hoverinfo="text",
        )
    return _scatter(
        x=xs,
        y=ys,
        mode="lines+markers",
        name=name,
        line={"color": colour, "dash": dash, "width": width},
        marker={
            "symbol": head,
            "angleref": "previous",
            "size": sizes,
            "color": colour,
            "line": {"color": colour, "width": 1},
        },
        hovertext=texts,
        hoverinfo="text",
        connectgaps=False,
    )


def _points(
    xs: list[int],
    ys: list[int],
    texts: list[str],
    *,
    name: str,
    symbol: str,
    colour: str,
    size: int,
) -> Any:
    return _scatter(
        x=xs,
        y=ys,
        mode="markers",
        name=name,
        marker={"symbol": symbol, "color": colour, "size": size, "line": {"width": 1.5}},
        hovertext=texts,
        hoverinfo="text",
    )


def space_time(trace: Sequence[Event], world: World, *, title: str | None = None) -> go.Figure:
    """The space-time diagram of ``trace`` (ending in ``world``) as a plotly figure.

    One horizontal line per task (in graph order, top to bottom; x is the step). Records
    and barriers (or markers) are arrows told apart by colour and dash; messages still in
    flight end dashed at the right edge; messages discarded by a recovery end grey; dropped
    duplicates, messages replayed from a snapshot, crashes, recoveries (a shaded band from
    the crash) and every task's snapshot point are marked, and each completed checkpoint's
    cut is drawn across the task lines. Every kind of arrow is one trace, so long traces
    draw fast; the output is deterministic.
    """
    import plotly.graph_objects as go

    graph = world.graph
    tasks = graph.tasks
    y = {t: i for i, t in enumerate(tasks)}
    first = trace[0].step if trace else world.clock
    right = max(world.clock, trace[-1].step + 1 if trace else 0)
    arrows = message_arrows(trace, world)
    data: list[Any] = []

    lines_x: list[int | None] = []
    lines_y: list[int | None] = []
    for i in range(len(tasks)):
        lines_x += (first, right, None)
        lines_y += (i, i, None)
    data.append(
        _scatter(
            x=lines_x,
            y=lines_y,
            mode="lines",
            name="tasks",
            line={"color": "#444444", "width": 1},
            hoverinfo="skip",
            showlegend=False,
        )
    )

    done = completion_steps(trace)
    for kind in ("record", "barrier", "marker"):
        of_kind = [a for a in arrows if a.kind == kind]
        if not of_kind:
            continue
        colour = _COLOURS[kind]
        control = kind != "record"
        delivered = [a for a in of_kind if a.received_step is not None]
        flying = [a for a in of_kind if a.in_flight]
        if delivered:
            data.append(
                _arrow_trace(
                    delivered,
                    y,
                    None,
                    name=f"{kind}s",
                    colour=colour,
                    dash="dot" if control else "solid",
                    width=2 if control else 1.2,
                )
            )
        if flying:
            data.append(
                _arrow_trace(
                    flying,
                    y,
                    right,
                    name=f"{kind}s in flight",
                    colour=colour,
                    dash="dash",
                    width=2 if control else 1.2,
                )
            )
    lost = [a for a in arrows if a.lost_step is not None]
    if lost:
        data.append(
            _arrow_trace(
                lost,
                y,
                None,
                name="discarded by recovery",
                colour=_GREY,
                dash="longdash",
                width=1,
                head="x-thin-open",
            )
        )
    dropped = [a for a in arrows if a.dropped]
    if dropped:
        data.append(
            _points(
                [a.received_step for a in dropped],  # type: ignore[misc]
                [y[a.dst] for a in dropped],
                [a.describe() for a in dropped],
                name="dropped duplicates",
                symbol="circle-x-open",
                colour="#222222",
                size=11,
            )
        )
    replayed = [a for a in arrows if a.restored]
    if replayed:
        data.append(
            _points(
                [a.sent_step for a in replayed],
                [y[a.src] for a in replayed],
                [a.describe() for a in replayed],
                name="replayed from snapshot",
                symbol="square-open",
                colour=_RECOVERY,
                size=10,
            )
        )

    cuts = checkpoint_cuts(trace)
    if cuts:
        cx: list[int | None] = []
        cy: list[int | None] = []
        ctext: list[str] = []
        hover: list[str] = []
        for n, cut in cuts.items():
            along = [t for t in tasks if t in cut]
            what = f"checkpoint {n}: " + ", ".join(f"{t} at {cut[t]}" for t in along)
            what += f"; completed at {done[n]}"
            for j, t in enumerate(along):
                cx.append(cut[t])
                cy.append(y[t])
                ctext.append(f"checkpoint {n}" if j == 0 else "")
                hover.append(what)
            cx.append(None)
            cy.append(None)
            ctext.append("")
            hover.append("")
        data.append(
            _scatter(
                x=cx,
                y=cy,
                mode="lines+text",
                name="checkpoint cuts",
                line={"color": _CUT, "width": 3},
                opacity=0.6,
                text=ctext,
                textposition="top center",
                textfont={"color": _CUT},
                hovertext=hover,
                hoverinfo="text",
            )
        )

    points = snapshot_points(trace)
    if points:
        texts = []
        for p in points:
            at = done.get(p.checkpoint_id)
            status = f"completed at {at}" if at is not None else "not completed"
            texts.append(
                f"{p.task} records state for checkpoint {p.checkpoint_id} at {p.step} "
                f"(checkpoint {status})"
            )
        data.append(
            _points(
                [p.step for p in points],
                [y[p.task] for p in points],
                texts,
                name="task snapshots",
                symbol="diamond",
                colour=_CUT,
                size=9,
            )
        )
    crashes = crash_steps(trace)
    if crashes:
        data.append(
            _points(
                [c.step for c in crashes],
                [y[c.task] for c in crashes],
                [f"{c.task} crashes at {c.step}" for c in crashes],
                name="crashes",
                symbol="x",
                colour=_CRASH,
                size=14,
            )
        )
    recoveries = recovery_steps(trace)
    shapes: list[dict[str, Any]] = []
    if recoveries:
        rx, ry, rtext = [], [], []
        for r in recoveries:
            what = f"checkpoint {r.checkpoint_id}" if r.checkpoint_id else "the initial state"
            text = (
                f"recover ({r.mode}) at {r.step} from {what}: "
                f"{', '.join(str(t) for t in r.tasks)} restart"
            )
            for t in r.tasks:
                rx.append(r.step)
                ry.append(y[t])
                rtext.append(text)
            since = max((c.step for c in crashes if c.step <= r.step), default=r.step)
            shapes.append(
                {
                    "type": "rect",
                    "xref": "x",
                    "yref": "paper",
                    "x0": since,
                    "x1": r.step,
                    "y0": 0,
                    "y1": 1,
                    "fillcolor": _CRASH,
                    "opacity": 0.08,
                    "line": {"width": 0},
                    "layer": "below",
                }
            )
            shapes.append(
                {
                    "type": "line",
                    "xref": "x",
                    "yref": "paper",
                    "x0": r.step,
                    "x1": r.step,
                    "y0": 0,
                    "y1": 1,
                    "line": {"color": _RECOVERY, "width": 1.5, "dash": "dot"},
                    "layer": "below",
                }
            )
        data.append(
            _points(
                rx,
                ry,
                rtext,
                name="recoveries",
                symbol="triangle-right",
                colour=_RECOVERY,
                size=11,
            )
        )

    n = len(tasks)
    layout = {
        "title": {"text": title or f"{graph.name} under {world.protocol.name}"},
        "xaxis": {"title": {"text": "step"}, "range": [first - 0.5, right + 0.5]},
        "yaxis": {
            "tickmode": "array",
            "tickvals": list(range(n)),
            "ticktext": [str(t) for t in tasks],
            "range": [n - 0.5, -0.8],
            "zeroline": False,
            "showgrid": False,
        },
        "hovermode": "closest",
        "height": max(420, 180 + 60 * n),
        "shapes": shapes,
        "uirevision": _UIREVISION,
    }
    return go.Figure(data=data, layout=layout)
