"""What a host tells the coordinator about itself: its answer to a termination-detection
probe (:func:`probe_report`) and, at the end, its result with its measurements
(:func:`host_result`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from absnb.core.ids import ChannelId
from absnb.runtime.control_messages import Report
from absnb.runtime.plan import HostResult

if TYPE_CHECKING:
    from absnb.runtime.host import Host


def probe_report(host: Host, round: int) -> Report:
    """The counts a host answers probe ``round`` with (Mattern's four counters): records
    sent and received per channel, and whether its own input is consumed."""
    idle = not any(host.queues.values()) and all(
        host.tasks[t].offset >= len(host.plan.job.inputs.get(t, ())) for t in host.sources
    )
    sent: dict[ChannelId, int] = {}
    received: dict[ChannelId, int] = {}
    for task in host.tasks.values():
        sent.update(task.sent)
        received.update(task.received)
    return Report(host.plan.host_id, host.plan.attempt, round, idle, sent, received)


def host_result(host: Host, started: float) -> HostResult:
    """The tasks' final states and the host's measurements (``started``: when its loop
    began, on ``time.monotonic``)."""
    metrics = host.metrics
    metrics["seconds"] = time.monotonic() - started
    metrics["alignment"] = dict(host.aligning.lasted)
    metrics["net"] = host.net.stats()
    metrics["tasks"] = {  # records in/out per task (channel sequence numbers)
        t: {
            "records_in": sum(task.received.values()) + task.offset,
            "records_out": sum(task.sent.values()),
        }
        for t, task in host.tasks.items()
    }
    states = {t: task.state for t, task in host.tasks.items()}
    return HostResult(host.plan.host_id, host.plan.attempt, states, metrics)
