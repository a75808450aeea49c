"""The Chandy-Lamport lab's base class: what a student's process subclasses, and the
protocol that runs it.

A student writes the two decisions of the Chandy-Lamport algorithm at one process, as
effects (:mod:`absnb.core.effects`):

- :meth:`MarkerHandler.first_marker`: the first marker of a snapshot arrived on an input
  (or the process initiates the snapshot);
- :meth:`MarkerHandler.later_marker`: a marker of a snapshot in progress arrived on
  another input.

The base class does the plumbing: which markers of each snapshot have arrived, which
inputs are being recorded for it and what has arrived on them so far (a channel is
recorded from the process's :class:`~absnb.core.effects.SnapshotState` until the student
returns its :class:`~absnb.core.effects.RecordChannelState`), snapshots told apart by id,
late markers of a finished snapshot, the coordinator's abort, clone and key.
:class:`MarkerLabProtocol` makes a handler of the student's class for every process, so
the simulator, the explorer and the one-process cases run the student's code.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from functools import partial
from typing import ClassVar

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
from absnb.labs.handler import LabError, located, raised_text
from absnb.protocols.base import NO_EFFECTS, BarrierHandler, Waiting, task_handler_args
from absnb.protocols.chandy_lamport import ChandyLamportProtocol

MARKER_EFFECTS = (SnapshotState, BroadcastEvent, RecordChannelState, Acknowledge)
"""The effects a Chandy-Lamport process may return."""

Recorded = tuple[Record | RecordBatch, ...]
"""What arrived on a recorded channel, in order."""


class MarkerHandler(BarrierHandler):
    """Chandy-Lamport at one process, with its two decisions left to a subclass.

    A subclass implements :meth:`first_marker` and :meth:`later_marker`; each returns the
    list of effects the process carries out, in order, before it consumes anything else:
    ``SnapshotState(n)`` (record the process's state as its part of snapshot ``n``),
    ``BroadcastEvent(Marker(n))`` (send marker ``n`` on every output),
    ``RecordChannelState(n, channel, records)`` (``records`` are the state of input
    ``channel`` in snapshot ``n``) and ``Acknowledge(n)`` (the process's part of ``n`` is
    complete: report it; only after its state).

    The base records the inputs: from ``SnapshotState(n)`` on, every input whose marker of
    ``n`` has not arrived yet is recorded for ``n``, until the decision that returns its
    ``RecordChannelState(n, channel, ...)``; :meth:`recorded_on` reads what arrived so far.

    Attributes:
        task: the process this handler runs at.
        inputs: its input channels, in order.
        arrived: for each snapshot in progress, the inputs its marker has arrived on, in
            order (empty when the process initiated it and no marker has come yet).
        recording: for each snapshot in progress, each input still recorded for it and the
            records that arrived on it since.
        states: the snapshots in progress whose state this process has recorded.
        finished: the snapshots this process acknowledged or gave up: their late markers
            are ignored.
    """

    __slots__ = ("arrived", "fault", "finished", "recording", "states")

    catches: ClassVar[bool] = False
    """Whether an exception raised by a decision is kept in :attr:`fault` (the process
    then does nothing) rather than raised: the lab's checks set it, so that the explorer
    finds the shortest run that reaches it."""

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
    ) -> None:
        super().__init__(task, inputs, loop_inputs, initiator)
        self.arrived: dict[CheckpointId, tuple[ChannelId, ...]] = {}
        self.recording: dict[CheckpointId, dict[ChannelId, list[Record | RecordBatch]]] = {}
        self.states: set[CheckpointId] = set()
        self.finished: set[CheckpointId] = set()
        self.fault: str | None = None
        """What a decision raised, when :attr:`catches` (None: nothing)."""

    # -- what a student writes -------------------------------------------------------------
    def first_marker(
        self, n: CheckpointId, channel: ChannelId | None, missing: tuple[ChannelId, ...]
    ) -> Sequence[Effect]:
        """The first marker of snapshot ``n`` arrived on input ``channel`` (None: the
        coordinator starts ``n`` at this process, which initiates it). ``missing``: the
        inputs whose marker of ``n`` is still to come. Return the effects."""
        raise NotImplementedError(
            f"{type(self).__name__}.first_marker(n, channel, missing) is not written yet: "
            "return what the process does when the first marker of snapshot n arrives on "
            "channel (or, channel None, when it initiates n)"
        )

    def later_marker(
        self,
        n: CheckpointId,
        channel: ChannelId,
        recorded: Recorded,
        missing: tuple[ChannelId, ...],
    ) -> Sequence[Effect]:
        """Another marker of snapshot ``n`` arrived, on input ``channel``. ``recorded``:
        what arrived on ``channel`` since it was recorded for ``n`` (empty if it was not);
        ``missing``: the inputs whose marker of ``n`` is still to come. Return the
        effects."""
        raise NotImplementedError(
            f"{type(self).__name__}.later_marker(n, channel, recorded, missing) is not "
            "written yet: return what the process does when another marker of snapshot n "
            "arrives on channel"
        )

    def recorded_on(self, n: CheckpointId, channel: ChannelId) -> Recorded:
        """What arrived on ``channel`` since it was recorded for snapshot ``n`` (empty when
        it is not recorded for ``n``)."""
        return tuple(self.recording.get(n, {}).get(channel, ()))

    # -- the plumbing around them ----------------------------------------------------------
    def on_trigger(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Initiate ``checkpoint_id`` here (unless started or finished already)."""
        n = checkpoint_id
        if n in self.arrived or n in self.finished:
            return NO_EFFECTS
        self.arrived[n] = ()
        return self._first(n, None)

    def on_barrier(
        self, channel: ChannelId, message: CheckpointBarrier | Marker
    ) -> Sequence[Effect]:
        """A marker on ``channel``: the first of its snapshot, or a later one."""
        n = message.snapshot_id if isinstance(message, Marker) else message.checkpoint_id
        if n in self.finished:
            return NO_EFFECTS
        arrived = self.arrived.get(n)
        if arrived is None:
            self.arrived[n] = (channel,)
            return self._first(n, channel)
        if channel in arrived:
            return NO_EFFECTS
        self.arrived[n] = (*arrived, channel)
        missing = self._missing(n)
        recorded = self.recorded_on(n, channel)
        asked = partial(self.later_marker, n, channel, recorded, missing)
        arg = f"{channel}, {_shown(recorded)}, {_names(missing)}"
        return self._asked("later_marker", n, arg, asked)

    def _first(self, n: CheckpointId, channel: ChannelId | None) -> list[Effect]:
        missing = self._missing(n)
        asked = partial(self.first_marker, n, channel, missing)
        return self._asked("first_marker", n, f"{channel}, {_names(missing)}", asked)

    def _missing(self, n: CheckpointId) -> tuple[ChannelId, ...]:
        arrived = self.arrived.get(n, ())
        return tuple(c for c in self.inputs if c not in arrived)

    def on_record(self, channel: ChannelId, record: Record) -> Sequence[Effect]:
        """Record ``record`` for every snapshot that records ``channel``."""
        for chans in self.recording.values():
            rs = chans.get(channel)
            if rs is not None:
                rs.append(record)
        return NO_EFFECTS

    def on_records(self, channel: ChannelId, batch: RecordBatch) -> Sequence[Effect]:
        """:meth:`on_record` of each record of ``batch`` (kept as it came)."""
        for chans in self.recording.values():
            rs = chans.get(channel)
            if rs is not None:
                rs.append(batch)
        return NO_EFFECTS

    def on_checkpoint_aborted(self, checkpoint_id: CheckpointId) -> Sequence[Effect]:
        """Drop snapshot ``checkpoint_id`` here; its late markers are ignored."""
        self._finish(checkpoint_id)
        return NO_EFFECTS

    def _finish(self, n: CheckpointId) -> None:
        self.finished.add(n)
        self.arrived.pop(n, None)
        self.recording.pop(n, None)
        self.states.discard(n)

    def _asked(
        self, hook: str, n: CheckpointId, arg: str, asked: Callable[[], object]
    ) -> list[Effect]:
        """The effects the student's decision ``hook`` (called as ``asked()``, with
        snapshot ``n`` and ``arg``) returns, checked and then kept track of; what it
        raised is kept in :attr:`fault` when the class :attr:`catches`."""
        try:
            effects = self._checked(hook, n, asked())
        except Exception as raised:
            if not self.catches:
                located(raised, self.task, f"{hook}({n}, {arg})")
                raise
            self.fault = raised_text(f"{hook}({n}, {arg})", raised)
            return []
        for e in effects:
            self._track(e)
        return effects

    def _track(self, e: Effect) -> None:
        """What an effect the student returned changes in the bookkeeping."""
        if type(e) is SnapshotState:
            n = e.checkpoint_id
            self.states.add(n)
            self.recording[n] = {c: [] for c in self._missing(n)}
        elif type(e) is RecordChannelState:
            self.recording.get(e.checkpoint_id, {}).pop(e.channel, None)
        elif type(e) is Acknowledge:
            self._finish(e.checkpoint_id)

    def _checked(self, hook: str, n: CheckpointId, result: object) -> list[Effect]:
        """``result`` of the student's ``hook`` about snapshot ``n``: a list (or tuple) of
        Chandy-Lamport's effects, all about ``n``, each in an order the runtime can carry
        out."""
        name = f"{type(self).__name__}.{hook}"
        if not isinstance(result, list | tuple):
            raise LabError(
                f"{name} returned {result!r:.60}, not a list of effects: return a list, e.g. "
                "[SnapshotState(n), BroadcastEvent(Marker(n))] (an empty list does nothing)"
            )
        taken = n in self.states
        for e in result:
            self._check_one(name, n, e, taken)
            if type(e) is SnapshotState:
                taken = True
        return list(result)

    def _check_one(self, name: str, n: CheckpointId, e: object, taken: bool) -> None:
        """One effect of the list, ``taken``: the state of ``n`` is recorded before it."""
        if not isinstance(e, MARKER_EFFECTS) or (
            type(e) is BroadcastEvent and type(e.message) is not Marker
        ):
            raise LabError(
                f"{name} returned {e!r:.70} in its list, which is no effect of "
                "Chandy-Lamport: use SnapshotState(n), BroadcastEvent(Marker(n)), "
                "RecordChannelState(n, channel, records) and Acknowledge(n)"
            )
        m = e.message.snapshot_id if type(e) is BroadcastEvent else e.checkpoint_id  # type: ignore[union-attr]
        if m != n:
            raise LabError(
                f"{name} returned {e!r:.70}, about snapshot {m}, when it was asked about "
                f"snapshot {n}: a decision's effects are about its own snapshot"
            )
        if type(e) is SnapshotState and taken:
            raise LabError(
                f"{name} recorded the state of snapshot {n} a second time: a process records "
                "its state once per snapshot"
            )
        if type(e) is RecordChannelState and e.channel not in self.inputs:
            raise LabError(
                f"{name} recorded the state of {e.channel}, which is not an input of "
                f"{self.task}: its inputs are {', '.join(map(str, self.inputs))}"
            )
        if type(e) in (RecordChannelState, Acknowledge) and not taken:
            what = "recorded a channel's state" if type(e) is RecordChannelState else "acknowledged"
            raise LabError(
                f"{name} {what} for snapshot {n} before recording the process's state: put "
                f"SnapshotState({n}) first (in this list or in an earlier decision)"
            )

    # -- views, deadlock reports and value semantics ---------------------------------------
    def waiting(self) -> list[Waiting]:
        return [Waiting(self.task, n, self._missing(n), ()) for n in sorted(self.arrived)]

    def recorded_channels(self) -> tuple[ChannelId, ...]:
        return tuple(c for c in self.inputs if any(c in r for r in self.recording.values()))

    def recorded_count(self, channel: ChannelId) -> list[tuple[CheckpointId, int]]:
        return [
            (n, len(chans[channel]))
            for n, chans in sorted(self.recording.items())
            if channel in chans
        ]

    def describe(self) -> str:
        if not self.arrived:
            return "not recording"
        parts = []
        for n in sorted(self.arrived):
            chans = self.recording.get(n, {})
            on = ", ".join(str(c) for c in self.inputs if c in chans) or "nothing"
            parts.append(f"snapshot {n}: recording {on}")
        return "; ".join(parts)

    def clone(self) -> MarkerHandler:
        """A copy; attributes a subclass keeps without ``__slots__`` are copied too."""
        new = object.__new__(type(self))
        new.task, new.inputs, new.loop_inputs, new.initiator = (
            self.task,
            self.inputs,
            self.loop_inputs,
            self.initiator,
        )
        new.arrived = dict(self.arrived)
        new.recording = {
            n: {c: list(rs) for c, rs in chans.items()} for n, chans in self.recording.items()
        }
        new.states = set(self.states)
        new.finished = set(self.finished)
        new.fault = self.fault
        extra = getattr(self, "__dict__", None)
        if extra:
            new.__dict__.update(copy.deepcopy(extra))
        return new

    def key(self) -> object:
        """The bookkeeping, the fault, and a subclass's own attributes (by their text)."""
        extra = getattr(self, "__dict__", None)
        own = tuple(sorted((k, repr(v)) for k, v in extra.items())) if extra else ()
        return (
            tuple(sorted(self.arrived.items())),
            tuple(
                (n, tuple((c, as_records(rs)) for c, rs in chans.items()))
                for n, chans in sorted(self.recording.items())
            ),
            frozenset(self.states),
            frozenset(self.finished),
            self.fault,
            own,
        )


def _shown(recorded: Recorded) -> str:
    """Recorded records as their values, ``[1,000, 2,000]``."""
    values = (r.value for r in as_records(recorded))
    return "[" + ", ".join(f"{v:,}" if isinstance(v, int) else repr(v) for v in values) + "]"


def _names(channels: tuple[ChannelId, ...]) -> str:
    """``channels`` as a tuple is written, by their names."""
    return "(" + ", ".join(map(str, channels)) + ("," if len(channels) == 1 else "") + ")"


class MarkerLabProtocol(ChandyLamportProtocol):
    """Chandy-Lamport with a student's handler class at every process (the capabilities of
    :class:`~absnb.protocols.chandy_lamport.ChandyLamportProtocol`: markers, channel
    state, any process initiates, concurrent snapshots).

    Args:
        handler_class: a subclass of :class:`MarkerHandler` (or the package's own
            :class:`~absnb.protocols.chandy_lamport.ChandyLamportHandler`).
        catch: keep what a decision raises in the handler's ``fault`` instead of raising it
            (the lab's checks look for it after every step).
    """

    name = "chandy-lamport-lab"
    title = "Chandy-Lamport, the lab's handler"
    short_title = "the lab's Chandy-Lamport"

    def __init__(self, handler_class: type[BarrierHandler], *, catch: bool = False) -> None:
        self.student_class = handler_class
        self.handler_class: type[BarrierHandler] = (
            type(handler_class.__name__, (handler_class,), {"__slots__": (), "catches": True})
            if catch
            else handler_class
        )

    def handler(self, graph: ExecutionGraph, task: TaskId) -> BarrierHandler:  # type: ignore[override]
        return self.handler_class(*task_handler_args(graph, task))

    def __repr__(self) -> str:
        return f"<protocol {self.name}: {self.student_class.__name__}>"
