"""A real run's event log on the driver: every host's rows on the driver's clock, with the
coordinator's own (triggered, completed, aborted), as :class:`RunEvents`.

Each host stamps its rows with its own ``time.monotonic``; the driver stamps each batch
when it arrives. A host's offset is the smallest gap between the two over its batches (the
batch that travelled fastest), so a row is never placed after the driver heard of it; on
one machine the clocks are the same and the offset is a fraction of a millisecond.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from absnb.core.events import COLUMNS, EventRow, cut_problems
from absnb.runtime.events.log import EventBatch

if TYPE_CHECKING:
    import pandas as pd

COORDINATOR_KINDS = {"triggered": "triggered", "completed": "completed", "aborted": "aborted"}


class RunEvents:
    """The event log of one run: :class:`~absnb.core.events.EventRow` s in time order."""

    def __init__(self, rows: Iterable[EventRow]) -> None:
        self.rows = sorted(rows, key=lambda r: r.time)

    @property
    def events(self) -> pd.DataFrame:
        """One row per event, the columns of :data:`~absnb.core.events.COLUMNS`."""
        import pandas as pd

        return pd.DataFrame([r.as_dict() for r in self.rows], columns=list(COLUMNS))

    @property
    def completed(self) -> list[int]:
        """The checkpoints the coordinator completed, in order."""
        return [r.checkpoint for r in self.rows if r.kind == "completed" and r.checkpoint]

    def check_cuts(self) -> list[str]:
        """Why a completed checkpoint's snapshot is not a consistent cut, read from the log
        (:func:`~absnb.core.events.cut_problems`); empty when every one is."""
        return cut_problems(self.rows, self.completed)

    def save_events(self, path: str) -> None:
        """Write the log as JSON lines (read it back with :func:`load_events`)."""
        from absnb.runtime.events.files import save_rows

        save_rows(self.rows, path)

    def to_chrome_trace(self, path: str) -> None:
        """Write the log in the Chrome trace event format (Perfetto, ``chrome://tracing``)."""
        from absnb.runtime.events.files import chrome_trace, write_json

        write_json(chrome_trace(self.rows), path)


def load_events(path: str) -> RunEvents:
    """The event log saved by ``run.save_events(path)``."""
    from absnb.runtime.events.files import load_rows

    return RunEvents(load_rows(path))


def run_events(
    started: float,
    coordinator: Sequence[tuple[float, str, dict[str, Any]]],
    batches: Sequence[tuple[float, EventBatch]],
    failed_at: Sequence[float] = (),
    errors: Sequence[str] = (),
) -> RunEvents:
    """The run's log from the coordinator's events and the hosts' batches (as received,
    with the driver's time), ``started`` being the run's start on the driver's clock;
    a failed attempt whose host could not say so (killed) gets a ``failure`` row at
    ``failed_at``."""
    rows = coordinator_rows(started, coordinator)
    rows += host_rows(started, batches)
    failed = {r.attempt for r in rows if r.kind == "failure"}
    for attempt, (at, error) in enumerate(zip(failed_at, errors, strict=False)):
        if attempt not in failed:
            rows.append(EventRow(at - started, attempt, None, "failure", detail=error))
    return RunEvents(rows)


def coordinator_rows(
    started: float, events: Sequence[tuple[float, str, dict[str, Any]]]
) -> list[EventRow]:
    """The coordinator's triggered, completed and aborted checkpoints."""
    rows = []
    attempt = 0
    for t, kind, info in events:
        attempt = info.get("attempt", attempt)
        if kind in COORDINATOR_KINDS:
            rows.append(
                EventRow(
                    t - started,
                    attempt,
                    None,
                    kind,
                    checkpoint=info.get("checkpoint_id"),
                    detail=info.get("reason"),
                )
            )
    return rows


def host_rows(started: float, batches: Sequence[tuple[float, EventBatch]]) -> list[EventRow]:
    """Every host's rows on the driver's clock: snapshots joined with their counts and
    size, records counted per channel per bucket."""
    offsets: dict[tuple[int, int], float] = {}
    for received, b in batches:
        key = (b.host_id, b.attempt)
        offsets[key] = min(offsets.get(key, received - b.sent_at), received - b.sent_at)
    rows: list[EventRow] = []
    parts: dict[tuple[int, str, int], dict[str, Any]] = {}
    for _, b in batches:
        shift = offsets[(b.host_id, b.attempt)] - started
        for t, task, kind, channel, n, extra in b.rows:
            if kind in ("snapshot_state", "snapshot_counts", "ack"):
                part = parts.setdefault((b.attempt, task or "", n or 0), {})
                if kind == "snapshot_state":
                    part["time"] = t + shift
                else:
                    part.update(extra or {})
                if kind != "ack":
                    continue
            rows.append(EventRow(t + shift, b.attempt, task, kind, channel, n, **(extra or {})))
        for (start, channel), count in b.flow.items():
            at = start + shift
            rows.append(
                EventRow(
                    at,
                    b.attempt,
                    channel.split("->")[1],
                    "records",
                    channel,
                    count=count,
                    span=b.width,
                )
            )
    for (attempt, task, n), part in parts.items():
        if "time" in part and "sent" in part:
            rows.append(EventRow(part.pop("time"), attempt, task, "snapshot", None, n, **part))
    return rows
