"""Tables (pandas) of a world's tasks and of global snapshots, and the diff of two snapshots.

Rows always come in graph order (operators in declaration order, subtasks in order;
channels as the graph lists them), so the same world or snapshot gives the same frame.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from absnb.core.errors import SnapshotMismatchError
from absnb.core.ids import ChannelId, TaskId
from absnb.core.snapshot import GlobalSnapshot
from absnb.i18n import gettext as _
from absnb.protocols import PROTOCOLS
from absnb.views.graph_text import NONE, short_state, task_status

if TYPE_CHECKING:
    from absnb.core.graph import ExecutionGraph
    from absnb.sim.world import World

TASK_COLUMNS = ["task", "operator", "state", "offset", "status"]
SNAPSHOT_TASK_COLUMNS = ["task", "operator", "state", "raw_state"]
CHANNEL_COLUMNS = ["channel", "kind", "records", "count"]
OFFSET_COLUMNS = ["task", "offset"]
DIFF_COLUMNS = ["item", "kind", "a", "b", "changed"]


def column_names() -> dict[str, str]:
    """The snapshot tables' column headers as shown, in the language set (the frames keep
    their English column names, which code reads)."""
    return {
        "task": _("task"),
        "operator": _("operator"),
        "state": _("state"),
        "offset": _("offset"),
        "channel": _("channel"),
        "kind": _("kind"),
        "records": _("records"),
        "count": _("count"),
    }


def _offsets(values: Sequence[object]) -> pd.Series:
    return pd.Series([NONE if v is None else v for v in values], dtype="object")


def task_table(world: World) -> pd.DataFrame:
    """One row per task: name, operator, state (shown in full), offset (sources and
    processes; :data:`~absnb.views.graph_text.NONE` otherwise) and snapshot status (as in the graph
    view)."""
    graph = world.graph
    rows: dict[str, list[object]] = {c: [] for c in TASK_COLUMNS}
    for t in graph.tasks:
        task = world.tasks[t]
        rows["task"].append(str(t))
        rows["operator"].append(t.operator)
        rows["state"].append(short_state(task.state, None))
        emits = graph.kind(t) in ("source", "process")
        rows["offset"].append(task.offset if emits else None)
        rows["status"].append(task_status(world, t)[1])
    frame = pd.DataFrame(rows, columns=TASK_COLUMNS)
    frame["offset"] = _offsets(rows["offset"])
    return frame


def _capability(protocol: str, name: str, default: object) -> object:
    """A capability of the protocol called ``protocol`` (a snapshot stores the name)."""
    cls = PROTOCOLS.get(protocol)
    return default if cls is None else getattr(cls, name)


def channel_kind(protocol: str) -> str:
    """What a recorded channel is called under ``protocol``: Chandy-Lamport records
    ``channel state``, Alg. 2 (and the synchronous baseline) a ``backup log``, unaligned
    checkpoints ``in-flight data`` (the protocol's ``channel_state_kind``)."""
    return str(_capability(protocol, "channel_state_kind", "channel state"))


def _task_order(snapshot: GlobalSnapshot, graph: ExecutionGraph | None) -> list[TaskId]:
    if graph is None:
        return list(snapshot.tasks)
    return [t for t in graph.tasks if t in snapshot.tasks]


def _channel_order(
    channels: Mapping[ChannelId, object], tasks: list[TaskId], graph: ExecutionGraph | None
) -> list[ChannelId]:
    if graph is not None:
        return [c for c in graph.channels if c in channels]
    index = {t: i for i, t in enumerate(tasks)}
    far = len(index)
    return sorted(channels, key=lambda c: (index.get(c.src, far), index.get(c.dst, far), str(c)))


@dataclass(frozen=True)
class SnapshotTables:
    """A global snapshot as three frames.

    Attributes:
        checkpoint_id: the snapshot's checkpoint.
        protocol: the protocol that took it.
        tasks: one row per task: ``task``, ``operator``, ``state`` (shown), ``raw_state``.
        channels: one row per recorded channel: ``channel``, ``kind`` (``channel state`` or
            ``backup log``), ``records`` (the values, in arrival order), ``count``; no rows
            for ABS Algorithm 1, which records task states only.
        offsets: ``task``, ``offset`` of every source and process (of every task when the
            snapshot was tabulated without its graph).
    """

    checkpoint_id: int
    protocol: str
    tasks: pd.DataFrame
    channels: pd.DataFrame
    offsets: pd.DataFrame

    def _sections(self) -> list[tuple[str, pd.DataFrame, str]]:
        none = (
            _("none recorded")
            if _capability(self.protocol, "records_channel_state", True)
            else _("none: {protocol} records task states only").format(
                protocol=_capability(self.protocol, "short_title", "")
            )
        )
        shown = column_names()
        return [
            (
                _("task states"),
                self.tasks[["task", "operator", "state"]].rename(columns=shown),
                _("no tasks"),
            ),
            (_("channels"), self.channels.rename(columns=shown), none),
            (_("source offsets"), self.offsets.rename(columns=shown), _("no sources or processes")),
        ]

    def _title(self) -> str:
        by = f" ({self.protocol})" if self.protocol else ""
        return _("Checkpoint {n}").format(n=self.checkpoint_id) + by

    def _repr_html_(self) -> str:
        parts = [f"<h4>{html.escape(self._title())}</h4>"]
        for heading, frame, empty in self._sections():
            parts.append(f"<h5>{html.escape(heading)}</h5>")
            if frame.empty:
                parts.append(f"<p><i>{html.escape(empty)}</i></p>")
            else:
                parts.append(frame.to_html(index=False))
        return "\n".join(parts)

    def __repr__(self) -> str:
        parts = [self._title()]
        for heading, frame, empty in self._sections():
            parts.append(f"\n{heading}:")
            parts.append(empty if frame.empty else frame.to_string(index=False))
        return "\n".join(parts)


def snapshot_tables(
    snapshot: GlobalSnapshot, graph: ExecutionGraph | None = None
) -> SnapshotTables:
    """Tabulate a global snapshot: task states, recorded channels, source offsets.

    With ``graph`` (the job's execution graph) rows follow the graph's order and only
    sources and processes appear among the offsets.
    """
    order = _task_order(snapshot, graph)
    tasks = pd.DataFrame(
        {
            "task": [str(t) for t in order],
            "operator": [t.operator for t in order],
            "state": [short_state(snapshot.tasks[t].state, None) for t in order],
            "raw_state": [snapshot.tasks[t].state for t in order],
        },
        columns=SNAPSHOT_TASK_COLUMNS,
    )
    recorded = snapshot.channel_states
    kind = channel_kind(snapshot.protocol)
    chans = _channel_order(recorded, order, graph)
    channels = pd.DataFrame(
        {
            "channel": [str(c) for c in chans],
            "kind": [kind] * len(chans),
            "records": [[r.value for r in recorded[c]] for c in chans],
            "count": pd.Series([len(recorded[c]) for c in chans], dtype="int64"),
        },
        columns=CHANNEL_COLUMNS,
    )
    emitters = (
        order if graph is None else [t for t in order if graph.kind(t) in ("source", "process")]
    )
    offsets = pd.DataFrame(
        {
            "task": [str(t) for t in emitters],
            "offset": pd.Series([snapshot.tasks[t].offset for t in emitters], dtype="int64"),
        },
        columns=OFFSET_COLUMNS,
    )
    return SnapshotTables(snapshot.checkpoint_id, snapshot.protocol, tasks, channels, offsets)


def _differs(x: object, y: object) -> bool:
    try:
        return bool(x != y)
    except (TypeError, ValueError):  # values whose != is not a plain bool
        return repr(x) != repr(y)


def snapshot_diff(a: GlobalSnapshot, b: GlobalSnapshot) -> pd.DataFrame:
    """What changed from snapshot ``a`` to snapshot ``b`` of the same job.

    One row per task state (kind ``state``), per task whose offset is not 0 in either
    (kind ``offset``), then per recorded channel (kind ``channel state`` or ``backup
    log``; ``records`` as lists of values, None where a snapshot did not record it).
    Columns ``item``, ``kind``, ``a``, ``b`` (the raw values) and ``changed``.

    Raises:
        SnapshotMismatchError: the snapshots come from different jobs.
    """
    if a.fingerprint != b.fingerprint:
        raise SnapshotMismatchError(
            f"cannot compare snapshot {a.checkpoint_id} of job {a.job!r} with snapshot "
            f"{b.checkpoint_id} of job {b.job!r}: their graphs differ (fingerprints "
            f"{a.fingerprint} and {b.fingerprint}); compare snapshots of one job"
        )
    rows: list[tuple[str, str, object, object]] = []
    tasks = list(a.tasks) + [t for t in b.tasks if t not in a.tasks]
    for t in tasks:
        sa, sb = a.tasks.get(t), b.tasks.get(t)
        rows.append((str(t), "state", sa.state if sa else None, sb.state if sb else None))
        oa, ob = (sa.offset if sa else None), (sb.offset if sb else None)
        if oa or ob:
            rows.append((str(t), "offset", oa, ob))
    ca, cb = a.channel_states, b.channel_states
    union = {**dict.fromkeys(ca), **dict.fromkeys(cb)}
    for c in _channel_order(union, tasks, None):
        kind = channel_kind(a.protocol if c in ca else b.protocol)
        va = [r.value for r in ca[c]] if c in ca else None
        vb = [r.value for r in cb[c]] if c in cb else None
        rows.append((str(c), kind, va, vb))
    frame = pd.DataFrame(rows, columns=DIFF_COLUMNS[:4])
    frame["changed"] = pd.Series([_differs(r[2], r[3]) for r in rows], dtype="bool")
    frame.attrs["a"] = a.checkpoint_id
    frame.attrs["b"] = b.checkpoint_id
    return frame
