"""One protocol, three runtimes: the same arrival order at one task gives the same protocol
events in the simulator (:class:`absnb.World`), the one-task harness
(:class:`absnb.harness.TaskHarness`) and the Spark host (:class:`absnb.runtime.host.Host`,
its task handling driven without Spark or sockets).

The task under test is the harness's: inputs ``in0``, ``in1`` -> ``task`` (the identity) ->
``out``. A script pushes records, barriers, cancellation markers and ends of input on the
inputs, with the coordinator's notifications and aborts, and time passing, between them;
what arrives on a blocked input waits; ``process`` consumes what can be consumed, oldest
arrival first (a barrier behind records overtakes them under a protocol whose barriers
overtake, FLIP-76). Under an alignment timeout every runtime keeps its own clock (steps,
seconds, the harness's counter) and asks the one rule
(:mod:`absnb.protocols.alignment_timer`) when a checkpoint is overdue: a ``tick`` moves
every clock on by the timeout, after which the task switches and late barriers overtake.
Each runtime carries the script out its own way and reports
what the task did, in order: blocks, unblocks, snapshots (with the in-flight records they
recorded, i.e. the records a barrier overtook), what it sent on (records, barriers,
markers, cancellation markers, its end) and what it declined.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
from absnb.jobs.base import Job
from absnb.operators.library import Map, identity
from absnb.runtime.host import Host, HostPlan
from absnb.runtime.priority import Overtaking
from absnb.sim.actions import Deliver, Wait
from absnb.sim.effects import outcome
from absnb.sim.events import Event
from absnb.sim.overtaking import overtaking_at
from absnb.sim.rules import perform
from absnb.sim.step_end import hear
from absnb.sim.world import World

TIMEOUT = 1_000_000.0
MODES: dict[str, tuple[str, float | None]] = {
    "abs": ("abs", None),
    "abs-cyclic": ("abs-cyclic", None),
    "chandy-lamport": ("chandy-lamport", None),
    "synchronous": ("synchronous", None),
    "at-least-once": ("at-least-once", None),
    "unaligned": ("unaligned", None),
    "abs-timeout": ("abs", TIMEOUT),  # far more than the steps a script takes: only ticks
}
INPUTS = ("in0", "in1")

Step = tuple[Any, ...]
"""``("push", input, value)``, ``("barrier", input, n)``, ``("cancel", input, n)``,
``("end", input)``, ``("process",)``, ``("tick",)`` (time passes: the timeout),
``("complete", n)``, ``("abort", n)``."""


def job() -> Job:
    return Job("harness", {}, harness_graph(len(INPUTS), Map(identity)))


def _message(protocol_name: str, n: int) -> CheckpointBarrier | Marker:
    return Marker(n) if protocol_name == "chandy-lamport" else CheckpointBarrier(n)


def shown(m: Any) -> Any:
    """A sent message as the events name it: a record's value, or the control message."""
    return ("record", m.value) if type(m) is Record else ("sent", m)


# -- the arrival order, as every runtime carries it out -----------------------------------
class Arrivals:
    """The messages queued on the task's inputs in arrival order, and which one the task
    consumes next (Flink's ``CheckpointedInputGate``: oldest first, a blocked input waits;
    a barrier or a cancellation marker overtakes the records before it when the protocol's
    barriers overtake, FLIP-76)."""

    def __init__(self, overtake: bool) -> None:
        self.queue: list[tuple[str, Any]] = []
        self.overtake = overtake

    def next(self, blocked: set[str]) -> tuple[str, int, tuple[Any, ...]] | None:
        """``(input, index of the message consumed, records it overtakes)`` or None."""
        seen: set[str] = set()
        for i, (name, m) in enumerate(self.queue):
            if name in blocked or name in seen:
                continue
            seen.add(name)
            if self.overtake and type(m) in RECORD_TYPES:
                for j in range(i + 1, len(self.queue)):
                    nj, mj = self.queue[j]
                    if nj != name or type(mj) in RECORD_TYPES:
                        continue
                    if type(mj) is EndOfInput:
                        break  # an end overtakes nothing
                    before = tuple(x for nx, x in self.queue[i:j] if nx == name)
                    return name, j, before  # a barrier or a cancellation marker
            return name, i, ()
        return None


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

    def __init__(self, protocol: str, timeout: float | None) -> None:
        super().__init__()
        self.world = World(job(), protocol, alignment_timeout=timeout, max_concurrent=None)
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
                hear(self.world, self.task, n)  # as a step that sent it would
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
        """Time passes: the timeout's worth of steps, the last one a wait."""
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

    def run(self, act: Callable[[Any, list[Any]], Any]) -> None:
        """What the world does with one of its task's own steps (a notification, an
        abort): the task's controls and sends are carried out."""
        task = self.world.writable_task(self.task)
        sends: list[Any] = []
        event = Event(self.world.clock, Deliver(self.channels["in0"]))
        self._record(outcome(self.world, task, sends, act(task, sends), event))

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

    def __init__(self, protocol: str, timeout: float | None) -> None:
        super().__init__()
        self.h = TaskHarness(
            protocol, inputs=len(INPUTS), alignment_timeout=timeout, autoprocess=False
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

    def run(self, act: Callable[[Any, list[Any]], Any]) -> None:
        self.h._run(lambda sends: act(self.h.task, sends))
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


class HostDriver(Driver):
    """The Spark host's task handling (:meth:`Host._deliver` and what it calls), with every
    task of the job on this host and nothing started: no Spark, no sockets."""

    def __init__(self, protocol: str, timeout: float | None, tmp: str) -> None:
        super().__init__()
        plan = HostPlan(
            job(),
            protocol,
            host_id=0,
            tasks=job().graph.tasks,
            secret=b"",
            coordinator=("127.0.0.1", 0),
            storage_url=tmp,
            job_id="differential",
            alignment_timeout=timeout,
        )
        self.host = host = Host(plan)
        host.writer = _Writer(self)  # type: ignore[assignment]
        host.client = _Client(self)  # type: ignore[assignment]
        host.net = None  # type: ignore[assignment]  # every channel is local: no data plane
        dispatch = host._dispatch

        def dispatched(sends: list[Any]) -> None:  # what the task sends, as the host sends it
            self.log.extend(shown(m) for c, m in sends if c.src == self.task)
            dispatch(sends)

        host._dispatch = dispatched  # type: ignore[method-assign]
        self.now = 0.0
        host.clock = lambda: self.now  # type: ignore[method-assign]
        (self.task,) = host.graph.tasks_of("task")
        self.channels = {n: host.graph.channel(f"{n}->task") for n in INPUTS}
        self.names = {c: n for n, c in self.channels.items()}
        self.out = host.graph.channel("task->out")
        self.arrivals = Arrivals(host.overtake)
        self.seq = dict.fromkeys(INPUTS, 0)

    def blocked(self) -> set[str]:
        return {self.names[c] for c in self.host.blocked if c in self.names}

    def push(self, name: str, m: Any) -> None:
        if type(m) is Record:
            self.seq[name] += 1
            m = Record(m.value, self.seq[name])
        elif type(m) is CheckpointBarrier and self.host.announce:  # on the priority lane
            before = tuple(x for n, x in self.arrivals.queue if n == name and type(x) is Record)
            self.host.announced.keep(self.channels[name], Overtaking(m, before), self.now)
        self.arrivals.queue.append((name, m))

    def process(self) -> None:
        self.host._due(self.host.client)
        while (nxt := self.arrivals.next(self.blocked())) is not None:
            name, i, overtaken = nxt
            _, m = self.arrivals.queue.pop(i)
            if overtaken:
                m = Overtaking(m, overtaken)
            self.host._deliver(self.channels[name], m, self.host.client)
            self.host._due(self.host.client)  # between two pieces, as the host's loop does
            self._record()

    def tick(self) -> None:
        self.now += TIMEOUT
        self.host._due(self.host.client)
        self._record()

    def run(self, act: Callable[[Any, list[Any]], Any]) -> None:
        sends: list[Any] = []
        task = self.host.tasks[self.task]
        self.host._after(self.task, act(task, sends), sends, self.host.client)
        self._record()

    def _record(self) -> None:
        self.host.queues[self.out].clear()  # the sink is not under test


class _Writer:
    """Stands in for the host's snapshot writer: the snapshot goes to the driver's log."""

    pending = 0

    def __init__(self, driver: HostDriver) -> None:
        self.driver = driver

    def submit(self, snapshot: TaskSnapshot, alignment_s: float) -> None:
        if snapshot.task == self.driver.task:
            self.driver.snapshot(snapshot, self.driver.names)

    def close(self) -> None:
        pass


class _Client:
    """Stands in for the host's control client: a decline goes to the driver's log."""

    def __init__(self, driver: HostDriver) -> None:
        self.driver = driver

    def decline(self, task: Any, checkpoint_id: int, reason: str) -> None:
        if task == self.driver.task:
            self.driver.log.append(("decline", checkpoint_id))


# -- scripts ----------------------------------------------------------------------------------
def play(script: list[Step], mode: str, tmp: str) -> dict[str, list[Any]]:
    """Run ``script`` through the three runtimes; what each showed after every step."""
    protocol, timeout = MODES[mode]
    drivers: dict[str, Any] = {
        "simulator": SimDriver(protocol, timeout),
        "harness": HarnessDriver(protocol, timeout),
        "host": HostDriver(protocol, timeout, tmp),
    }
    shows: dict[str, list[Any]] = {name: [] for name in drivers}
    for step in script:
        for name, d in drivers.items():
            _step(d, step, protocol)
            shows[name].append((step, d.signature()))
    return shows


def _step(d: Any, step: Step, protocol: str) -> None:
    kind = step[0]
    if kind == "push":
        d.push(step[1], Record(step[2], 0))
    elif kind == "barrier":
        d.push(step[1], _message(protocol, step[2]))
    elif kind == "cancel":
        d.push(step[1], CancelCheckpointMarker(step[2]))
    elif kind == "end":
        d.push(step[1], EndOfInput())
    elif kind == "process":
        d.process()
    elif kind == "tick":
        d.tick()
    elif kind == "complete":
        d.run(lambda task, sends: task.checkpoint_complete(step[1], sends))
    elif kind == "abort":
        d.run(lambda task, sends: task.checkpoint_aborted(step[1], sends))


@st.composite
def scripts(draw: Any, mode: str) -> list[Step]:
    """A script: arrivals on the inputs (records; on each input the checkpoints' barriers in
    order, 1, 2, ..., some replaced by a cancellation marker; an end), with ``process``
    steps, the coordinator's aborts and (``abs-timeout``) time passing between."""
    script: list[Step] = []
    ended: set[str] = set()
    checkpoint = dict.fromkeys(INPUTS, 0)
    value = 0
    kinds = ["push", "push", "barrier", "process", "process", "end", "abort"]
    kinds += ["cancel"] if mode != "chandy-lamport" else []
    kinds += ["tick", "tick"] if mode == "abs-timeout" else []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(kinds))
        live = [n for n in INPUTS if n not in ended]
        if kind in ("push", "barrier", "cancel", "end") and live:
            name = draw(st.sampled_from(live))
            if kind == "push":
                value += 1
                script.append(("push", name, value))
            elif kind == "end":
                ended.add(name)
                script.append(("end", name))
            else:
                checkpoint[name] += 1
                script.append((kind, name, checkpoint[name]))
        elif kind == "abort":
            script.append(("abort", draw(st.integers(1, 3))))
        elif kind in ("process", "tick"):
            script.append((kind,))
    script.append(("process",))
    return script


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("mode", list(MODES))
@SETTINGS
@given(data=st.data())
def test_the_same_arrivals_give_the_same_protocol_events(mode, data, tmp_path) -> None:
    script = data.draw(scripts(mode))
    shows = play(script, mode, str(tmp_path))
    assert shows["host"] == shows["simulator"]
    if mode == "unaligned" and any(step[0] == "cancel" for step in script):
        return  # the harness lets no cancellation marker overtake records (see below)
    assert shows["harness"] == shows["simulator"]


def test_the_harness_lets_no_cancellation_marker_overtake_records(tmp_path) -> None:
    # Where the harness parts from the two runtimes: under unaligned checkpoints the
    # simulator and the host take a cancellation marker ahead of the records queued before
    # it (a priority event, as the task's deliver_overtaking allows); the harness's queue
    # processes it in order. Pinned here, so that the day they agree this test says so.
    script: list[Step] = [("push", "in0", 1), ("cancel", "in0", 1), ("process",)]
    shows = play(script, "unaligned", str(tmp_path))
    assert shows["host"] == shows["simulator"]
    assert shows["simulator"][-1][1][0] == (("sent", CancelCheckpointMarker(1)), ("record", 1))
    assert shows["harness"][-1][1][0] == (("record", 1), ("sent", CancelCheckpointMarker(1)))


def test_a_script_shows_blocks_snapshots_forwarded_barriers_and_overtaken_records(
    tmp_path,
) -> None:
    # The comparison has something to compare: an aligned checkpoint blocks and forwards,
    # an unaligned one records the records its barrier overtook.
    script: list[Step] = [
        ("push", "in0", 1),
        ("barrier", "in0", 1),
        ("push", "in0", 2),
        ("process",),
        ("push", "in1", 3),
        ("barrier", "in1", 1),
        ("process",),
    ]
    shows = play(script, "abs", str(tmp_path))
    assert shows["simulator"][3][1] == ((("record", 1),), (), (), ("in0",))
    assert shows["simulator"][6][1] == (
        (("record", 3), ("sent", CheckpointBarrier(1)), ("record", 2)),
        (("snapshot", 1, ()),),
        (),
        (),
    )
    assert shows["host"] == shows["simulator"] == shows["harness"]
    script = [("push", "in0", 1), ("push", "in0", 2), ("barrier", "in0", 1), ("process",)]
    shows = play(script, "unaligned", str(tmp_path))
    assert shows["simulator"][-1][1][:2] == (
        (("sent", CheckpointBarrier(1)), ("record", 1), ("record", 2)),
        (),  # acknowledged once in1's barrier has come too
    )
    script += [("barrier", "in1", 1), ("process",)]
    shows = play(script, "unaligned", str(tmp_path))
    assert shows["simulator"][-1][1][1] == (("snapshot", 1, (("in0", (1, 2)),)),)
    assert shows["host"] == shows["simulator"] == shows["harness"]


def test_a_tick_makes_a_late_barrier_overtake_and_the_task_switch_in_every_runtime(
    tmp_path,
) -> None:
    # The one rule of protocols/alignment_timer.py, on three clocks: before the tick the
    # barrier waits behind the records; once its checkpoint is overdue it overtakes them
    # and the task switches to unaligned, recording them as in0's channel state.
    script: list[Step] = [
        ("push", "in0", 1),
        ("push", "in0", 2),
        ("barrier", "in0", 1),
        ("tick",),
        ("barrier", "in1", 1),
        ("process",),
    ]
    shows = play(script, "abs-timeout", str(tmp_path))
    assert shows["simulator"][3][1] == ((("sent", CheckpointBarrier(1)),), (), (), ())
    assert shows["simulator"][5][1][1] == (("snapshot", 1, (("in0", (1, 2)),)),)
    assert shows["host"] == shows["simulator"] == shows["harness"]
    before = play([*script[:3], ("process",)], "abs-timeout", str(tmp_path))
    assert before["simulator"][3][1] == ((("record", 1), ("record", 2)), (), (), ("in0",))
