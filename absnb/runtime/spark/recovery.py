"""Where recovery after a failure (a host's error, or its Python worker killed by SIGKILL) is
decided: what the driver decides between the attempts of a run on Spark (:func:`run_attempts`):
which checkpoint to restore (never one behind the newest completed checkpoint of a job
with two-phase-commit sinks, whose transactions may be committed), and whether a host's
error is the user's, to be raised as itself rather than retried, and what a failed
stage's message says."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from absnb.core.errors import AbsnbError
from absnb.protocols import CheckpointCoordinator
from absnb.runtime.failures import InjectedFailure
from absnb.runtime.plan import HostPlan, HostResult, host_of

if TYPE_CHECKING:
    from absnb.core.graph import ExecutionGraph
    from absnb.core.snapshot import GlobalSnapshot
    from absnb.runtime.control_plane.server import CoordinatorServer
    from absnb.runtime.storage.checkpoints import CheckpointStorage


def restore_point(
    storage: CheckpointStorage,
    job_id: str,
    graph: ExecutionGraph,
    coordinator: CheckpointCoordinator,
    restore_older: bool,
) -> GlobalSnapshot | None:
    """The checkpoint to restore: the newest that verifies, but never one behind the newest
    completed checkpoint when the job has two-phase-commit sinks (unless ``restore_older``)."""
    from absnb.runtime.storage.fs import CommittedCheckpointLostError

    external = any(graph.function(t).external for t in graph.tasks)
    completed = coordinator.completed
    committed = completed[-1].checkpoint_id if completed and external else None
    if restore_older:
        committed = None
    try:
        if committed is None:
            return storage.latest(job_id, graph.fingerprint)
        return storage.latest(job_id, graph.fingerprint, committed=committed)
    except CommittedCheckpointLostError as e:
        raise CommittedCheckpointLostError(
            f"{e}. Restoring an older checkpoint would commit output the sinks have already "
            "committed a second time: restore the file from a backup, or pass "
            "restore_older=True to SparkRuntime.run() to restore the newest older checkpoint "
            "and accept duplicates",
            checkpoint_id=e.checkpoint_id,
            path=e.path,
        ) from None


REPORT_WAIT = 0.2
"""Seconds the driver waits, after a stage failed, for a host's report of why."""


def users_error(error: BaseException) -> bool:
    """Whether ``error`` is the user's (a bad operator, a missing module, a full port
    range), raised as itself, rather than the runtime's own way of failing (an injected
    failure, a host stopped or lost, a connection broken)."""
    from absnb.runtime.control_plane.messages import HostFailure
    from absnb.runtime.host.stopping import HostStopped

    return not isinstance(
        error, (InjectedFailure, HostStopped, HostFailure, ConnectionError, TimeoutError)
    )


def noted(error: BaseException, note: str) -> BaseException:
    """``error`` with ``note`` added (Python 3.11's ``add_note``; the message before)."""
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        add_note(note)
    return error


def unpickle_plan(
    pickled: bytes, host_id: int, attempt: int, coordinator: tuple[str, int], secret: bytes
) -> HostPlan:
    """The host's plan; if it cannot be unpickled here, the coordinator hears why first."""
    import pickle

    from absnb.runtime.control_plane.client import failure_message, report_failure

    try:
        plan: HostPlan = pickle.loads(pickled)  # the driver's own plan, as Spark ships it
        return plan
    except BaseException as e:
        report_failure(coordinator, secret, failure_message(host_id, attempt, e, setup=True))
        raise


def first_line(error: BaseException) -> str:
    """The line of a (Java-wrapped) task failure that says what happened."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines:
        if "injected failure of" in line and 'f"' not in line:
            return line[line.index("injected failure of") :][:300]
    wanted: Callable[[str], bool]
    for wanted in (
        lambda s: "exited unexpectedly" in s or "crashed" in s,
        lambda s: not s.startswith("at ") and ("Error: " in s or "Exception: " in s),
    ):
        for line in lines:
            if wanted(line):
                return line[:300]
    return lines[0][:300] if lines else type(error).__name__


class RestartLimitError(AbsnbError, RuntimeError):
    """The job failed more often than its restart limit allows."""


@dataclass
class Attempts:
    """What the attempts of one run came to: the successful one's host results, and for
    every attempt the checkpoint it restored and, for each failed one, why and when."""

    results: list[HostResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    restored: list[int] = field(default_factory=list)
    failed_at: list[float] = field(default_factory=list)


def run_attempts(
    stage: Callable[[list[HostPlan]], list[HostResult]],
    server: CoordinatorServer,
    plan: HostPlan,
    storage: CheckpointStorage,
    coordinator: CheckpointCoordinator,
    hosts: int,
    max_restarts: int,
    restore_older: bool,
) -> Attempts:
    """Run the barrier ``stage`` until an attempt succeeds, each attempt restoring the
    checkpoint of :func:`restore_point`, at most ``max_restarts`` times again (Spark never
    retries a failed barrier stage). ``plan`` is host 0's plan of attempt 0; every host's
    plan of an attempt is made from it.

    Raises:
        RestartLimitError: every attempt failed (noted on the user's error, if a host
            reported one).
        StorageError: more checkpoints failed in a row than the coordinator tolerates
            (the server stopped the run).
        Exception: a user's error a host reported while setting up, at once: a restart
            would fail the same way.
    """
    graph = plan.job.graph
    done = Attempts()
    reported: tuple[BaseException, bool] | None = None
    for attempt in range(max_restarts + 1):
        server.fence()  # no checkpoint of a failed attempt completes after storage is read
        latest = restore_point(storage, plan.job_id, graph, coordinator, restore_older)
        restore = latest.checkpoint_id if latest else 0
        done.restored.append(restore)
        server.new_attempt(attempt, restore)
        plans = [
            replace(
                plan,
                host_id=h,
                tasks=tuple(t for t in graph.tasks if host_of(t, hosts) == h),
                attempt=attempt,
                restore=restore,
            )
            for h in range(hosts)
        ]
        try:
            done.results = stage(plans)
        except Exception as e:  # a failed barrier stage is never retried by Spark
            if server.stopped is not None:
                raise server.stopped from None
            done.failed_at.append(time.monotonic())
            reported = server.failure(attempt, timeout=REPORT_WAIT)
            done.errors.append(server.failures.get(attempt) or first_line(e))
            if reported is not None and reported[1] and users_error(reported[0]):
                raise noted(
                    reported[0],
                    f"a host of job {graph.name!r} failed while setting up, before the job "
                    "ran; not restarted, as a restart would fail the same way",
                ) from None
            continue
        if server.stopped is not None:  # the hosts ended on a final Stop
            raise server.stopped
        return done
    limit = RestartLimitError(
        f"job {graph.name!r} failed {max_restarts + 1} times (the limit is "
        f"max_restarts={max_restarts}); last error: {done.errors[-1]}"
    )
    if reported is not None and users_error(reported[0]):
        raise noted(reported[0], str(limit)) from limit
    raise limit
