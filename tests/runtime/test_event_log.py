"""The driver's side of the event log, without Spark: hosts' clocks aligned, snapshots
joined with their counts, JSON lines round trip, and the Chrome trace event format."""

from __future__ import annotations

import json

import pytest

from absnb.core.errors import InvalidValueError
from absnb.core.events import EventRow, channel_name
from absnb.core.messages import RecordBatch
from absnb.runtime.events.files import chrome_trace
from absnb.runtime.events.log import EventBatch
from absnb.runtime.events.table import RunEvents, load_events, run_events
from absnb.task import Out

SENT = {"source[0]->count[0]": 7}
CONSUMED = {"source[0]->count[0]": 7}


def batches() -> list[tuple[float, EventBatch]]:
    """Host 0's clock is 1000 s ahead of the driver's; host 1's is the driver's."""
    counts0 = {"sent": SENT, "consumed": {}, "recorded": {}}
    counts1 = {"sent": {}, "consumed": CONSUMED, "recorded": {}}
    h0 = (
        (1000.10, "source[0]", "snapshot_state", None, 1, None),
        (1000.11, "source[0]", "snapshot_counts", None, 1, counts0),
        (1000.12, "source[0]", "ack", None, 1, {"size": 10}),
    )
    h1 = (
        (0.15, "count[0]", "barrier", "source[0]->count[0]", 1, None),
        (0.15, "count[0]", "snapshot_state", None, 1, None),
        (0.16, "count[0]", "snapshot_counts", None, 1, counts1),
        (0.17, "count[0]", "ack", None, 1, {"size": 20}),
    )
    return [
        (0.131, EventBatch(0, 0, 1000.13, h0, {})),
        (0.25, EventBatch(0, 0, 1000.2, (), {(20004, "source[0]->count[0]"): 5})),  # slower
        (0.181, EventBatch(1, 0, 0.18, h1, {})),
    ]


def log() -> RunEvents:
    coordinator = [
        (0.09, "triggered", {"checkpoint_id": 1, "attempt": 0}),
        (0.19, "completed", {"checkpoint_id": 1, "duration": 0.1}),
    ]
    return run_events(0.0, coordinator, batches())


def test_host_clocks_are_aligned_to_the_drivers_by_the_fastest_batch() -> None:
    df = log().events
    source = df[(df.task == "source[0]") & (df.kind == "snapshot")].iloc[0]
    assert source.time == pytest.approx(0.101)  # 1000.10 + (0.131 - 1000.13)
    assert source.sent == SENT
    assert source["size"] == 10
    order = ["triggered", "snapshot", "ack", "barrier", "snapshot", "ack", "completed", "records"]
    assert list(df.kind) == order
    records = df[df.kind == "records"].iloc[0]
    assert (records.task, records["count"]) == ("count[0]", 5)


def test_check_cuts_is_empty_for_the_log_and_names_a_tampered_channel() -> None:
    assert log().check_cuts() == []
    rows = [
        EventRow(r.time, r.attempt, r.task, r.kind, r.channel, r.checkpoint, r.count, r.sent,
                 {"source[0]->count[0]": 6}, r.recorded, r.size)
        if r.kind == "snapshot" and r.task == "count[0]"
        else r
        for r in log().rows
    ]  # fmt: skip
    (problem,) = RunEvents(rows).check_cuts()
    assert problem.startswith("checkpoint 1, channel source[0]->count[0]: source[0] had sent 7")


def test_a_killed_attempt_gets_a_failure_row_from_the_driver() -> None:
    events = run_events(10.0, [], [], failed_at=[12.5], errors=["host 1 was lost"])
    (row,) = events.rows
    assert (row.kind, row.time, row.attempt, row.detail) == ("failure", 2.5, 0, "host 1 was lost")


def test_save_and_load_events_round_trip(tmp_path) -> None:
    path = str(tmp_path / "events.jsonl")
    log().save_events(path)
    assert load_events(path).rows == log().rows
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"time": 1}\n')
    with pytest.raises(InvalidValueError, match="line 1: not an event row"):
        load_events(str(bad))


PHASES = {"X", "i", "C", "M"}


def test_the_chrome_trace_has_the_documented_fields(tmp_path) -> None:
    """The trace event format: an object with ``traceEvents``; every event has ``name``,
    ``ph``, ``pid``; all but metadata have a numeric ``ts`` in microseconds; ``X`` has
    ``dur``; instants have a scope ``s``; ``M`` names a thread or process in args."""
    path = tmp_path / "trace.json"
    log().to_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert trace["displayTimeUnit"] in ("ms", "ns")
    threads = {}
    for e in trace["traceEvents"]:
        assert isinstance(e["name"], str)
        assert e["ph"] in PHASES
        assert isinstance(e["pid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name")
            assert "name" in e["args"]
            threads[e.get("tid")] = e["args"]["name"]
            continue
        assert isinstance(e["ts"], int | float)
        assert e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] >= 0
            assert isinstance(e["tid"], int)
        if e["ph"] == "i":
            assert e["s"] in ("g", "p", "t")
        if e["ph"] == "C":
            assert all(isinstance(v, int | float) for v in e["args"].values())
    assert {"coordinator", "source[0]", "count[0]"} <= set(threads.values())
    spans = [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"]
    assert spans == ["snapshot 1 written", "snapshot 1 written"]
    assert chrome_trace([])["traceEvents"][0]["name"] == "process_name"


class Client:
    def __init__(self) -> None:
        self.batches: list[tuple[float, EventBatch]] = []

    def events(self, batch: EventBatch) -> None:
        self.batches.append((batch.sent_at, batch))


def host_log(events: bool = True):
    """count[0] of word count, on a host of its own, with its event log."""
    from absnb.jobs.word_count import word_count
    from absnb.protocols import get_protocol
    from absnb.runtime.events.log import EventLog
    from absnb.runtime.plan import HostPlan
    from absnb.task import StreamTask

    job = word_count()
    t = next(x for x in job.graph.tasks if str(x) == "count[0]")
    task = StreamTask(job.graph, t, get_protocol("abs", job.graph), history=False)
    plan = HostPlan(job, "abs", 0, (t,), b"", ("127.0.0.1", 0), "", "x", events=events)
    log = EventLog(plan, {t: task})
    log.client = Client()
    return log, task, t, list(job.graph.inputs[t])


def test_the_host_hooks_record_every_kind_from_what_the_task_returned() -> None:
    from absnb.core.effects import Decline
    from absnb.core.messages import CancelCheckpointMarker, CheckpointBarrier, EndOfInput
    from absnb.runtime.data_plane.priority import Overtaking

    log, task, t, (a, b) = host_log()
    out = Out()
    log.delivered(a, RecordBatch(["x", "y", "z"], 1))
    task.deliver_batch(a, RecordBatch(["x", "y", "z"], 1), out)
    for c in (a, b):  # the first barrier blocks a, the second ends the alignment
        out = Out()
        log.delivered(c, CheckpointBarrier(1))
        task.deliver(c, CheckpointBarrier(1), out)
        log.controls(t, out.controls)
    log.delivered(b, Overtaking(CheckpointBarrier(2), (RecordBatch(["w"] * 4, 1),)))
    log.delivered(a, CancelCheckpointMarker(3))
    log.controls(t, [Decline(4, "told to")])
    log.add("switched", t)
    log.delivered(a, EndOfInput())
    log.ship(force=True)
    df = run_events(0.0, [], log.client.batches).events
    kinds = list(df.kind)
    for kind in ("barrier", "block", "unblock", "snapshot", "overtaken", "cancel", "declined",
                 "switched", "end_of_input", "records"):  # fmt: skip
        assert kind in kinds
    snap = df[df.kind == "snapshot"].iloc[0]
    assert snap.consumed == {channel_name(a.src, a.dst): 3, channel_name(b.src, b.dst): 0}
    assert int(df[df.kind == "overtaken"]["count"].iloc[0]) == 4
    assert int(df[df.kind == "records"]["count"].sum()) == 3


def test_events_false_records_nothing() -> None:
    log, _, t, (a, _) = host_log(events=False)
    log.delivered(a, RecordBatch(["x"], 1))
    log.add("switched", t)
    log.ship(force=True)
    assert log.client.batches == []
    assert log.rows == []


def test_buckets_widen_as_a_host_runs_on_so_that_counts_stay_few() -> None:
    from absnb.runtime.events.log import bucket_width

    assert [bucket_width(s) for s in (0, 119, 120, 3599, 3600, 86_400)] == [
        0.05, 0.05, 1.0, 1.0, 10.0, 10.0,
    ]  # fmt: skip
    log, _, _, (a, _) = host_log()
    log.started -= 200  # a host that has run for 200 s: its next buckets are 1 s wide
    log.ship(force=True)
    log.delivered(a, RecordBatch(["x"] * 7, 1))
    log.ship(force=True)
    (_, batch) = log.client.batches[-1]
    assert batch.width == 1.0
    (start,) = [s for s, _ in batch.flow]
    assert start == int(start)  # a whole second
    (row,) = run_events(0.0, [], log.client.batches).rows
    assert (row.kind, row.count, row.span) == ("records", 7, 1.0)
