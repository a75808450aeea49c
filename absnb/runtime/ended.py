"""End of input as a host sees it: which input channels have ended, and the barriers an
ended channel is taken to have carried.

Flink since FLIP-147 ("Support checkpoints after tasks finished"): a channel that has
ended counts as aligned for every pending and future barrier, as nothing, barriers
included, can follow its end. The host keeps, per task, the newest barrier seen on each
input and the barriers some input has had and another has not yet; a channel that ends is
handed the ones it missed (:meth:`EndedInputs.end`), and a barrier that arrives is handed
to the task's ended inputs too (:meth:`EndedInputs.due`), so that alignment never waits
for a barrier an ended channel will never bring.
"""

from __future__ import annotations

from typing import Any

from absnb.core.events import checkpoint_of as checkpoint_of
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker


class EndedInputs:
    """The ended input channels of a host's tasks and the barriers they are owed."""

    def __init__(self, graph: ExecutionGraph, tasks: tuple[TaskId, ...]) -> None:
        self.graph = graph
        self.ended: set[ChannelId] = set()
        self.last: dict[ChannelId, int] = {}  # newest barrier per input channel
        self.barriers: dict[TaskId, dict[int, Any]] = {t: {} for t in tasks}

    def passed(self, channel: ChannelId, message: Any) -> None:
        """A barrier (or marker) of a checkpoint was delivered on ``channel``."""
        self.last[channel] = checkpoint_of(message)

    def end(self, channel: ChannelId) -> list[Any]:
        """``channel`` has ended: the barriers its task has had on other inputs and not on
        it, oldest first, to deliver on it."""
        self.ended.add(channel)
        seen = self.last.get(channel, 0)
        return [b for n, b in sorted(self.barriers[channel.dst].items()) if n > seen]

    def all_ended(self, task: TaskId) -> bool:
        """Every input of ``task`` has ended."""
        return all(c in self.ended for c in self.graph.inputs[task])

    def due(self, task: TaskId, message: Any) -> list[ChannelId]:
        """``task`` had ``message`` (a barrier, marker or cancellation marker) on an input:
        the ended inputs that are taken to carry it too."""
        n = checkpoint_of(message)
        return [e for e in self.graph.inputs[task] if e in self.ended and self.last.get(e, 0) < n]

    def remember(self, task: TaskId, message: Any) -> None:
        """Keep ``message`` for the inputs of ``task`` that end later; forget the barriers
        every input has had."""
        seen = self.barriers[task]
        seen[checkpoint_of(message)] = message
        inputs, last = self.graph.inputs[task], self.last
        for k in [k for k in seen if all(last.get(i, 0) >= k for i in inputs)]:
            del seen[k]

    def past_end(
        self, sends: list[tuple[ChannelId, Any]], finished: set[TaskId], local: set[TaskId]
    ) -> list[tuple[ChannelId, Any]]:
        """What a finished task still sends: the barriers (or markers) of a checkpoint
        triggered after its input ended, to the finished tasks behind it on this host, which
        take them on their ended inputs and so acknowledge too (Flink: FLIP-147); without
        them a synchronous checkpoint, whose other sources stay halted, never completes.
        A running task behind it has them already (:meth:`due`)."""
        return [
            (c, m)
            for c, m in sends
            if type(m) in (CheckpointBarrier, Marker)
            and c.dst in finished
            and c.dst in local
            and self.last.get(c, 0) < checkpoint_of(m)
        ]
