"""Recovery never restores behind a committed checkpoint (issue 12, item 5).

Two-phase-commit sinks commit a checkpoint's transactions once it completes; restoring an
older checkpoint after that would commit the same output again. Files of the newest
completed checkpoint are corrupted, truncated and deleted, for the file sink and the
PostgreSQL sink, between the failure and the recovery: each run ends either with the
failure-free output committed exactly once, or with a :class:`CommittedCheckpointLostError`
naming the damaged file. Never with silent duplicates. First every file under every damage
on storage alone, without Spark; then on Spark each sink under each damage.
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import absnb
from absnb.core.ids import TaskId
from absnb.core.snapshot import TaskSnapshot
from absnb.runtime import Failure
from absnb.runtime.spark import SparkRuntime
from absnb.runtime.storage.checkpoints import CheckpointStorage, CorruptCheckpointWarning
from absnb.runtime.storage.fs import CommittedCheckpointLostError
from absnb.sinks import FileSink
from tests.runtime.test_spark_sinks import exactly, text
from tests.sinks.harness import postgres_sinks, unfinished
from tests.sinks.pg import pg_server  # noqa: F401 (a fixture)

DAMAGES = ("corrupt", "truncate", "delete")


def damage(path: str, how: str) -> None:
    """Flip a byte in the middle of ``path``, cut it in half, or delete it."""
    if how == "delete":
        os.unlink(path)
        return
    data = bytearray(Path(path).read_bytes())
    if how == "truncate":
        Path(path).write_bytes(bytes(data[: len(data) // 2]))
    else:
        data[len(data) // 2] ^= 0xFF
        Path(path).write_bytes(bytes(data))


def checkpoint_files(storage: CheckpointStorage, job_id: str, checkpoint_id: int) -> list[str]:
    """Every file of a checkpoint (task snapshots and manifest), sorted."""
    directory = os.path.join(storage.root, job_id, f"chk-{checkpoint_id}")
    return sorted(os.path.join(directory, name) for name in os.listdir(directory))


# -- storage alone ---------------------------------------------------------------------------
TASKS = (TaskId("src"), TaskId("count", 0, 2), TaskId("count", 1, 2))


def two_checkpoints(root: Path) -> CheckpointStorage:
    storage = CheckpointStorage(str(root))
    for n in (1, 2):
        for t in TASKS:
            storage.write_task("job", TaskSnapshot(t, n, state={"n": n, "t": str(t)}, offset=n))
        storage.complete("job", n, TASKS, fingerprint="f", protocol="abs")
    return storage


@pytest.mark.parametrize("how", DAMAGES)
def test_storage_refuses_to_fall_back_behind_the_committed_checkpoint(tmp_path, how) -> None:
    """Each file of checkpoint 2 damaged in turn: told that 2 was committed, ``latest``
    names that file; not told, it falls back to 1 (with a warning if 2 looks complete)."""
    cases = 0
    for i in range(len(TASKS) + 1):
        storage = two_checkpoints(tmp_path / f"{how}-{i}")
        path = checkpoint_files(storage, "job", 2)[i]
        damage(path, how)
        with pytest.raises(CommittedCheckpointLostError, match="checkpoint 2") as refused:
            storage.latest("job", "f", committed=2)
        assert refused.value.checkpoint_id == 2
        assert refused.value.path == path
        assert os.path.basename(path) in str(refused.value)
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            assert storage.latest("job", "f").checkpoint_id == 1
        # without its manifest, checkpoint 2 does not look complete: nothing to warn about
        assert len(warned) == (not path.endswith("_manifest.json") or how != "delete")
        cases += 1
    assert cases == 4


def test_storage_refuses_when_the_committed_checkpoint_is_gone(tmp_path) -> None:
    storage = two_checkpoints(tmp_path)
    directory = os.path.dirname(checkpoint_files(storage, "job", 2)[0])
    storage._fs.rmtree(directory)
    with pytest.raises(CommittedCheckpointLostError, match="directory") as refused:
        storage.latest("job", "f", committed=2)
    assert refused.value.path == directory


def test_storage_restores_the_committed_checkpoint_when_an_older_one_is_damaged(tmp_path):
    storage = two_checkpoints(tmp_path)
    for path in checkpoint_files(storage, "job", 1):
        damage(path, "corrupt")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert storage.latest("job", "f", committed=2).checkpoint_id == 2


# -- Spark, both sinks -----------------------------------------------------------------------
class DamagingStorage(CheckpointStorage):
    """Checkpoint storage that damages file ``index`` of the newest complete checkpoint the
    first time the driver looks for a checkpoint to restore (after the failure)."""

    def __init__(self, url: str, how: str, index: int) -> None:
        super().__init__(url)
        self.how, self.index = how, index
        self.damaged: str | None = None
        self.damaged_id = 0
        self.files = 0

    def latest(self, job_id: str, fingerprint: str | None = None, **kw: Any) -> Any:
        ids = self.checkpoints(job_id)
        if ids and self.damaged is None:
            files = checkpoint_files(self, job_id, ids[-1])
            self.files = len(files)
            if self.index < len(files):
                self.damaged, self.damaged_id = files[self.index], ids[-1]
                damage(self.damaged, self.how)
        return super().latest(job_id, fingerprint, **kw)


OUTCOMES: Counter[tuple[str, str]] = Counter()
"""(sink, outcome) over the Spark cases of this module, printed at the end."""

ATTEMPTS = 3
"""Runs of a case until its failure fires (whether it does depends on the machine's load)."""
FILES = 7
"""Files of a word count checkpoint: two sources, two counters, two sinks, the manifest."""
SINKS = ("files", "postgres")


def make_sink(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if kind == "files":
        return FileSink(tmp_path / "out")
    return postgres_sinks(request.getfixturevalue("pg_server").dsn)()


def duplicates_and_lost(committed: list, answer: dict[str, int]) -> tuple[int, int]:
    want, got = Counter(exactly(answer)), Counter(committed)
    return sum((got - want).values()), sum((want - got).values())


REPEAT = 2
"""Input repeats: 2,000 lines per source."""
RATE = 2_000
"""Lines per second each source reads: checkpoint 1 completes, and is committed, well
before the input ends, however loaded the machine."""


@pytest.fixture(scope="module")
def long_answer(spark) -> dict[str, int]:
    from absnb.runtime.spark import word_count_answer

    return word_count_answer(spark, text(REPEAT))


CASES = (
    ("files", "corrupt", 0),
    ("files", "truncate", 3),
    ("files", "delete", 5),
    ("postgres", "corrupt", 4),
    ("postgres", "truncate", 1),
    ("postgres", "delete", 6),
)
"""(sink, damage, file index): each sink under each damage, and across them the manifest
(index 0) and a file of each kind of task (counter, sink, source). Every file under every
damage is the storage's own case above: the driver asks the same ``latest`` whichever file
it is, so a Spark run per file repeated the same path."""


@pytest.mark.parametrize(("kind", "how", "index"), CASES)
def test_a_damaged_committed_checkpoint_is_never_restored_behind(
    request, spark, tmp_path, long_answer, kind, how, index
) -> None:
    # sink[1] has committed checkpoint 1 (so the newest complete checkpoint is committed)
    failure = Failure("sink[1]", notified=1, after_commit=True, kind="raise")
    refused: CommittedCheckpointLostError | None = None
    for attempt in range(ATTEMPTS):
        where = tmp_path / f"attempt-{attempt}"
        storage = DamagingStorage(str(where / "checkpoints"), how, index)
        runtime = SparkRuntime(spark, storage=storage)
        sink = make_sink(kind, request, where)
        job = absnb.word_count(text(REPEAT), sink=sink)
        try:
            run = runtime.run(
                job, "abs", checkpoint_interval=0.05, failures=[failure], source_rate=RATE
            )
        except CommittedCheckpointLostError as e:
            refused = e
            break
        if run.failed_at:
            break
        # The failure never fired: on a loaded machine sink[1] can be told of every
        # checkpoint at a moment it holds nothing to commit. That run tested nothing: draw
        # again (the assertions below fail if no attempt fired).
    if refused is not None:
        assert storage.damaged is not None
        assert refused.path == storage.damaged
        assert refused.checkpoint_id == storage.damaged_id
        assert "restore_older=True" in str(refused)
        OUTCOMES[(kind, "refused")] += 1
        return
    assert run.restarts == 1
    assert storage.files == FILES
    duplicates, lost = duplicates_and_lost(sorted(sink.committed()), long_answer)
    OUTCOMES[(kind, f"finished, {duplicates} duplicates, {lost} lost")] += 1
    assert (duplicates, lost) == (0, 0)
    assert unfinished(sink) == []


@pytest.mark.parametrize("kind", SINKS)
def test_restore_older_is_an_explicit_choice(request, spark, tmp_path, long_answer, kind):
    """With ``restore_older=True`` the run restores behind the damaged checkpoint, warns,
    and finishes: whatever the sinks committed twice is the price the caller chose."""
    storage = DamagingStorage(str(tmp_path / "checkpoints"), "corrupt", FILES - 1)
    runtime = SparkRuntime(spark, storage=storage)
    sink = make_sink(kind, request, tmp_path)
    failure = Failure("sink[1]", notified=1, after_commit=True, kind="raise")
    job = absnb.word_count(text(REPEAT), sink=sink)
    with pytest.warns(CorruptCheckpointWarning):
        run = runtime.run(
            job,
            "abs",
            checkpoint_interval=0.05,
            failures=[failure],
            source_rate=RATE,
            restore_older=True,
        )
    assert run.restarts == 1
    assert 0 <= run.restored[1] < storage.damaged_id
    duplicates, lost = duplicates_and_lost(sorted(sink.committed()), long_answer)
    assert lost == 0
    OUTCOMES[(kind, f"restore_older: {duplicates} duplicates")] += 1


def test_outcomes_table() -> None:
    """Prints the cases and outcomes (run last in this module; -s to see it)."""
    for (kind, outcome), n in sorted(OUTCOMES.items()):
        print(f"{kind:9} {outcome:40} {n}")
    assert all(
        o in ("refused", "finished, 0 duplicates, 0 lost")
        for _, o in OUTCOMES
        if not o.startswith("restore_older")
    )
