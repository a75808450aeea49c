"""A host's start after a failure: every task restored from the checkpoint the driver chose,
its channel state back in transit (recovery, paper section 4.4)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from absnb.core.ids import ChannelId, TaskId
from absnb.runtime.events.log import EventLog
from absnb.runtime.plan import HostPlan
from absnb.runtime.storage.checkpoints import CheckpointStorage
from absnb.task import StreamTask


def restore(
    plan: HostPlan,
    storage: CheckpointStorage,
    tasks: dict[TaskId, StreamTask],
    queues: dict[ChannelId, deque[Any]],
    log: EventLog,
) -> dict[ChannelId, Sequence[Any]]:
    """Restore ``tasks`` as ``plan`` says: from checkpoint ``plan.restore``, or in a restart
    with no completed checkpoint to the initial state (so that sinks abort what the failed
    attempt left in their external systems), or not at all in a first attempt. Channel
    state (Chandy-Lamport's, Alg. 2's backup logs: records and record batches, as they
    came) goes back in transit first: into ``queues`` for a local channel; the channel
    state of channels from other hosts is returned, to be delivered before what the network
    brings on them.

    Raises:
        RuntimeError: storage's newest completed checkpoint is not the one to restore.
    """
    refill: dict[ChannelId, Sequence[Any]] = {}
    if not plan.restore:
        if plan.attempt > 0:
            for task in tasks.values():
                task.restore(None)
            log.restored(None)
        return refill
    snapshot = storage.latest(plan.job_id, plan.job.graph.fingerprint)
    if snapshot is None or snapshot.checkpoint_id != plan.restore:
        found = snapshot.checkpoint_id if snapshot else "none"
        raise RuntimeError(
            f"host {plan.host_id} was told to restore checkpoint {plan.restore} but storage "
            f"has {found}"
        )
    for t, task in tasks.items():
        task.restore(snapshot.tasks[t])
        for c, messages in snapshot.tasks[t].channel_states.items():
            if c.src in tasks:
                queues[c].extend(messages)
            else:
                refill[c] = messages
    log.restored(snapshot)
    return refill
