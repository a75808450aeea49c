"""What a task did, in one vocabulary for both runtimes: the kinds of event and the row.

The simulator's trace keeps these with step numbers as time; a Spark run's event log keeps
them with seconds since the run started (every host's clock aligned to the driver's), so
that one view draws either and one check (:func:`cut_problems`) reads either.

Counts are channel sequence numbers (the records sent on or consumed from a channel since
the job began, restored with the task), so a snapshot row says, per channel, how many
records its task had sent (``sent``) or consumed (``consumed``) before that snapshot and
how many it recorded as the channel's state (``recorded``: Chandy-Lamport's channel
state, Alg. 2's backup log, unaligned checkpoints' in-flight records).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

KINDS = (
    "barrier",
    "marker",
    "cancel",
    "end_of_input",
    "overtaken",
    "block",
    "unblock",
    "switched",
    "snapshot",
    "ack",
    "declined",
    "triggered",
    "completed",
    "aborted",
    "failure",
    "restored",
    "pre_commit",
    "commit",
    "abort_txn",
    "records",
    "sent",
)
"""Every kind of event: received on a channel (``barrier``, ``marker``, ``cancel``,
``end_of_input``, ``overtaken`` with how many records the barrier overtook), a task's
alignment (``block``, ``unblock``, ``switched`` to unaligned), its part of a checkpoint
(``snapshot``, ``ack`` once durable, ``declined``), the coordinator's (``triggered``,
``completed``, ``aborted``), the attempt's (``failure``, ``restored``), a two-phase-commit
sink's (``pre_commit``, ``commit``, ``abort_txn``) and ``records``: how many records came on
a channel in one time bucket (a real run counts records, never logs them one by one).
``sent``, one message put on a channel, only a simulated run has: it moves one message at
a time, so its diagram draws every message from its send to its delivery."""

COLUMNS = (
    "time",
    "attempt",
    "task",
    "kind",
    "channel",
    "checkpoint",
    "count",
    "sent",
    "consumed",
    "recorded",
    "size",
    "detail",
    "span",
)
"""The columns of an event table, in order (the fields of :class:`EventRow`)."""


@dataclass(frozen=True, slots=True)
class EventRow:
    """One event.

    Attributes:
        time: seconds since the run started (a simulated run: its step).
        attempt: the attempt it happened in (0 until the first failure).
        task: the task's printed name (``count[1]``); None for the coordinator.
        kind: one of :data:`KINDS`.
        channel: the channel's printed name (``source[0]->count[1]``), for what came on one.
        checkpoint: the checkpoint it belongs to (``restored``: the one restored, 0 none;
            a record ``sent`` by a recovery: the checkpoint whose channel state held it).
        count: ``records``: records in the bucket; ``overtaken``: records overtaken;
            ``sent``: 1 for a record, None for a barrier, marker or end of input.
        sent, consumed, recorded: ``snapshot``: per channel name, records sent on each
            output, consumed from each input, recorded as each input's channel state.
        size: ``snapshot`` and ``ack``: the snapshot's size in bytes (when known).
        detail: free text (why a checkpoint was aborted, what failed, a restore's recovery
            mode); a simulated run's ``records`` and ``sent`` rows: the record as printed,
            or what was sent (``barrier``, ``marker``, ``cancel``, ``end_of_input``).
        span: ``records``: the bucket's length in seconds (its rate is ``count / span``).
    """

    time: float
    attempt: int
    task: str | None
    kind: str
    channel: str | None = None
    checkpoint: int | None = None
    count: int | None = None
    sent: Mapping[str, int] | None = None
    consumed: Mapping[str, int] | None = None
    recorded: Mapping[str, int] | None = None
    size: int | None = None
    detail: str | None = None
    span: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown event kind {self.kind!r}: use one of {', '.join(KINDS)}")

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict (JSON-ready: its mappings are dicts)."""
        row = asdict(self)
        for key in ("sent", "consumed", "recorded"):
            if row[key] is not None:
                row[key] = dict(row[key])
        return row


def checkpoint_of(message: Any) -> int:
    """The checkpoint (or snapshot) a barrier, marker or cancellation marker belongs to."""
    from absnb.core.messages import Marker

    return int(message.snapshot_id if type(message) is Marker else message.checkpoint_id)


def channel_name(src: object, dst: object) -> str:
    """A channel's printed name, ``source[0]->count[1]``."""
    return f"{src}->{dst}"


def cut_problems(rows: Iterable[EventRow], completed: Iterable[int]) -> list[str]:
    """Why the snapshots of the ``completed`` checkpoints are not consistent cuts (empty
    when they all are), read from ``snapshot`` rows alone, as the simulator's
    ``snapshot_problems`` reads a world: for every channel, the records its sender had sent
    before its snapshot equal those its receiver had consumed before its snapshot plus the
    records it recorded as the channel's state (Chandy and Lamport's cut, ABS §3).

    Each problem names the checkpoint and the channel."""
    snapshots: dict[int, dict[str, EventRow]] = {}
    for r in rows:
        if r.kind == "snapshot" and r.checkpoint is not None and r.task is not None:
            snapshots.setdefault(r.checkpoint, {})[r.task] = r  # the last attempt's part
    problems: list[str] = []
    for n in sorted(set(completed)):
        parts = snapshots.get(n, {})
        if not parts:
            problems.append(f"checkpoint {n}: completed, but no task's snapshot is in the log")
            continue
        problems.extend(_channel_problems(n, parts))
    return problems


def _channel_problems(n: int, parts: Mapping[str, EventRow]) -> list[str]:
    """The inconsistent channels of checkpoint ``n``, given each task's snapshot row."""
    problems = []
    channels: dict[str, tuple[EventRow | None, EventRow | None]] = {}
    for row in parts.values():
        for c in row.sent or {}:
            channels[c] = (row, channels.get(c, (None, None))[1])
        for c in row.consumed or {}:
            channels[c] = (channels.get(c, (None, None))[0], row)
    for c, (src, dst) in sorted(channels.items()):
        if src is None or dst is None:
            missing = "sender" if src is None else "receiver"
            problems.append(f"checkpoint {n}, channel {c}: the {missing}'s snapshot is missing")
            continue
        sent = (src.sent or {})[c]
        consumed = (dst.consumed or {})[c]
        recorded = (dst.recorded or {}).get(c, 0)
        if sent != consumed + recorded:
            problems.append(
                f"checkpoint {n}, channel {c}: {src.task} had sent {sent} records before its "
                f"snapshot, but {dst.task} had consumed {consumed} and recorded {recorded} "
                f"as channel state ({consumed + recorded})"
            )
    return problems
