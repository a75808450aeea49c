"""The words of the execution graph's picture: a task's state, its part in snapshots, a
channel's messages in flight and a two-phase-commit sink's transactions, each in a few
characters, cut and wrapped to fit a node or an edge's label (:mod:`absnb.views.graph`
draws them; the tables and the transactions view show them too).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from absnb.core.format import show_message, show_value
from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import CancelCheckpointMarker, CheckpointBarrier, Marker
from absnb.i18n import gettext as _
from absnb.protocols.two_phase_commit import TwoPhaseCommitState
from absnb.views.graph_frame import escape
from absnb.views.palette import BARRIER_COLOUR, MARKER_COLOUR

if TYPE_CHECKING:
    from absnb.sim.world import World

T = TypeVar("T")

NONE = "–"
"""What a table shows where there is no value (no offset), never pandas' ``<NA>``."""
LINE_CHARS = 22  # longest status or channel note line (characters) before it is wrapped
SHORT_LINE_CHARS = 10  # the same in a short label (graphs side by side: their edges' labels
# share one row between two rows of tasks, so each must be narrow)
SHORT_NODE_CHARS = 15  # and in a short node
MAX_TEXT = 40
"""Longest shown state value (characters) before it is cut with an ellipsis."""


# -- text helpers ----------------------------------------------------------------------------
def _cut(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _items(shown: Iterable[str], total: int, max_items: int | None) -> str:
    items = list(shown)
    if max_items is not None and total > max_items:
        return " ".join(items[:max_items]) + f" … (+{total - max_items} more)"
    return " ".join(items)


def short_state(state: object, max_items: int | None = 4) -> str:
    """An operator state in a few characters: ``12,000``, ``to:2 be:4``, ``(to, 1) (be, 1)``.

    Dicts show ``key:value`` pairs in their own order, lists their items, sets their items
    sorted; beyond ``max_items`` items (None: no limit) the rest is counted as
    ``… (+n more)``. None (a source keeps its state in its offset) shows as ``""``.
    """
    if state is None:
        return ""
    if isinstance(state, dict):
        if not state:
            return "{}"
        pairs = (f"{show_value(k)}:{show_value(v)}" for k, v in state.items())
        return _items(pairs, len(state), max_items)
    if isinstance(state, list):
        if not state:
            return "[]"
        return _items((show_value(v) for v in state), len(state), max_items)
    if isinstance(state, set | frozenset):
        if not state:
            return "{}"
        return _items(sorted(show_value(v) for v in state), len(state), max_items)
    text = show_value(state)
    return text if max_items is None else _cut(text)


_MARKS: tuple[tuple[type, str, str], ...] = (
    (CheckpointBarrier, BARRIER_COLOUR, "▌"),
    (Marker, MARKER_COLOUR, "◆"),
    (CancelCheckpointMarker, BARRIER_COLOUR, "✕"),
)
"""Control messages in a label: their colour and mark."""


def show_message_html(message: object, short: bool = False) -> str:
    """One message in an HTML-like label: barriers and markers bold and coloured, a record's
    value cut to :data:`MAX_TEXT` characters. ``short``: a control message is its mark and
    checkpoint id only (``▌1`` for barrier 1, ``◆1`` for marker 1)."""
    for kind, colour, mark in _MARKS:
        if isinstance(message, kind):
            text = show_message(message).rsplit(" ", 1)[-1] if short else show_message(message)
            return f'<FONT COLOR="{colour}"><B>{mark}{escape(text)}</B></FONT>'
    return escape(_cut(show_message(message)))


def channel_contents(
    messages: Iterable[object], max_messages: int = 6, per_line: int = 0, short: bool = False
) -> str:
    """In-flight messages head first, joined by ``" · "``; after ``max_messages`` the rest
    is counted as ``… +n more``. With ``per_line`` > 0 a line break follows every
    ``per_line`` messages (a narrow label). ``short``: control messages as their mark and
    id (:func:`show_message_html`). HTML-like label text."""
    if max_messages < 0:
        raise ValueError(f"max_messages must be 0 or more, not {max_messages}")
    if per_line < 0:
        raise ValueError(f"per_line must be 0 (one line) or more, not {per_line}")
    msgs = list(messages)
    shown = [show_message_html(m, short) for m in msgs[:max_messages]]
    if len(msgs) > max_messages:
        shown.append(f"… +{len(msgs) - max_messages} more")
    if not per_line:
        return " · ".join(shown)
    rows = [" · ".join(shown[i : i + per_line]) for i in range(0, len(shown), per_line)]
    return "<BR/>".join(rows)


def wrap(text: str, width: int = LINE_CHARS) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` characters (a longer word
    keeps a line of its own)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


# -- status --------------------------------------------------------------------------------------
def _taken(world: World, task: TaskId) -> list[int]:
    """Checkpoints whose state ``task`` has copied and that are not complete yet."""
    ids = set(world.tasks[task].parts)
    ids.update(n for n, p in world.coordinator.pending.items() if task in p.acknowledged)
    return sorted(ids)


def _aligning(world: World, task: TaskId, taken: list[int]) -> str | None:
    st = world.tasks[task]
    handler = st.handler
    for w in handler.waiting():
        if w.checkpoint_id in taken:
            continue
        text = handler.describe()
        if text.startswith("aligning checkpoint") and "barriers)" in text:
            return text
        # Alg. 2 aligns on the regular inputs only; loop inputs are logged instead.
        loops = handler.loop_inputs
        regular = [c for c in st.inputs if c not in loops]
        missing = [c for c in w.channels if c not in loops]
        got = len(regular) - len(missing)
        return f"aligning checkpoint {w.checkpoint_id} ({got}/{len(regular)} barriers)"
    return None


def task_status(world: World, task: TaskId | str) -> tuple[str, str]:
    """``(kind, text)`` of a task's part in snapshots.

    Kinds and texts, first match wins: ``failed`` "FAILED"; ``restoring`` "restoring
    (replaying k inputs)" after a partial recovery; ``halted`` "halted" (synchronous);
    ``taken`` "state taken for checkpoint n" (copied, checkpoint not complete yet);
    ``aligning`` "aligning checkpoint n (k/m barriers)"; ``idle`` "not in a snapshot".
    """
    t = world.graph.task(task)
    st = world.tasks[t]
    if world.failed == t:
        return "failed", "FAILED"
    if st.replay:
        k = len(st.replay)
        return "restoring", f"restoring (replaying {k} input{'' if k == 1 else 's'})"
    taken = _taken(world, t)
    ids = ", ".join(str(n) for n in taken)
    taken_text = f"state taken for checkpoint{'s' if len(taken) > 1 else ''} {ids}"
    if st.halted:
        return "halted", f"halted ({taken_text})" if taken else "halted"
    if taken:
        return "taken", taken_text
    aligning = _aligning(world, t, taken)
    if aligning is not None:
        return "aligning", aligning
    return "idle", "not in a snapshot"


def recording_notes(world: World, short: bool = False) -> dict[ChannelId, str]:
    """Channels being recorded now, with a note (``recording: 2 recorded``; ``short``:
    ``recording: 2``)."""
    out: dict[ChannelId, str] = {}
    chandy = not world.protocol.logs_loop_inputs  # records channel state, not a backup log
    for t in world.graph.tasks:
        handler = world.tasks[t].handler
        for c in handler.recorded_channels():
            counts = handler.recorded_count(c)
            verb = _("recording") if chandy else _("logging")
            if not counts:
                out[c] = verb
            elif len(counts) > 1:
                each = ", ".join(_("snapshot {n}: {k}").format(n=n, k=k) for n, k in counts)
                out[c] = f"{verb} ({each})"
            else:
                some = (
                    _("{verb}: {k}")
                    if short
                    else _("{verb}: {k} recorded")
                    if chandy
                    else _("{verb}: {k} logged")
                )
                out[c] = some.format(verb=verb, k=counts[0][1])
    return out


# -- transactions ------------------------------------------------------------------------------
def short_txn(txn: object, task: str = "") -> str:
    """A transaction handle in a few characters: ``sink[0]/t3`` in task ``sink[0]`` is
    ``t3``; a path shows its last part."""
    text = str(txn)
    if task and text.startswith(task + "/"):
        text = text[len(task) + 1 :]
    return _cut(text.rstrip("/").rsplit("/", 1)[-1], 24)


def transaction_lines(state: TwoPhaseCommitState[T], max_pending: int = 3) -> list[str]:
    """A two-phase-commit sink's state, one line each: ``open t3: 2 records``, ``t1
    pre-committed for 1`` (oldest first; beyond ``max_pending`` counted), or ``no open
    transaction``."""
    lines: list[str] = []
    if state.current is not None:
        k, name = state.written, short_txn(state.current, state.task)
        one = _("open {name}: {k} record") if k == 1 else _("open {name}: {k} records")
        lines.append(one.format(name=name, k=k))
    for n, txn in state.pending[:max_pending]:
        pre = _("{txn} pre-committed for {n}")
        lines.append(pre.format(txn=short_txn(txn, state.task), n=n))
    if len(state.pending) > max_pending:
        lines.append(_("+{k} more pre-committed").format(k=len(state.pending) - max_pending))
    return lines or [_("no open transaction")]


def node_status(kind: str, text: str) -> str:
    """A :func:`task_status` text as a node shows it, in one short line: ``taken: 1, 2``,
    ``aligning 1: 1/2``, ``halted, taken: 1``, ``replaying 2``, ``FAILED``; nothing for a
    task not in a snapshot (its white fill and the legend say so)."""
    taken = text.split("checkpoint", 1)[1].lstrip("s ").rstrip(")") if "taken" in text else ""
    if kind == "taken":
        return _("taken: {ids}").format(ids=taken)
    if kind == "aligning":
        got = text.split("(")[1].split()[0]
        return _("aligning {n}: {got}").format(n=text.split()[2], got=got)
    if kind == "halted":
        return _("halted, taken: {ids}").format(ids=taken) if taken else _("halted")
    if kind == "restoring":
        return _("replaying {n}").format(n=text.split("replaying ", 1)[1].split()[0])
    if kind == "failed":
        return _("FAILED")
    return "" if kind == "idle" else text
