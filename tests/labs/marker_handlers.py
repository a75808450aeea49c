"""Processes a student of the Chandy-Lamport lab might write, each with one typical bug,
one correct one written differently (not a bug), and two that break the lab's rules. No
class here is the reference: the known-good handler of the tests is the package's own
ChandyLamportHandler."""

from __future__ import annotations

from absnb.labs import (
    Acknowledge,
    BroadcastEvent,
    Marker,
    MarkerHandler,
    RecordChannelState,
    SnapshotState,
)


def done(n, missing):
    """Acknowledge ``n`` once no input's marker is missing."""
    return [] if missing else [Acknowledge(n)]


class MarkersBeforeTheState(MarkerHandler):
    """Sends the markers on, then records the state: not a bug. The effects of one marker
    are carried out together, before the process consumes anything else, so no transfer
    can come between them."""

    def first_marker(self, n, channel, missing):
        return [BroadcastEvent(Marker(n)), SnapshotState(n), *done(n, missing)]

    def later_marker(self, n, channel, recorded, missing):
        return [RecordChannelState(n, channel, recorded), *done(n, missing)]


class StateAtTheSecondMarker(MarkerHandler):
    """Forwards the markers at the first marker, but records the state at the second (at
    once only when there is no second to wait for)."""

    def first_marker(self, n, channel, missing):
        if channel is not None and missing:
            return [BroadcastEvent(Marker(n))]  # the bug: the state waits for the next marker
        return [SnapshotState(n), BroadcastEvent(Marker(n)), *done(n, missing)]

    def later_marker(self, n, channel, recorded, missing):
        if n not in self.states:
            return [SnapshotState(n), RecordChannelState(n, channel, ()), *done(n, missing)]
        return [RecordChannelState(n, channel, recorded), *done(n, missing)]


class NoChannelState(MarkerHandler):
    """Records the state and forwards the markers, but never a channel's state: the
    transfers in transit at the cut are in no part of the snapshot."""

    def first_marker(self, n, channel, missing):
        return [SnapshotState(n), BroadcastEvent(Marker(n)), *done(n, missing)]

    def later_marker(self, n, channel, recorded, missing):
        return done(n, missing)  # the bug: no RecordChannelState(n, channel, recorded)


class RecordsAfterTheMarker(MarkerHandler):
    """Keeps recording every input until the last marker, then records them all: what
    arrived on an input after its own marker is in its channel state too."""

    def first_marker(self, n, channel, missing):
        return [SnapshotState(n), BroadcastEvent(Marker(n)), *done(n, missing)]

    def later_marker(self, n, channel, recorded, missing):
        if missing:
            return []  # the bug: the channel's recording goes on past its marker
        states = [RecordChannelState(n, c, self.recorded_on(n, c)) for c in self.inputs]
        return [*states, Acknowledge(n)]


class ForgetsToForward(MarkerHandler):
    """Records the state at the first marker but sends no marker on: the processes
    downstream never hear of the snapshot, which never completes."""

    def first_marker(self, n, channel, missing):
        return [SnapshotState(n), *done(n, missing)]  # the bug: no BroadcastEvent(Marker(n))

    def later_marker(self, n, channel, recorded, missing):
        return [RecordChannelState(n, channel, recorded), *done(n, missing)]


class OneListForAllSnapshots(MarkerHandler):
    """Keeps what arrives on each input in one list, whatever the snapshot: the first
    marker to close an input takes the list, and a concurrent snapshot recording the same
    input finds it gone."""

    def __init__(self, *args):
        super().__init__(*args)
        self.log = {}  # input -> what arrived since some snapshot started recording it

    def on_record(self, channel, record):
        if channel in self.log:
            self.log[channel].append(record)
        return super().on_record(channel, record)

    def first_marker(self, n, channel, missing):
        for c in missing:
            self.log.setdefault(c, [])  # the bug: one list per input, not per snapshot
        return [SnapshotState(n), BroadcastEvent(Marker(n)), *done(n, missing)]

    def later_marker(self, n, channel, recorded, missing):
        mine = tuple(self.log.pop(channel, ()))
        return [RecordChannelState(n, channel, mine), *done(n, missing)]


class ReturnsNothing(MarkerHandler):
    """Forgets the ``return``."""

    def first_marker(self, n, channel, missing):
        [SnapshotState(n), BroadcastEvent(Marker(n)), *done(n, missing)]  # the bug

    def later_marker(self, n, channel, recorded, missing):
        return [RecordChannelState(n, channel, recorded), *done(n, missing)]


class ChannelStateBeforeTheState(MarkerHandler):
    """Records the first channel's (empty) state before the process's state."""

    def first_marker(self, n, channel, missing):
        first = [RecordChannelState(n, channel, ())] if channel is not None else []
        return [*first, SnapshotState(n), BroadcastEvent(Marker(n)), *done(n, missing)]

    def later_marker(self, n, channel, recorded, missing):
        return [RecordChannelState(n, channel, recorded), *done(n, missing)]
