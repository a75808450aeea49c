"""The Chandy-Lamport global snapshot (Chandy and Lamport, 1985; seed 001).

Any process may initiate: it records its state, sends a marker on every outgoing channel
and starts recording every incoming channel. On its first marker (on channel c) a process
records its state, takes the state of c as empty, sends markers on, and records its other
incoming channels. A later marker on c stops recording c: the state of c is what arrived
on c since recording started. Several snapshots may be in progress, told apart by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from absnb.core.effects import (
    Acknowledge,
    BroadcastEvent,
    Effect,
    RecordChannelState,
    SnapshotState,
)
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import CheckpointBarrier, Marker, Record, RecordBatch, as_records
from absnb.protocols.base import (
    NO_EFFECTS,
    BarrierHandler,
    SnapshotProtocol,
    Waiting,
    task_handler_args,
)


@dataclass(frozen=True, slots=True)
class Recording:
    """State recorded for ``snapshot_id``; ``channels`` are still being recorded."""

    snapshot_id: CheckpointId
    channels: tuple[ChannelId, ...]


class ChandyLamportHandler(BarrierHandler):
    """One process of the Chandy-Lamport algorithm.

    Attributes:
        recording: the snapshots in progress here, by id.
        recorded: for each snapshot in progress, what arrived so far on each recorded channel.
        finished_below: every snapshot with a smaller id is finished here (completed or
            aborted); ``finished`` holds the finished ids above it. Snapshots finish
            nearly in id order, so the set stays small and each marker costs O(1).
    """

    __slots__ = ("finished", "finished_below", "recorded", "recording")

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
    ) -> None:
        super().__init__(task, inputs, loop_inputs, initiator)
        self.recording: dict[CheckpointId, Recording] = {}
        self.recorded: dict[CheckpointId, dict[ChannelId, list[Record | RecordBatch]]] = {}
        self.finished: set[CheckpointId] = set()
        self.finished_below: CheckpointId = 1

    def is_finished(self, n: CheckpointId) -> bool:
        """True when this process is done with snapshot ``n`` (a late marker is ignored)."""
        return n < self.finished_below or n in self.finished

    def _finish(self, n: CheckpointId) -> None:
        if n < self.finished_below:
            return
        finished = self.finished
        finished.add(n)
        while self.finished_below in finished:
            finished.remove(self.finished_below)
            self.finished_below += 1

    def on_trigger(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Initiate: record own state, send markers, record every incoming channel."""
        n = checkpoint_id
        if n in self.recording or self.is_finished(n):
            return NO_EFFECTS
        return self._start(n, None)

    def _start(self, n: CheckpointId, first: ChannelId | None) -> list[Effect]:
        effects: list[Effect] = [SnapshotState(n)]
        if first is not None:
            effects.append(RecordChannelState(n, first, ()))  # state of c is empty
        effects.append(BroadcastEvent(Marker(n)))
        rest = tuple(c for c in self.inputs if c != first)
        if rest:
            self.recording[n] = Recording(n, rest)
            self.recorded[n] = {c: [] for c in rest}
        else:
            effects.append(Acknowledge(n))
            self._finish(n)
        return effects

    def on_barrier(
        self, channel: ChannelId, message: CheckpointBarrier | Marker
    ) -> Sequence[Effect]:
        """A marker on ``channel``: the first one starts the snapshot, a later one closes c."""
        n = message.snapshot_id if isinstance(message, Marker) else message.checkpoint_id
        if self.is_finished(n):
            return NO_EFFECTS
        rec = self.recording.get(n)
        if rec is None:
            return self._start(n, channel)
        if channel not in rec.channels:
            return NO_EFFECTS
        records = self.recorded[n].pop(channel)
        effects: list[Effect] = [RecordChannelState(n, channel, tuple(records))]
        rest = tuple(c for c in rec.channels if c != channel)
        if rest:
            self.recording[n] = Recording(n, rest)
        else:
            del self.recording[n]
            del self.recorded[n]
            self._finish(n)
            effects.append(Acknowledge(n))
        return effects

    def on_record(self, channel: ChannelId, record: Record) -> Sequence[Effect]:
        """Record ``record`` for every snapshot that is recording ``channel``."""
        for chans in self.recorded.values():
            rs = chans.get(channel)
            if rs is not None:
                rs.append(record)
        return NO_EFFECTS

    def on_records(self, channel: ChannelId, batch: RecordBatch) -> Sequence[Effect]:
        """:meth:`on_record` of each record of ``batch``."""
        for chans in self.recorded.values():
            rs = chans.get(channel)
            if rs is not None:
                rs.append(batch)  # recorded as it came: no record by record cost
        return NO_EFFECTS

    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Stop recording for ``checkpoint_id``; a late marker must not start it again.

        Only that snapshot: concurrent snapshots are independent (none subsumes another),
        and the coordinator notifies each aborted one on its own."""
        self.recording.pop(checkpoint_id, None)
        self.recorded.pop(checkpoint_id, None)
        self._finish(checkpoint_id)
        return NO_EFFECTS

    def recorded_channels(self) -> tuple[ChannelId, ...]:
        return tuple(
            c for c in self.inputs if any(c in r.channels for r in self.recording.values())
        )

    def recorded_count(self, channel: ChannelId) -> list[tuple[CheckpointId, int]]:
        return [
            (n, len(chans[channel]))
            for n, chans in sorted(self.recorded.items())
            if channel in chans
        ]

    def waiting(self) -> list[Waiting]:
        return [Waiting(self.task, n, r.channels, ()) for n, r in sorted(self.recording.items())]

    def clone(self) -> ChandyLamportHandler:
        new = ChandyLamportHandler.__new__(ChandyLamportHandler)
        new.task, new.inputs, new.loop_inputs, new.initiator = (
            self.task,
            self.inputs,
            self.loop_inputs,
            self.initiator,
        )
        new.recording = dict(self.recording)
        new.recorded = {
            n: {c: list(rs) for c, rs in chans.items()} for n, chans in self.recorded.items()
        }
        new.finished = set(self.finished)
        new.finished_below = self.finished_below
        return new

    def key(self) -> object:
        return (
            tuple(sorted(self.recording.items())),
            tuple(
                (n, tuple((c, as_records(rs)) for c, rs in chans.items()))
                for n, chans in sorted(self.recorded.items())
            ),
            self.finished_below,
            frozenset(self.finished),
        )

    def describe(self) -> str:
        if not self.recording:
            return "not recording"
        parts = [
            f"snapshot {n}: recording {', '.join(str(c) for c in r.channels)}"
            for n, r in sorted(self.recording.items())
        ]
        return "; ".join(parts)


class ChandyLamportProtocol(SnapshotProtocol):
    """Chandy-Lamport: markers, channel recording; any process initiates."""

    name = "chandy-lamport"
    title = "Chandy-Lamport"
    message = Marker
    """The message a snapshot travels in on the channels: a marker."""
    max_concurrent = None
    subsumes = False
    records_channel_state = True
    blocks_inputs = False
    starts_anywhere = True
    may_be_declined = False

    def handler(self, graph: ExecutionGraph, task: TaskId) -> ChandyLamportHandler:
        return ChandyLamportHandler(*task_handler_args(graph, task))
