"""Handlers a student of the ABS lab's extension (Algorithm 2) might write: one written as
the reference is, each of the others with one typical bug. No class here passes as the
reference: the known-good handler of the tests is the package's own CyclicBarrierHandler."""

from __future__ import annotations

from absnb.labs import (
    Acknowledge,
    Block,
    BroadcastEvent,
    CheckpointBarrier,
    CyclicAbsHandler,
    RecordChannelState,
    SnapshotState,
    Unblock,
)


def done(n, missing):
    """Acknowledge ``n`` once no loop input's barrier is missing."""
    return [] if missing else [Acknowledge(n)]


class Algorithm2(CyclicAbsHandler):
    """Alg. 2 as the reference does it, effects in another order: not a bug."""

    def waiting_for_more(self, n, channel):
        return [Block(channel)]

    def regular_arrived(self, n, blocked, missing):
        return [
            BroadcastEvent(CheckpointBarrier(n)),
            SnapshotState(n),
            *map(Unblock, blocked),
            *done(n, missing),
        ]

    def loop_barrier(self, n, channel, logged, missing):
        return [RecordChannelState(n, channel, logged), *done(n, missing)]


class WaitsForTheBackEdge(Algorithm2):
    """Algorithm 1 on a loop: keeps the regular inputs blocked and waits for the barrier of
    the back-edge too before it copies the state and broadcasts. That barrier can only come
    round the loop after the broadcast: the checkpoint never completes."""

    def regular_arrived(self, n, blocked, missing):
        if missing:
            return []  # the bug: wait for the loop inputs' barriers as well
        return super().regular_arrived(n, blocked, missing)

    def loop_barrier(self, n, channel, logged, missing):
        return [SnapshotState(n), BroadcastEvent(CheckpointBarrier(n)), *done(n, missing)]


class BlocksTheBackEdge(Algorithm2):
    """Blocks the loop inputs at the state copy, as Algorithm 1 blocks an input, to unblock
    each when its barrier arrives: the barrier waits behind the block for good."""

    def regular_arrived(self, n, blocked, missing):
        return [*super().regular_arrived(n, blocked, missing), *map(Block, missing)]

    def loop_barrier(self, n, channel, logged, missing):
        return [Unblock(channel), *super().loop_barrier(n, channel, logged, missing)]


class NoBackupLog(Algorithm2):
    """Closes each loop input's log empty: the records in transit on the back-edge at the
    cut are in no part of the snapshot, and a recovery loses them."""

    def loop_barrier(self, n, channel, logged, missing):
        return [RecordChannelState(n, channel, ()), *done(n, missing)]  # the bug: not logged


class LogsBeforeTheSnapshot(Algorithm2):
    """Keeps its own log of every loop input from the start, and hands it in at the loop
    barrier: the records that arrived before the state copy are in the copy and in the log,
    counted twice after a recovery."""

    def __init__(self, *args):
        super().__init__(*args)
        self.seen = {}  # loop input -> every record that arrived on it

    def on_record(self, channel, record):
        if channel in self.loop_inputs:
            self.seen.setdefault(channel, []).append(record)  # the bug: before the copy too
        return super().on_record(channel, record)

    def loop_barrier(self, n, channel, logged, missing):
        mine = tuple(self.seen.pop(channel, ()))
        return [RecordChannelState(n, channel, mine), *done(n, missing)]


class LogsUntilTheLastBarrier(Algorithm2):
    """The paper's pseudo-code to the letter (lines 19-22, 25): every loop input is logged
    until the barriers of all of them are in. A record that came behind its own input's
    barrier is in the log and is sent again by the restored sender: counted twice. With one
    loop input the two rules agree; a head with two (parallelism 2) tells them apart."""

    def loop_barrier(self, n, channel, logged, missing):
        if missing:
            return []  # the bug: channel's log goes on past its barrier
        logs = [RecordChannelState(n, c, self.logged_on(c)) for c in self.loop_inputs]
        return [*logs, Acknowledge(n)]


class AcknowledgesAtTheCopy(Algorithm2):
    """Acknowledges at the state copy, as Algorithm 1 does, before the back-edge's barrier
    came back and without its log: the records in transit on the loop are lost."""

    def regular_arrived(self, n, blocked, missing):
        return [
            SnapshotState(n),
            BroadcastEvent(CheckpointBarrier(n)),
            *map(Unblock, blocked),
            Acknowledge(n),  # the bug: the backup log is not in yet
        ]
