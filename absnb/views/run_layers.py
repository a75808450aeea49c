"""What a real run's space-time diagram draws beyond the simulator's: a real run counts
its records per channel instead of logging each message, so in place of arrows it has
barriers arriving as ticks, alignments as bands from the first blocked input to the
snapshot, a dot at every snapshot, the coordinator's triggers and completions on a lane of
its own, ↷n where barriers overtook n records, P/C/A where a sink pre-committed,
committed or aborted a transaction, and each channel's record rate in a strip under the
time axis. Long quiet stretches (a restart) are drawn narrow.

:func:`layers_of` computes these from the rows (:func:`absnb.views.diagram.layout_run`
calls it for a run timed in seconds); :func:`~absnb.views.run_marks.run_marks` and
:func:`~absnb.views.run_marks.rates_svg` draw them for
:func:`absnb.views.timeline_static.render_svg`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from absnb.core.events import EventRow
from absnb.i18n import gettext as _
from absnb.views.run_state import channels_of

GAP_PX = 56.0
"""The width a long quiet stretch (a restart) is drawn at, whatever it lasted."""
BUCKET = 0.05
"""A log's record bucket, in seconds, when its rows do not say."""
FLOW = 30.0
"""The height of one channel's record-rate line."""
COORDINATOR_PX = 40.0
"""The room the coordinator's lane takes above the checkpoints' names."""
OVERTAKEN_APART = 64.0
"""Overtaken counts on one lane closer than this (px) are drawn as one sum: two labels
("↷1,130") would overlap."""
SIGN_APART = 14.0
"""Transaction letters on one lane closer than this (px) are drawn as one label ("C A")."""
SIGNS = {"pre_commit": "P", "commit": "C", "abort_txn": "A"}


Series = tuple[tuple[tuple[float, float], ...], ...]
"""A channel's record rate: its stretches, each ``(time, records a second)`` points."""


@dataclass(frozen=True, slots=True)
class RunLayers:
    """A real run's marks, in diagram coordinates (x: seconds, y: lane; the coordinator's
    lane is ``coordinator``, above the top task's).

    Attributes:
        marks: ``(kind, x, y)``: ``barrier`` (a tick), ``snapshot`` (a dot),
            ``triggered`` and ``completed`` (squares on the coordinator's lane).
        aligning: ``(from, to, y)``: a task's inputs blocked until its snapshot.
        counts: ``(text, x, y)``: ↷n and P/C/A over a lane.
        rates: ``(channel, peak, [(x, records a second), ...] per stretch)``.
    """

    coordinator: float
    marks: tuple[tuple[str, float, float], ...]
    aligning: tuple[tuple[float, float, float], ...]
    counts: tuple[tuple[str, float, float], ...]
    rates: tuple[tuple[str, float, Series], ...]


def quiet_gaps(
    times: Sequence[float], first: float, last: float
) -> tuple[tuple[float, float], ...]:
    """Every stretch with no event longer than a sixth of the run: drawn :data:`GAP_PX`
    wide."""
    long = max(last - first, 1e-6) / 6
    return tuple((a, b) for a, b in itertools.pairwise(sorted(times)) if b - a > long)


def ticks(first: float, last: float, gaps: Sequence[tuple[float, float]]) -> list[float]:
    """Round times to label (about ten over the busy time), none inside a quiet stretch."""
    busy = (last - first) - sum(b - a for a, b in gaps)
    step = next((s for s in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10,
                             20, 60) if busy / s <= 10), 120.0)  # fmt: skip
    at, out = (int(first / step) + 1) * step, []
    while at < last:
        if not any(a < at < b for a, b in gaps):
            out.append(at)
        at = round(at + step, 6)
    return out


def layers_of(
    rows: Sequence[EventRow],
    lanes: dict[str, int],
    px: Callable[[float], float],
    coordinator: float,
    rates: bool = True,
) -> RunLayers:
    """The marks of ``rows`` on ``lanes`` (a task's name to its lane), and the record
    rates if ``rates``; ``px``: a time's x in pixels, to tell marks too close to label
    apart."""
    marks: list[tuple[str, float, float]] = []
    aligning: list[tuple[float, float, float]] = []
    began: dict[tuple[int, str | None], float] = {}
    for r in rows:
        y = lanes.get(r.task or "")
        if r.kind in ("triggered", "completed"):
            marks.append((r.kind, r.time, coordinator))
            continue
        if y is None:
            continue
        if r.kind in ("barrier", "marker", "snapshot"):
            marks.append(("snapshot" if r.kind == "snapshot" else "barrier", r.time, y))
        if r.kind == "block":
            began.setdefault((r.attempt, r.task), r.time)
        elif r.kind in ("snapshot", "failure", "restored") and (r.attempt, r.task) in began:
            aligning.append((began.pop((r.attempt, r.task)), r.time, float(y)))
    counts = [
        (f"↷{sum(r.count or 0 for r in g):,}", t, y)
        for y, t, g in _grouped(
            [r for r in rows if r.count], lanes, px, ("overtaken",), OVERTAKEN_APART
        )
    ]
    counts += [
        (" ".join(SIGNS[r.kind] for r in g), t, y)
        for y, t, g in _grouped(rows, lanes, px, SIGNS, SIGN_APART)
    ]
    return RunLayers(
        coordinator, tuple(marks), tuple(aligning), tuple(counts), _rates(rows) if rates else ()
    )


def _grouped(
    rows: Sequence[EventRow],
    lanes: dict[str, int],
    px: Callable[[float], float],
    kinds: Collection[str],
    apart: float,
) -> list[tuple[float, float, list[EventRow]]]:
    """The rows of ``kinds`` per lane, grouped where each lies within ``apart`` px of the
    group's first: (lane, time of the first, the group's rows)."""
    groups: dict[int, list[tuple[float, float, list[EventRow]]]] = {}
    for r in rows:
        y = lanes.get(r.task or "")
        if r.kind in kinds and y is not None:
            on_lane = groups.setdefault(y, [])
            if on_lane and px(r.time) - px(on_lane[-1][1]) < apart:
                on_lane[-1][2].append(r)
            else:
                on_lane.append((float(y), r.time, [r]))
    return [g for on_lane in groups.values() for g in on_lane]


def _rates(
    rows: Sequence[EventRow],
) -> tuple[tuple[str, float, tuple[tuple[tuple[float, float], ...], ...]], ...]:
    """Every channel's records a second, per bucket, as steps from the axis and back
    (a burst of one bucket shows as a spike), cut where more than three buckets in a row
    had none; nothing for a run of fewer than three buckets on every channel."""
    buckets: dict[str, dict[float, float]] = {}
    span = BUCKET  # the widest bucket
    for r in rows:
        if r.kind == "records" and r.channel is not None:
            b = buckets.setdefault(r.channel, {})
            b[r.time] = b.get(r.time, 0) + (r.count or 0) / (r.span or BUCKET)
            span = max(span, r.span or BUCKET)
    if max((len(b) for b in buckets.values()), default=0) < 3:
        return ()
    out = []
    for c in channels_of([r for r in rows if r.kind == "records"]):
        series = sorted(buckets.get(c, {}).items())
        peak = max((n for _t, n in series), default=0.0)
        out.append((c, peak, tuple(_steps(run, span) for run in _stretches(series, span))))
    return tuple(out)


def _steps(run: list[tuple[float, float]], span: float) -> tuple[tuple[float, float], ...]:
    """A stretch of buckets as steps: each bucket's rate held over its own length, zero
    before, between (where no bucket was) and after."""
    pts: list[tuple[float, float]] = []
    for i, (t, n) in enumerate(run):
        end = min(run[i + 1][0], t + span) if i + 1 < len(run) else t + span
        if not pts or pts[-1][0] < t:
            pts += [(pts[-1][0] if pts else t, 0.0), (t, 0.0)]
        pts += [(t, n), (end, n)]
    return (*pts, (pts[-1][0], 0.0))


def _stretches(series: list[tuple[float, float]], span: float) -> list[list[tuple[float, float]]]:
    """``series`` cut where more than three buckets (``span`` s) in a row had no records."""
    runs: list[list[tuple[float, float]]] = []
    for t, n in series:
        if not runs or t - runs[-1][-1][0] > 3.5 * span:
            runs.append([])
        runs[-1].append((t, n))
    return runs


def rates_title() -> str:
    """The heading of the record-rate strip, in the language set."""
    return _("records per second on each channel")
