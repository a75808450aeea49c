"""A run's event log in files: JSON lines (:func:`save_rows`, :func:`load_rows`) and the
Chrome trace event format (:func:`chrome_trace`), which Perfetto and ``chrome://tracing``
open: the run is a process, every task a thread (the coordinator is thread 0), an
alignment (first block to snapshot) and a snapshot's writing (snapshot to acknowledgement)
are complete events (``ph: X``), barriers and the other events are instants (``ph: i``),
and each channel's record rate is a counter (``ph: C``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import Any

from absnb.core.errors import InvalidValueError
from absnb.core.events import EventRow

US = 1_000_000
"""Microseconds a second: the trace format's unit of ``ts`` and ``dur``."""


def save_rows(rows: Iterable[EventRow], path: str) -> None:
    """Write ``rows`` as JSON lines, one object per row."""
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r.as_dict(), ensure_ascii=False) + "\n")


def load_rows(path: str) -> list[EventRow]:
    """The rows of a JSON lines file written by :func:`save_rows`.

    Raises:
        InvalidValueError: a line is not an event row (the message names the line).
    """
    names = {f.name for f in fields(EventRow)}
    rows = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                unknown = set(data) - names
                if unknown:
                    raise ValueError(f"unknown fields {sorted(unknown)}")
                rows.append(EventRow(**data))
            except (ValueError, TypeError) as e:
                raise InvalidValueError(
                    f"{path}, line {i}: not an event row ({e}); load a file written by "
                    "run.save_events(path)"
                ) from e
    return rows


def write_json(data: Any, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)


def chrome_trace(rows: Sequence[EventRow]) -> dict[str, Any]:
    """The trace event format's JSON object for ``rows``."""
    tids: dict[str | None, int] = {None: 0}
    for r in rows:
        if r.task not in tids:
            tids[r.task] = len(tids)
    events: list[dict[str, Any]] = [_meta("process_name", 0, "absnb run")]
    events += [_meta("thread_name", tid, task or "coordinator") for task, tid in tids.items()]
    events += _spans(rows, tids)
    for r in rows:
        ts = round(r.time * US, 1)
        if r.kind == "records":
            events.append(
                {"name": f"records {r.channel}", "ph": "C", "ts": ts, "pid": 0,
                 "args": {"records": r.count}}
            )  # fmt: skip
            continue
        args = {k: v for k, v in r.as_dict().items() if v is not None and k != "time"}
        events.append(
            {"name": _name(r), "cat": r.kind, "ph": "i", "s": "t", "ts": ts, "pid": 0,
             "tid": tids[r.task], "args": args}
        )  # fmt: skip
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _meta(name: str, tid: int, value: str) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": 0, "tid": tid, "args": {"name": value}}


def _name(r: EventRow) -> str:
    parts = [r.kind]
    if r.checkpoint is not None:
        parts.append(str(r.checkpoint))
    if r.channel is not None:
        parts.append(f"on {r.channel}")
    return " ".join(parts)


def _spans(rows: Sequence[EventRow], tids: dict[str | None, int]) -> list[dict[str, Any]]:
    """Alignments (first block to the snapshot) and snapshot writing (to the ack)."""
    spans = []
    aligning: dict[tuple[int, str | None], float] = {}
    taken: dict[tuple[int, str | None, int | None], float] = {}
    for r in rows:
        key = (r.attempt, r.task)
        if r.kind == "block":
            aligning.setdefault(key, r.time)
        elif r.kind == "snapshot":
            began = aligning.pop(key, None)
            if began is not None:
                spans.append(_span(f"alignment {r.checkpoint}", began, r.time, tids[r.task]))
            taken[(r.attempt, r.task, r.checkpoint)] = r.time
        elif r.kind == "ack":
            at = taken.pop((r.attempt, r.task, r.checkpoint), None)
            if at is not None:
                spans.append(_span(f"snapshot {r.checkpoint} written", at, r.time, tids[r.task]))
        elif r.kind in ("failure", "restored"):
            aligning.pop(key, None)
    return spans


def _span(name: str, start: float, end: float, tid: int) -> dict[str, Any]:
    return {
        "name": name,
        "cat": name.split()[0],
        "ph": "X",
        "ts": round(start * US, 1),
        "dur": round(max(0.0, end - start) * US, 1),
        "pid": 0,
        "tid": tid,
    }
