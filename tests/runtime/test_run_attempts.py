"""The driver's attempts (:func:`absnb.runtime.spark.recovery.run_attempts`): the checkpoint an
attempt restores is read from storage only after the failed attempt was fenced."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from absnb.jobs.word_count import word_count
from absnb.runtime.plan import HostPlan
from absnb.runtime.spark.recovery import run_attempts


@dataclass
class Storage:
    """Checkpoint storage whose newest manifest is ``latest_id``."""

    log: list[str]
    latest_id: int = 0

    def latest(self, job_id: str, fingerprint: str, **_: Any) -> Any:
        self.log.append(f"read {self.latest_id}")
        return SimpleNamespace(checkpoint_id=self.latest_id) if self.latest_id else None


@dataclass
class Server:
    """A coordinator server whose loop thread was still completing checkpoint 821 of the
    failed attempt (writing its manifest) when the stage failed: the completion is done by
    the time ``fence`` returns, since both run on the loop's thread."""

    log: list[str]
    storage: Storage
    completing: list[int] = field(default_factory=list)
    failures: dict[int, str] = field(default_factory=dict)
    stopped: Exception | None = None

    def fence(self) -> None:
        if self.completing:
            self.storage.latest_id = self.completing.pop()
        self.log.append("fence")

    def new_attempt(self, attempt: int, restore: int) -> None:
        self.log.append(f"attempt {attempt} restores {restore}")

    def failure(self, attempt: int, timeout: float = 0.0) -> None:
        return None


def test_an_attempt_restores_what_storage_holds_once_the_failed_attempt_is_fenced() -> None:
    log: list[str] = []
    storage = Storage(log, latest_id=820)
    server = Server(log, storage)
    plan = HostPlan(word_count(), "abs", 0, (), b"s", ("127.0.0.1", 1), "file:///x", "job")
    restores: list[set[int]] = []

    def stage(plans: list[HostPlan]) -> list[Any]:
        restores.append({p.restore for p in plans})
        if len(restores) == 1:
            server.completing.append(821)  # in flight on the loop's thread as the stage fails
            raise RuntimeError("a host failed")
        return []

    coordinator = SimpleNamespace(completed=[])
    done = run_attempts(stage, server, plan, storage, coordinator, 2, 1, False)  # type: ignore[arg-type]
    assert restores == [{820}, {821}]
    assert done.restored == [820, 821]
    assert log == [
        "fence", "read 820", "attempt 0 restores 820",
        "fence", "read 821", "attempt 1 restores 821",
    ]  # fmt: skip


@pytest.mark.parametrize("stage_fails", [False, True])
def test_a_run_the_server_stopped_raises_its_error_and_is_not_restarted(stage_fails: bool) -> None:
    from absnb.runtime import StorageError

    log: list[str] = []
    storage = Storage(log)
    server = Server(log, storage)
    plan = HostPlan(word_count(), "abs", 0, (), b"s", ("127.0.0.1", 1), "file:///x", "job")

    def stage(plans: list[HostPlan]) -> list[Any]:
        server.stopped = StorageError("No space left on device. The run stops")
        if stage_fails:  # a host failed on its own before the final Stop reached it
            raise RuntimeError("a host failed")
        return []  # the hosts ended on the final Stop

    coordinator = SimpleNamespace(completed=[])
    with pytest.raises(StorageError, match="No space left"):
        run_attempts(stage, server, plan, storage, coordinator, 2, 3, False)  # type: ignore[arg-type]
    assert log.count("fence") == 1  # no restart
