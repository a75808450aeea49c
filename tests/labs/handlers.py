"""Handlers a student of the ABS lab might write, each with one typical bug, and one that
orders its effects differently (not a bug). No class here passes as the reference: the
known-good handler of the tests is the package's own AlignedBarrierHandler."""

from __future__ import annotations

from absnb.labs import (
    AbsHandler,
    Acknowledge,
    Block,
    BroadcastEvent,
    CheckpointBarrier,
    SnapshotState,
    Unblock,
)


class ForgetsToBlock(AbsHandler):
    """Never blocks: records behind a barrier reach the state before the snapshot."""

    def waiting_for_more(self, n, channel):
        return []

    def all_arrived(self, n, blocked):
        return [BroadcastEvent(CheckpointBarrier(n)), SnapshotState(n), Acknowledge(n)]


class NeverUnblocks(AbsHandler):
    """Blocks, snapshots at the last barrier, and leaves the blocked inputs blocked."""

    def waiting_for_more(self, n, channel):
        return [Block(channel)]

    def all_arrived(self, n, blocked):
        return [BroadcastEvent(CheckpointBarrier(n)), SnapshotState(n), Acknowledge(n)]


class AcknowledgesAtFirstBarrier(AbsHandler):
    """Takes and acknowledges its snapshot at the first barrier, before the others came."""

    def waiting_for_more(self, n, channel):
        return [Block(channel), SnapshotState(n), Acknowledge(n)]

    def all_arrived(self, n, blocked):
        if blocked:  # the snapshot was taken at the first barrier
            return [BroadcastEvent(CheckpointBarrier(n)), *map(Unblock, blocked)]
        return [BroadcastEvent(CheckpointBarrier(n)), SnapshotState(n), Acknowledge(n)]


class ForwardsBarrierEarly(AbsHandler):
    """Sends the barrier downstream at the first barrier, the snapshot at the last."""

    def waiting_for_more(self, n, channel):
        return [Block(channel), BroadcastEvent(CheckpointBarrier(n))]

    def all_arrived(self, n, blocked):
        first = [] if blocked else [BroadcastEvent(CheckpointBarrier(n))]
        return [*first, SnapshotState(n), Acknowledge(n), *map(Unblock, blocked)]


class SourcesSkipTheSnapshot(AbsHandler):
    """Takes no snapshot at a source ("a source has no state"): its offset is state, and
    without its acknowledgement no checkpoint completes. No scripted case sees it: the
    harness's task has inputs."""

    def waiting_for_more(self, n, channel):
        return [Block(channel)]

    def all_arrived(self, n, blocked):
        if not self.inputs:
            return [BroadcastEvent(CheckpointBarrier(n))]
        return [
            BroadcastEvent(CheckpointBarrier(n)),
            SnapshotState(n),
            Acknowledge(n),
            *map(Unblock, blocked),
        ]


class SnapshotsBeforeBroadcasting(AbsHandler):
    """Snapshot, acknowledge, then broadcast and unblock: not a bug. The effects of one
    barrier are carried out together, before the task consumes anything else, so no record
    can come between the snapshot and the barrier it sends."""

    def waiting_for_more(self, n, channel):
        return [Block(channel)]

    def all_arrived(self, n, blocked):
        return [
            SnapshotState(n),
            Acknowledge(n),
            BroadcastEvent(CheckpointBarrier(n)),
            *map(Unblock, blocked),
        ]


class ReturnsNothing(AbsHandler):
    """Forgets the ``return``."""

    def waiting_for_more(self, n, channel):
        [Block(channel)]  # the bug: no return

    def all_arrived(self, n, blocked):
        return [
            BroadcastEvent(CheckpointBarrier(n)),
            SnapshotState(n),
            Acknowledge(n),
            *map(Unblock, blocked),
        ]


class AcknowledgesBeforeTheSnapshot(AbsHandler):
    """Acknowledges, then snapshots: the runtime has no snapshot to acknowledge yet."""

    def waiting_for_more(self, n, channel):
        return [Block(channel)]

    def all_arrived(self, n, blocked):
        return [
            BroadcastEvent(CheckpointBarrier(n)),
            Acknowledge(n),
            SnapshotState(n),
            *map(Unblock, blocked),
        ]
