"""The three runtimes of the differential test (``tests/test_differential.py``), each carrying
out a script's arrivals its own way: the simulator (:class:`SimDriver`), the one-task
harness (:class:`HarnessDriver`); the Spark host is :mod:`tests.differential.host`. The
task under test is the harness's: inputs ``in0``, ``in1`` -> ``task`` (the identity, or
:class:`FinalCount`, whose end of input sends) -> ``out``. Each driver reports what the
task did, in order (:meth:`Driver.signature`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from absnb.core.job import Job
from absnb.core.messages import (
    RECORD_TYPES,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    Record,
    as_records,
)
from absnb.core.snapshot import TaskSnapshot
from absnb.harness import TaskHarness, harness_graph
from absnb.operators import Operator
from absnb.operators.library import Map, identity
from absnb.sim.actions import Deliver, Wait
from absnb.sim.effects import outcome
from absnb.sim.events import Event
from absnb.sim.overtaking import overtaking_at
from absnb.sim.rules import perform
from absnb.sim.world import World
from absnb.task import Out, StreamTask

TIMEOUT = 1_000_000.0
INPUTS = ("in0", "in1")


class FinalCount(Operator[int]):
    """Forwards each record and counts them; when its input ends, sends the count (an
    operator whose ``end_input`` emits, as Flink's ``BoundedOneInput`` may)."""

    def initial_state(self) -> int:
        return 0

    def process(self, state: int, value: Any) -> tuple[int, list[Any]]:
        return state + 1, [value]

    def end_input(self, state: int) -> tuple[int, list[Any]]:
        return state, [("count", state)]


OPERATORS: dict[str, Callable[[], Operator]] = {
    "identity": lambda: Map(identity),
    "final-count": FinalCount,
}
"""The operators a script may run as the task under test, by name."""


def job(operator: str = "identity") -> Job:
    return Job("harness", {}, harness_graph(len(INPUTS), OPERATORS[operator]()))


def shown(m: Any) -> Any:
    """A sent message as the events name it: a record's value, or the control message."""
    return ("record", m.value) if type(m) is Record else ("sent", m)


# -- the arrival order, as every runtime carries it out -----------------------------------
class Arrivals:
    """The messages queued on the task's inputs in arrival order, and which one the task
    consumes next: the oldest priority event on an unblocked input, when the protocol's
    barriers overtake (a barrier, never a cancellation marker: Flink sends those in order),
    ahead of the records before it on its channel; else the oldest message on an unblocked
    input (Flink's ``CheckpointedInputGate``)."""

    def __init__(self, overtake: bool) -> None:
        self.queue: list[tuple[str, Any]] = []
        self.overtake = overtake

    def next(self, blocked: set[str]) -> tuple[str, int, tuple[Any, ...]] | None:
        """``(input, index of the message consumed, records it overtakes)`` or None."""
        oldest = None
        for i, (name, m) in enumerate(self.queue):
            if name in blocked:
                continue
            if self.overtake and type(m) is CheckpointBarrier:
                before = tuple(
                    x for n, x in self.queue[:i] if n == name and type(x) in RECORD_TYPES
                )
                return name, i, before
            if oldest is None:
                oldest = name, i, ()
        return oldest


class Driver:
    """What a runtime shows after each step of a script: what the task sent on (records and
    control messages, in order), the snapshots it acknowledged (with the in-flight records
    they hold), the checkpoints it declined, and its blocked inputs."""

    def __init__(self) -> None:
        self.log: list[Any] = []

    def signature(self) -> tuple[Any, ...]:
        """What happened since the last call, each kind in its order (sent, snapshots,
        declines), and the inputs blocked now."""
        log, self.log = self.log, []
        # When a finished task sends its own end is the runtime's choice (the host at once,
        # the simulator as an EndInput step of its own): it is no protocol event.
        log = [e for e in log if e != ("sent", EndOfInput())]
        kinds = [[e for e in log if e[0] in k] for k in (("record", "sent"), ("snapshot",))]
        declined = sorted(e for e in log if e[0] == "decline")
        return (*map(tuple, kinds), tuple(declined), tuple(sorted(self.blocked())))

    def blocked(self) -> set[str]:
        raise NotImplementedError

    def snapshot(self, part: TaskSnapshot, names: dict[Any, str]) -> None:
        states = part.channel_states.items()
        recorded = {names[c]: tuple(r.value for r in as_records(rs)) for c, rs in states if rs}
        self.log.append(("snapshot", part.checkpoint_id, tuple(sorted(recorded.items()))))


class SimDriver(Driver):
    """The simulator: messages are put on the world's channels in arrival order, and each
    is consumed by a :class:`~absnb.sim.actions.Deliver` of its channel."""

    def __init__(self, protocol: str, timeout: float | None, operator: str = "identity") -> None:
        super().__init__()
        self.world = World(job(operator), protocol, alignment_timeout=timeout, max_concurrent=None)
        graph = self.world.graph
        (self.task,) = graph.tasks_of("task")
        self.channels = {n: graph.channel(f"{n}->task") for n in INPUTS}
        self.names = {c: n for n, c in self.channels.items()}
        self.arrivals = Arrivals(self.world.protocol.barriers_overtake)
        self.seq = dict.fromkeys(INPUTS, 0)
        self.acked: set[int] = set()
        self.declined = 0

    def blocked(self) -> set[str]:
        return {self.names[c] for c in self.world.blocked}

    def push(self, name: str, m: Any) -> None:
        if type(m) is Record:
            self.seq[name] += 1
            m = Record(m.value, self.seq[name])
        elif type(m) is not EndOfInput:
            n = m.snapshot_id if type(m) is Marker else m.checkpoint_id
            while self.world.coordinator.next_id <= n:  # pending, so that parts are kept
                self.world.coordinator.trigger(self.world.clock)
            if self.world.static.alignment_timeout is not None and type(m) is CheckpointBarrier:
                self.world.writable_task(self.task).hear(n, self.world.clock)  # as a step would
        self.world.writable_channel(self.channels[name]).append(m)
        self.arrivals.queue.append((name, m))

    def process(self) -> None:
        self._late()
        while (nxt := self.arrivals.next(self.blocked())) is not None:
            name, i, overtaken = nxt
            del self.arrivals.queue[i]
            event = self.world.apply(Deliver(self.channels[name]))
            assert event.overtaken == len(overtaken)
            self._record(event)
            self._late()

    def tick(self) -> None:
        """Time passes: the timeout's worth of steps, the last one a wait; what was overdue
        before is delivered first, as the host delivers it as soon as it sees it due."""
        self._late()
        self.world.clock += int(TIMEOUT) - 1
        self._record(perform(self.world, Wait()))
        self._late()

    def _late(self) -> None:
        """Deliver first the barriers of overdue checkpoints (the scheduler's choice here,
        to match the host, which delivers them as soon as it sees them due)."""
        if self.arrivals.overtake:
            return
        for c in self.channels.values():
            while (m := self._overdue(c)) is not None:
                i = next(i for i, (_, x) in enumerate(self.arrivals.queue) if x is m)
                del self.arrivals.queue[i]
                self._record(self.world.apply(Deliver(c)))

    def _overdue(self, c: Any) -> Any:
        """The barrier a delivery of ``c`` hands the task now, if its checkpoint is overdue."""
        q = self.world.channels[c]
        i = overtaking_at(self.world, c) if q else None
        return None if i is None else q[i]

    def run(self, act: Callable[[StreamTask, Out], None]) -> None:
        """What the world does with one of its task's own steps (a notification, an
        abort): the task's controls and sends are carried out."""
        task = self.world.writable_task(self.task)
        out = Out()
        act(task, out)
        event = Event(self.world.clock, Deliver(self.channels["in0"]))
        self._record(outcome(self.world, task, out, event))

    def _record(self, event: Event) -> None:
        for n, pending in sorted(self.world.coordinator.pending.items()):
            part = pending.acknowledged.get(self.task)
            if part is not None and n not in self.acked:
                self.acked.add(n)
                self.snapshot(part, self.names)
        self.log.extend(shown(m) for c, m in event.sent if c.src == self.task)
        declined = self.world.coordinator.declined
        self.log.extend(("decline", n) for n, t, _ in declined[self.declined :] if t == self.task)
        self.declined = len(declined)


class HarnessDriver(Driver):
    """The one-task harness, processing only when told (``autoprocess=False``)."""

    def __init__(self, protocol: str, timeout: float | None, operator: str = "identity") -> None:
        super().__init__()
        self.h = TaskHarness(
            protocol,
            inputs=len(INPUTS),
            operator=OPERATORS[operator](),
            alignment_timeout=timeout,
            autoprocess=False,
        )
        self.seen = (0, 0, 0)

    def blocked(self) -> set[str]:
        return set(self.h.blocked)

    def push(self, name: str, m: Any) -> None:
        h = self.h
        if type(m) is Record:
            h.push(name, m.value)
        elif type(m) is EndOfInput:
            h.end(name)
        elif type(m) is CancelCheckpointMarker:
            h.cancel(name, m.checkpoint_id)
        else:
            h.barrier(name, m.snapshot_id if type(m) is Marker else m.checkpoint_id)

    def process(self) -> None:
        self.h.process()
        self._record()

    def tick(self) -> None:
        self.h.advance(TIMEOUT)
        self._record()

    def run(self, act: Callable[[StreamTask, Out], None]) -> None:
        self.h._run(lambda out: act(self.h.task, out))
        self._record()

    def _record(self) -> None:
        h, (sent, taken, declined) = self.h, self.seen
        for part in h.checkpoints[taken:]:
            self.snapshot(part, {c: n for n, c in h.channels.items()})
        self.log.extend(("record", m) if not _control(m) else ("sent", m) for m in h.emitted[sent:])
        self.log.extend(("decline", n) for n, _ in h.declined[declined:])
        self.seen = (len(h.emitted), len(h.checkpoints), len(h.declined))


def _control(m: Any) -> bool:
    return type(m) in (CheckpointBarrier, Marker, CancelCheckpointMarker, EndOfInput)
