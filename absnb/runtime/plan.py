"""What the driver ships to each host of a run (:class:`HostPlan`) and what a host
returns when its tasks have finished (:class:`HostResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from absnb.core.ids import TaskId
from absnb.jobs.base import Job
from absnb.runtime.failures import Failure


@dataclass
class HostPlan:
    """Everything one host needs; built by the driver, shipped to the executor."""

    job: Job
    protocol: str
    host_id: int
    tasks: tuple[TaskId, ...]
    secret: bytes
    coordinator: tuple[str, int]
    storage_url: str
    job_id: str
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


@dataclass
class HostResult:
    """What a host returns: its tasks' final states and its measurements."""

    host_id: int
    attempt: int
    states: dict[TaskId, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
