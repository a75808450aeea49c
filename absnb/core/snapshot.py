"""Snapshots: a task's part (T*), channel states (E*), and the global snapshot G* = (T*, E*)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import Record, RecordBatch, as_records


@dataclass(frozen=True)
class TaskSnapshot:
    """One task's part of a checkpoint.

    Attributes:
        task: the task.
        checkpoint_id: the checkpoint.
        state: a copy of the operator state.
        offset: position in the task's own input log (a source's state in the paper).
        channel_states: recorded input channels (Chandy-Lamport channel state, or the
            Alg. 2 backup log of each loop input), in arrival order; the real runtime
            records its batches as they came (:attr:`GlobalSnapshot.channel_states` gives
            single records).
        sent: records sent so far on each output channel (the sender's numbering).
        received: records consumed so far on each input channel.
        consumed: records consumed in all, the position in the task's input order log.
        finished: the task had ended its input when it took this snapshot (FLIP-147: a
            finished task); restored from it, it does not end its input again.
    """

    task: TaskId
    checkpoint_id: CheckpointId
    state: Any
    offset: int = 0
    channel_states: dict[ChannelId, tuple[Record | RecordBatch, ...]] = field(default_factory=dict)
    sent: dict[ChannelId, int] = field(default_factory=dict)
    received: dict[ChannelId, int] = field(default_factory=dict)
    consumed: int = 0
    finished: bool = False


@dataclass(frozen=True)
class GlobalSnapshot:
    """G* = (T*, E*): every task's state and the recorded channel states.

    ``channel_states`` holds the messages in transit at the cut: empty for ABS on acyclic
    graphs, the back-edge logs for Alg. 2, every channel for Chandy-Lamport.
    """

    checkpoint_id: CheckpointId
    job: str
    fingerprint: str
    tasks: dict[TaskId, TaskSnapshot]
    protocol: str = ""

    @property
    def task_states(self) -> dict[TaskId, Any]:
        """T*: the operator state of every task."""
        return {t: s.state for t, s in self.tasks.items()}

    @property
    def channel_states(self) -> dict[ChannelId, tuple[Record, ...]]:
        """E*: every recorded channel, merged from the receivers' parts, as single records."""
        out: dict[ChannelId, tuple[Record, ...]] = {}
        for s in self.tasks.values():
            for c, messages in s.channel_states.items():
                out[c] = as_records(messages)
        return out

    def channel_values(self) -> dict[str, list[Any]]:
        """Recorded channel contents as ``{"A->B": [values...]}``, for display."""
        return {str(c): [r.value for r in rs] for c, rs in sorted(self.channel_states.items())}

    def state_of(self, task: TaskId | str) -> Any:
        """The recorded state of one task, by id or printed name."""
        for t, s in self.tasks.items():
            if t == task or str(t) == task:
                return s.state
        raise KeyError(f"snapshot {self.checkpoint_id} has no task {task!s}")
