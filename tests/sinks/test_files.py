"""The file sinks: transactions as files (open, pre-committed in staging, committed by an
atomic rename), idempotent commit and abort, recovery after a crash in the middle of
committing, the at-least-once file sink's duplicates, and clear errors for a directory it
cannot write. (Crash at every phase and the Hypothesis property run the file sink too:
test_sim_phases.py, test_sim_properties.py.)"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

import absnb
from absnb.core.ids import TaskId
from absnb.sim.actions import Crash, Recover
from absnb.sim.checks import reference_output
from absnb.sim.schedulers import RandomScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.world import World
from absnb.sinks import (
    FileAtLeastOnceSink,
    FileSink,
    SinkConfigurationError,
    TransactionError,
    TransactionLostError,
)
from absnb.sinks.files import decode_record, encode_record, task_of
from tests.sinks.harness import LINES, unfinished

TASK = TaskId("sink", 0, 2)


def started(sink: FileSink, task: TaskId = TASK):
    return sink.initialize_state(task, sink.initial_state(), False)


def write(sink: FileSink, state, *values):
    for v in values:
        state, _ = sink.process(state, v)
    return state


def test_a_transaction_is_a_staging_file_until_its_commit_renames_it(tmp_path: Path) -> None:
    sink = FileSink(tmp_path / "out")
    sink.check()
    s = write(sink, started(sink), ("to", 1), ("be", 1))
    staged = os.listdir(sink.staging)
    assert staged == [s.current]
    assert s.current.startswith("sink%5B0%5D.")  # the task, encoded, names the file
    assert task_of(s.current) == "sink[0]"
    s = sink.snapshot_state(s, 3)
    ((n, txn),) = s.pending
    assert n == 3
    assert txn.startswith("part-000003.sink%5B0%5D.")  # pre-commit renames within staging
    lines = Path(sink.staging, txn).read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"_1": "to", "_2": 1}, {"_1": "be", "_2": 1}]
    assert sink.committed() == []  # pre-committed is durable but not visible
    s = sink.notify_checkpoint_complete(s, 3)
    assert os.listdir(sink.staging) == []
    assert sink.committed_files() == [str(tmp_path / "out" / txn)]
    assert sink.committed() == [("to", 1), ("be", 1)]  # tuples come back as tuples
    sink.commit(txn)  # again: already moved, nothing happens
    assert sink.committed() == [("to", 1), ("be", 1)]
    assert [t.status for t in sink.transactions()] == ["committed"]


def test_abort_deletes_and_is_idempotent(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    s = write(sink, started(sink), "a")
    open_txn = s.current
    s = sink.snapshot_state(write(sink, sink.snapshot_state(s, 1), "b"), 2)
    assert [t.status for t in sink.transactions()] == ["pre-committed", "pre-committed"]
    for _, txn in s.pending:
        sink.abort(txn)
        sink.abort(txn)
    sink.abort(open_txn)  # renamed at pre-commit: nothing of that name is left
    assert os.listdir(sink.staging) == []
    assert sink.committed() == []


def test_restore_commits_the_restored_files_and_deletes_the_others(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    other = TaskId("sink", 1, 2)
    s_other = write(sink, started(sink, other), "x")  # sink[1]'s open file: not touched
    s = sink.snapshot_state(write(sink, started(sink), "a"), 1)
    restored = s  # checkpoint 1 completes, the task fails before it hears so
    s = sink.snapshot_state(write(sink, s, "b"), 2)  # pre-committed for 2, never complete
    write(sink, s, "c")  # open when the task fails
    assert len(sink.leftovers("sink[0]")) == 3
    s = sink.initialize_state(TASK, restored, True)
    assert s.pending == ()
    assert sink.committed() == ["a"]
    assert sink.leftovers("sink[0]") == []
    assert sink.leftovers("sink[1]") == [s_other.current]
    sink.initialize_state(TASK, restored, True)  # a second restore commits nothing twice
    assert sink.committed() == ["a"]


def test_task_names_with_dots_and_slashes_are_kept_apart(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    a = write(sink, started(sink, TaskId("my.sink/x", 0, 2)), 1)
    b = write(sink, started(sink, TaskId("my", 0, 2)), 2)
    assert sink.leftovers("my.sink/x[0]") == [a.current]
    assert sink.leftovers("my[0]") == [b.current]
    assert sink.leftovers("my.sink") == []


def test_records_round_trip_through_json_objects() -> None:
    for value in [("w", 3), (), 7, "text", None, {"k": [1, 2]}, [1, 2], ("a", ("b", 1))]:
        obj = json.loads(json.dumps(encode_record(value)))
        back = decode_record(obj)
        want = ("a", ["b", 1]) if value == ("a", ("b", 1)) else value  # nested: JSON lists
        assert back == want
    assert encode_record(("w", 3), ("word", "count")) == {"word": "w", "count": 3}
    assert decode_record({"count": 3, "word": "w"}, ("word", "count")) == ("w", 3)
    with pytest.raises(ValueError, match="fields"):
        encode_record(("w",), ("word", "count"))


def test_committing_a_lost_or_open_file_is_an_error(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    s = write(sink, started(sink), "a")
    with pytest.raises(TransactionError, match="not pre-committed"):
        sink.commit(s.current)
    ((_, txn),) = sink.snapshot_state(s, 1).pending
    os.unlink(Path(sink.staging, txn))  # deleted behind the job's back
    with pytest.raises(TransactionLostError, match="lost"):
        sink.commit(txn)


class CrashAfterFirstRename(FileSink):
    """Fails (as the process would die) right after its first commit's rename."""

    crashes = 1

    def commit(self, txn: str) -> None:
        super().commit(txn)
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("injected: died after the rename")


def test_a_crash_between_two_renames_of_one_commit_is_exactly_once(tmp_path: Path) -> None:
    """Two transactions pending (the notification of checkpoint 1 was lost), the commit for
    checkpoint 2 renames the first and dies: one file moved, one not. The restore of
    checkpoint 2 commits both, the moved one again (idempotent), and nothing twice."""
    sink = CrashAfterFirstRename(tmp_path)
    s = sink.snapshot_state(write(sink, started(sink), "a", "b"), 1)
    s = sink.snapshot_state(write(sink, s, "c"), 2)
    restored = s
    write(sink, s, "d")  # open
    with pytest.raises(RuntimeError, match="injected"):
        sink.notify_checkpoint_complete(s, 2)
    statuses = Counter(t.status for t in sink.transactions())
    assert statuses == {"committed": 1, "pre-committed": 1, "open": 1}
    assert sink.committed() == ["a", "b"]
    sink.initialize_state(TASK, restored, True)
    assert sink.committed() == ["a", "b", "c"]
    assert unfinished(sink) == []


def test_a_crash_in_the_middle_of_committing_in_the_simulator(tmp_path: Path) -> None:
    """The first commit of the run dies after its rename; the sink task crashes there and
    the job recovers: the output is exactly the failure-free output."""
    sink = CrashAfterFirstRename(tmp_path)
    job = absnb.word_count(LINES, sink=sink)
    stepper = Stepper(
        World(job, "abs", checkpoint_interval=4), RandomScheduler(seed=3), history=False
    )
    with pytest.raises(RuntimeError, match="injected"):
        stepper.run()
    crashed = next(t for t in job.graph.tasks_of("sink") if stepper.world.tasks[t].state.pending)
    assert len(sink.committed_files()) == 1  # renamed, but the task did not record it
    stepper.step(Crash(crashed))
    stepper.step(Recover("full"))
    stepper.run()
    assert stepper.world.is_finished()
    assert stepper.world.output() == reference_output(job)
    assert unfinished(sink) == []


def test_the_at_least_once_file_sink_writes_duplicates(tmp_path: Path) -> None:
    duplicated = 0
    for crash_at in range(5, 60, 3):
        sink = FileAtLeastOnceSink(tmp_path / f"run{crash_at}")
        job = absnb.word_count(LINES, sink=sink)
        scheduler = RandomScheduler(seed=crash_at, crash_at=crash_at, crash_task="count[1]")
        stepper = Stepper(World(job, "abs", checkpoint_interval=6), scheduler, history=False)
        stepper.run()
        got, want = Counter(stepper.world.output()), Counter(reference_output(job))
        assert not want - got  # nothing lost
        duplicated += (got - want).total() > 0
    assert duplicated > 0


def test_output_is_readable_by_pandas(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    sink = FileSink(tmp_path, columns=("word", "count"))
    job = absnb.word_count(LINES, sink=sink)
    Stepper(World(job, "abs", checkpoint_interval=5), RandomScheduler(seed=1)).run()
    frames = [pd.read_json(path, lines=True) for path in sink.committed_files()]
    assert len(frames) > 1
    table = pd.concat(frames)
    assert list(table.columns) == ["word", "count"]
    rows = sorted(zip(table["word"], table["count"].astype(int), strict=True))
    assert rows == reference_output(job)


# -- bad input ---------------------------------------------------------------------------
def test_a_directory_that_is_a_file_fails_before_the_job_starts(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_text("not a directory")
    job = absnb.word_count(LINES, sink=FileSink(target))
    with pytest.raises(SinkConfigurationError, match=r"is a file, not a directory: pass a dir"):
        World(job)
    job = absnb.word_count(LINES, sink=FileSink(target / "below"))
    with pytest.raises(SinkConfigurationError, match="cannot write"):
        World(job)


def test_a_directory_that_is_not_writable_fails_before_the_job_starts(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root writes anywhere it has permission bits for: use a
        target = Path("/proc/absnb-test/out")  # read-only file system instead
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        target = locked / "out"
    sink = FileSink(target)
    with pytest.raises(SinkConfigurationError, match=r"cannot write to the target directory"):
        World(absnb.word_count(LINES, sink=sink))
    with pytest.raises(SinkConfigurationError, match="permissions"):
        World(absnb.word_count(LINES, sink=FileAtLeastOnceSink(target)))


def test_a_staging_directory_on_another_file_system_is_refused(tmp_path: Path) -> None:
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second file system (/dev/shm) to put the staging directory on")
    staging = Path("/dev/shm") / f"absnb-staging-{os.getpid()}"
    try:
        with pytest.raises(SinkConfigurationError, match="another file system"):
            FileSink(tmp_path, staging).check()
    finally:
        if staging.exists():
            staging.rmdir()
