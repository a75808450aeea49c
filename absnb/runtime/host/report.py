"""What a host tells the coordinator about itself: its answer to a termination-detection
probe (:func:`probe_report`) and, at the end, its result with its measurements
(:func:`host_result`)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from absnb.core.ids import ChannelId, TaskId
from absnb.runtime.control_plane.messages import Report
from absnb.runtime.plan import HostPlan, HostResult
from absnb.task import StreamTask


def probe_report(
    plan: HostPlan,
    tasks: Mapping[TaskId, StreamTask],
    queues: Mapping[ChannelId, deque[Any]],
    round: int,
) -> Report:
    """The counts a host answers probe ``round`` with (Mattern's four counters): records
    sent and received per channel, and whether its own input is consumed (its local
    ``queues`` empty, every task at the end of its input log)."""
    inputs = plan.job.inputs
    idle = not any(queues.values()) and all(
        task.offset >= len(inputs.get(t, ())) for t, task in tasks.items()
    )
    sent: dict[ChannelId, int] = {}
    received: dict[ChannelId, int] = {}
    for task in tasks.values():
        sent.update(task.sent)
        received.update(task.received)
    return Report(plan.host_id, plan.attempt, round, idle, sent, received)


def host_result(
    plan: HostPlan,
    tasks: Mapping[TaskId, StreamTask],
    metrics: dict[str, Any],
    alignment: Mapping[TaskId, float],
    net: dict[str, Any],
    started: float,
) -> HostResult:
    """The tasks' final states and the host's measurements: ``metrics`` completed with the
    seconds since ``started`` (on ``time.monotonic``), each task's last ``alignment``, the
    data plane's ``net`` statistics and the records in and out of each task."""
    metrics["seconds"] = time.monotonic() - started
    metrics["alignment"] = dict(alignment)
    metrics["net"] = net
    metrics["tasks"] = {  # records in/out per task (channel sequence numbers)
        t: {
            "records_in": sum(task.received.values()) + task.offset,
            "records_out": sum(task.sent.values()),
        }
        for t, task in tasks.items()
    }
    graph = plan.job.graph
    output_only = not plan.keep_states and any(graph.kind(t) == "sink" for t in graph.tasks)
    states = {
        t: task.state for t, task in tasks.items() if not output_only or graph.kind(t) == "sink"
    }
    return HostResult(plan.host_id, plan.attempt, states, metrics)
