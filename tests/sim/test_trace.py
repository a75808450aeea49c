"""Trace files: save, load and replay runs as JSON lines (absnb.sim.trace)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import absnb
from absnb.sim.actions import Crash, Deliver, Emit, Recover, Transfer, TriggerCheckpoint
from absnb.sim.trace import (
    TraceHeader,
    action_from_json,
    action_to_json,
    load_trace,
    replay,
    save_trace,
)

DATASET = Path(__file__).resolve().parents[2] / "datasets" / "traces" / "seed_001.jsonl"
HEADER = (
    '{"absnb": "trace", "version": 1, "job": "bank_transfer", '
    '"params": {"accounts": {"A": 10000, "B": 5000}}, "protocol": "chandy-lamport"}'
)
SEED_001 = f"""\
# Seed 001 (notebook 01): A=10,000 and B=5,000.
{HEADER}

# A sends 1,000 to B; A initiates and records A'=9,000.
{{"action": "transfer", "src": "A", "dst": "B", "amount": 1000}}
{{"action": "trigger", "at": "A"}}
# B sends 1,000 then 2,000 to A.
{{"action": "transfer", "src": "B", "dst": "A", "amount": 1000}}
{{"action": "transfer", "src": "B", "dst": "A", "amount": 2000}}
# The 1,000 reaches B (B=3,000), then the marker: B records B'=3,000.
{{"action": "deliver", "channel": "A->B"}}
{{"action": "deliver", "channel": "A->B"}}
# 1,000 and 2,000 reach A while A records B->A; then B's marker: done.
{{"action": "deliver", "channel": "B->A"}}
{{"action": "deliver", "channel": "B->A"}}
{{"action": "deliver", "channel": "B->A"}}
# B fails; every task restarts from the snapshot.
{{"action": "crash", "task": "B"}}
{{"action": "recover", "mode": "full"}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def random_run(job: absnb.Job, protocol: str, **scheduler: object) -> absnb.Stepper:
    world = absnb.World(job, protocol, checkpoint_interval=5)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(**scheduler), history=False)
    stepper.run()
    return stepper


# -- round trip ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("job", "protocol", "crash"),
    [
        (absnb.word_count(), "abs", "count[1]"),
        (absnb.bank_transfer(transfers=20, seed=3), "chandy-lamport", "B"),
        (absnb.cyclic(), "abs-cyclic", "step"),
    ],
    ids=["word_count", "bank", "cyclic"],
)
@pytest.mark.parametrize("recovery", ["full", "partial"])
def test_saved_run_with_crash_replays_to_the_same_events(
    tmp_path: Path, job: absnb.Job, protocol: str, crash: str, recovery: str
) -> None:
    run = random_run(job, protocol, seed=2, crash_at=25, crash_task=crash, recovery=recovery)
    assert Crash(job.graph.task(crash)) in run.actions  # the crash did happen
    path = tmp_path / "run.jsonl"
    save_trace(path, run.initial, run.actions, run.trace)

    again = replay(path)

    assert [e.describe() for e in again.trace] == [e.describe() for e in run.trace]
    assert again.trace == run.trace
    assert again.world == run.world
    assert again.world.output() == run.world.output()


def test_saved_lines_carry_step_and_note(tmp_path: Path) -> None:
    run = random_run(absnb.word_count(), "abs", seed=1)
    path = tmp_path / "run.jsonl"
    save_trace(path, run.world, run.actions, run.trace, info={"command": "absnb run"})
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["absnb"] == "trace"
    assert lines[0]["command"] == "absnb run"
    assert lines[0]["checkpoint_interval"] == 5
    assert [line["step"] for line in lines[1:]] == list(range(len(run.trace)))
    assert [line["note"] for line in lines[1:]] == [e.describe() for e in run.trace]


def test_a_trace_without_events_has_only_action_keys(tmp_path: Path) -> None:
    run = random_run(absnb.bank_transfer(transfers=5), "chandy-lamport", seed=1)
    path = tmp_path / "run.jsonl"
    save_trace(path, run.world, run.actions)
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert all("note" not in line and "step" not in line for line in lines)
    assert replay(path).trace == run.trace


def test_header_rebuilds_the_job_with_its_parameters(tmp_path: Path) -> None:
    job = absnb.bank_transfer({"X": 700, "Y": 300, "Z": 1}, transfers=4, seed=9)
    world = absnb.World(job, "abs-cyclic", checkpoint_interval=3)
    path = tmp_path / "empty.jsonl"
    save_trace(path, world, [])
    trace = load_trace(path)
    assert trace.header == TraceHeader.of(world)
    assert trace.actions == []
    assert trace.world.job.inputs == job.inputs
    assert trace.world.job.total == 1001
    assert trace.world.protocol.name == "abs-cyclic"
    assert trace.world.coordinator.interval == 3


def test_a_job_no_builder_made_cannot_be_saved(tmp_path: Path) -> None:
    job = dataclasses.replace(absnb.word_count(), builder="my_job")
    with pytest.raises(absnb.TraceFormatError, match="build_job"):
        save_trace(tmp_path / "t.jsonl", absnb.World(job, "abs"), [])


@pytest.mark.parametrize(
    "action",
    [
        Deliver(absnb.ChannelId(absnb.TaskId("A"), absnb.TaskId("B"))),
        Emit(absnb.TaskId("A")),
        Transfer(absnb.TaskId("B"), absnb.TaskId("A"), 2000),
        TriggerCheckpoint(),
        TriggerCheckpoint(absnb.TaskId("B")),
        Crash(absnb.TaskId("A")),
        Recover("partial"),
    ],
    ids=str,
)
def test_action_json_round_trip(action: absnb.sim.Action) -> None:
    graph = absnb.bank_transfer().graph
    obj = action_to_json(action)
    assert json.loads(json.dumps(obj)) == obj
    assert action_from_json(obj, graph) == action


def test_subtask_names_parse_back() -> None:
    graph = absnb.word_count().graph
    action = action_from_json({"action": "deliver", "channel": "source[1]->count[0]"}, graph)
    source, count = absnb.TaskId("source", 1, 2), absnb.TaskId("count", 0, 2)
    assert action == Deliver(absnb.ChannelId(source, count))
    assert action_to_json(action) == {"action": "deliver", "channel": "source[1]->count[0]"}


# -- hand-written scripts --------------------------------------------------------------------
def check_seed_001(stepper: absnb.Stepper) -> None:
    """The walkthrough's snapshot, and the world after the crash and full recovery."""
    (snapshot,) = stepper.world.snapshots
    assert snapshot.state_of("A") == 9_000
    assert snapshot.state_of("B") == 3_000
    assert snapshot.channel_values() == {"A->B": [], "B->A": [1_000, 2_000]}
    world = stepper.world
    assert (world.state_of("A"), world.state_of("B")) == (9_000, 3_000)
    assert world.channel_values("B->A") == [1_000, 2_000]
    assert world.channel_values("A->B") == []


def test_hand_written_seed_001_script(tmp_path: Path) -> None:
    stepper = replay(write(tmp_path, SEED_001))
    assert len(stepper.trace) == 11
    assert "checkpoint 1 complete" in stepper.trace[8].describe()
    check_seed_001(stepper)


def test_shipped_seed_001_script_matches_the_walkthrough() -> None:
    stepper = replay(DATASET)
    check_seed_001(stepper)
    assert [str(a) for a in load_trace(DATASET).actions] == [str(a) for a in stepper.actions]


def test_script_line_numbers_skip_comments_and_blank_lines(tmp_path: Path) -> None:
    trace = load_trace(write(tmp_path, SEED_001))
    text_lines = SEED_001.splitlines()
    assert len(trace.actions) == 11
    for n, action in zip(trace.lines, trace.actions, strict=True):
        assert action_from_json(json.loads(text_lines[n - 1]), trace.world.graph) == action


# -- malformed input -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        (f"{HEADER}\n{{'action': 'emit'}}\n", 2, "not valid JSON"),
        (f'# comment\n\n{HEADER}\n{{"action": "deliver", \n', 4, "not valid JSON"),
        ('{"action": "emit", "task": "A"}\n', 1, "header"),
        ('{"absnb": "trace", "version": 7, "job": "cyclic", "protocol": "abs"}\n', 1, "version"),
        ('{"absnb": "trace", "version": 1, "protocol": "abs"}\n', 1, "'job'"),
        ('{"absnb": "trace", "version": 1, "job": "bakery", "protocol": "abs"}\n', 1, "bakery"),
        ('{"absnb": "trace", "version": 1, "job": "cyclic", "protocol": "paxos"}\n', 1, "paxos"),
        (
            '{"absnb": "trace", "version": 1, "job": "cyclic", "params": {"loops": 2}, '
            '"protocol": "abs-cyclic"}\n',
            1,
            "loops",
        ),
        (f'{HEADER}\n# c\n{{"action": "teleport"}}\n', 3, "deliver, emit, transfer"),
        (f'{HEADER}\n{{"channel": "A->B"}}\n', 2, "missing key 'action'"),
        (f"{HEADER}\n[1, 2]\n", 2, "JSON object"),
        (f'{HEADER}\n{{"action": "deliver"}}\n', 2, "needs the key 'channel'"),
        (f'{HEADER}\n{{"action": "crash", "task": "C"}}\n', 2, "its tasks are: A, B"),
        (
            f'{HEADER}\n{{"action": "deliver", "channel": "A->A"}}\n',
            2,
            "its channels are: A->B, B->A",
        ),
        (
            f'{HEADER}\n{{"action": "transfer", "src": "A", "dst": "B", "amount": "1,000"}}\n',
            2,
            "whole number",
        ),
        (f'{HEADER}\n{{"action": "recover", "mode": "half"}}\n', 2, "'full' or 'partial'"),
        # well formed, but not enabled when its turn comes: nothing is in transit yet
        (f'{HEADER}\n{{"action": "deliver", "channel": "A->B"}}\n', 2, "channel A->B is empty"),
    ],
)
def test_malformed_trace_names_file_and_line(
    tmp_path: Path, text: str, line: int, says: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(absnb.TraceFormatError) as info:
        replay(path)
    message = str(info.value)
    assert f"{path}, line {line}:" in message
    assert says in message


@pytest.mark.parametrize("text", ["", "# only a comment\n\n"])
def test_a_file_without_a_header_is_an_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(absnb.TraceFormatError, match="header"):
        load_trace(write(tmp_path, text))


def test_a_missing_file_is_a_trace_format_error(tmp_path: Path) -> None:
    with pytest.raises(absnb.TraceFormatError, match="cannot read trace file"):
        load_trace(tmp_path / "nope.jsonl")


def test_timed_lines_are_taken_in_order_of_time(tmp_path: Path) -> None:
    path = tmp_path / "timed.jsonl"
    path.write_text(
        "\n".join(
            [
                HEADER,
                '{"action": "trigger", "at": "A", "time": 4}',
                '{"action": "transfer", "src": "A", "dst": "B", "amount": 5, "time": 1}',
                '{"action": "transfer", "src": "A", "dst": "B", "amount": 7}',  # at 1, after
                '{"action": "transfer", "src": "B", "dst": "A", "amount": 9, "time": 0.5}',
            ]
        )
    )
    trace = load_trace(path)
    assert trace.times == [0.5, 1, 1, 4]
    assert [type(a).__name__ for a in trace.actions] == [
        "Transfer", "Transfer", "Transfer", "TriggerCheckpoint"
    ]  # fmt: skip
    assert [a.amount for a in trace.actions[:3]] == [9, 5, 7]  # type: ignore[union-attr]
    assert trace.lines == [5, 3, 4, 2]  # an error still names the line as written


def test_an_untimed_trace_has_no_times(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text(SEED_001)
    assert load_trace(path).times is None


@pytest.mark.parametrize("time", ['"soon"', "-1", "true", "null"])
def test_a_bad_time_names_the_line_and_the_value(tmp_path: Path, time: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(f'{HEADER}\n{{"action": "trigger", "time": {time}}}\n')
    with pytest.raises(absnb.TraceFormatError, match=r"line 2: 'time' must be a number >= 0") as e:
        load_trace(path)
    assert json.loads(time) is None or repr(json.loads(time)) in str(e.value)


def test_a_trace_of_a_custom_job_that_cannot_be_imported(tmp_path: Path) -> None:
    path = tmp_path / "custom.jsonl"
    header = json.loads(HEADER) | {"job": "no_such_module_xyz:job", "params": {}}
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(absnb.TraceFormatError, match=r"line 1: .*'no_such_module_xyz'"):
        load_trace(path)
