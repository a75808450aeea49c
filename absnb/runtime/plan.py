"""What the driver ships to each host of a run (:class:`HostPlan`), what a host returns
when its tasks have finished (:class:`HostResult`), and how tasks are placed on hosts
(:func:`host_of`) and how the run ends (:func:`terminates_by_quiescence`)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from absnb.core.graph import ExecutionGraph
from absnb.core.ids import TaskId
from absnb.core.job import Job
from absnb.protocols.base import SnapshotProtocol
from absnb.runtime.failures import Failure


@dataclass
class HostPlan:
    """Everything one host needs; built by the driver, shipped to the executor."""

    job: Job
    protocol: str | SnapshotProtocol
    """The protocol's name, or the protocol object itself (a user's own, shipped pickled)."""
    host_id: int
    tasks: tuple[TaskId, ...]
    secret: bytes
    coordinator: tuple[str, int]
    storage_url: str
    job_id: str
    storage_latency: float = 0.0
    """Seconds every durable checkpoint write waits (the remote-store model of
    :class:`~absnb.runtime.storage.fs.LatencyFS`)."""
    attempt: int = 0
    restore: int = 0
    failures: tuple[Failure, ...] = ()
    allow_deadlock: bool = False
    alignment_timeout: float | None = None
    advertise_host: str = "127.0.0.1"
    source_batch: int = 512
    flush_every: float = 0.005
    max_unsent_bytes: int = 1 << 20
    setup_timeout: float = 30.0
    """The longest the host waits for the address book, and then for its channels."""
    source_rate: float | None = None
    """The most input-log entries a source task reads per second (None: no limit)."""
    ports: range | None = None
    """The ports the host's data plane may listen on (None: any free port)."""
    events: bool = True
    """Keep an event log and send it to the driver (:mod:`absnb.runtime.events.log`)."""
    keep_states: bool = True
    """Return every task's final state; False: only those the job's output is made of
    (its sinks', or every task's for a job without sinks), so that a large keyed state is
    not pickled back to the driver only to be dropped there."""
    columnar: bool = True
    """Sources whose operators have a columnar path emit columns (Arrow arrays), which stay
    columns through the operators downstream that have one
    (:attr:`StreamTask.columnar <absnb.task.StreamTask.columnar>`); False: every batch a
    list of Python values."""


@dataclass
class HostResult:
    """What a host returns: its tasks' final states and its measurements."""

    host_id: int
    attempt: int
    states: dict[TaskId, Any]
    metrics: dict[str, Any] = field(default_factory=dict)


def terminates_by_quiescence(graph: ExecutionGraph) -> bool:
    """True when the job's end cannot travel as end-of-input: the graph has a cycle, or
    processes (tasks with their own input log and inputs, like the bank's accounts). Such
    a job ends when the coordinator detects quiescence."""
    return graph.is_cyclic or any(graph.kind(t) == "process" for t in graph.tasks)


def host_of(task: TaskId, hosts: int) -> int:
    """The host running ``task``: its subtask index, folded onto the hosts, so that forward
    edges stay inside one process. An operator with fewer tasks than there are hosts is
    shifted by a hash of its name, so that single tasks (the bank's accounts) spread out."""
    if task.parallelism >= hosts:
        return task.subtask % hosts
    return (task.subtask + zlib.crc32(task.operator.encode())) % hosts
