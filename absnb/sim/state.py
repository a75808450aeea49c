"""The state of a simulated job, as plain data.

Tasks (operator state, protocol handler, counters), FIFO channels with their blocked flag,
input logs, the checkpoint coordinator and a step clock. A state can be cloned, compared
and hashed, so the stepper can go back and the explorer can branch and deduplicate. It
holds no rules: when each action may happen and what it does is the action table of
:mod:`absnb.sim.rules`; :class:`~absnb.sim.world.World` puts the two together.
"""

from __future__ import annotations

from collections import deque
from typing import Any, TypeVar

from absnb.core.format import show_message
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.job import Job
from absnb.core.messages import OnChannel, Record, RecordBatch
from absnb.core.snapshot import GlobalSnapshot
from absnb.operators.base import Operator
from absnb.protocols import CheckpointCoordinator, get_protocol
from absnb.protocols.base import SnapshotProtocol
from absnb.sim.actions import Deliver, Emit, TriggerCheckpoint
from absnb.sim.args import check_world
from absnb.sim.recovery import PartKeys, acknowledged_key, recovery_key
from absnb.task import Send, StreamTask, uncommitted

_S = TypeVar("_S", bound="WorldState")


class Static:
    """What every clone of a state shares: the job, the protocol, prebuilt actions."""

    def __init__(
        self,
        job: Job,
        protocol: SnapshotProtocol,
        max_checkpoints: int | None,
        notify_steps: bool,
    ):
        self.job = job
        self.graph = graph = job.graph
        self.protocol = protocol
        self.max_checkpoints = max_checkpoints
        self.deliver = {c: Deliver(c) for c in graph.channels}
        self.deliveries = tuple(self.deliver.values())
        """One Deliver per channel, in the order of a state's ``channels`` (the graph's)."""
        self.emitters = tuple(t for t in graph.tasks if graph.kind(t) in ("source", "process"))
        self.emit = {t: Emit(t) for t in self.emitters}
        self.waits = {  # operators whose next log entry may have to wait (the bank)
            t: graph.function(t).waits
            for t in self.emitters
            if type(graph.function(t)).waits is not Operator.waits
        }
        self.emits = tuple((t, self.emit[t], t in self.waits) for t in self.emitters)
        """Each emitter with its Emit and whether its next entry may wait."""
        self.trigger = TriggerCheckpoint()
        self.sinks = tuple(t for t in graph.tasks if graph.kind(t) == "sink")
        self.notify_steps = notify_steps
        self.overtake = protocol.barriers_overtake
        self.alignment_timeout: float | None = getattr(protocol, "alignment_timeout", None)
        self.part_keys: PartKeys = {}
        """The keys of the task snapshots acknowledged in any clone, for :meth:`WorldState.key`."""


class WorldState:
    """One state of a simulated job: plain data, with copy on write between clones.

    The arguments are :class:`~absnb.sim.world.World`'s.
    """

    def __init__(
        self,
        job: Job,
        protocol: str | SnapshotProtocol = "abs",
        *,
        checkpoint_interval: int | None = None,
        max_checkpoints: int | None = None,
        allow_deadlock: bool = False,
        notify_steps: bool | None = None,
        alignment_timeout: float | None = None,
        checkpoint_timeout: float | None = None,
        min_pause: float = 1,
        max_concurrent: int | str | None = "protocol",
    ) -> None:
        check_world(job, checkpoint_interval, max_checkpoints, allow_deadlock, notify_steps)
        proto = get_protocol(
            protocol, job.graph, allow_deadlock=allow_deadlock, alignment_timeout=alignment_timeout
        )
        for op in job.graph.operators.values():
            check = getattr(op.function, "check", None)
            if check is not None:
                check()  # a sink that cannot write fails here, before the job starts
        if notify_steps is None:
            notify_steps = any(op.function.external for op in job.graph.operators.values())
        self.static = Static(job, proto, max_checkpoints, notify_steps)
        """What every clone shares (the job, the protocol, prebuilt actions): an attribute,
        not a property, as the rules and steps read it several times a step."""
        graph = job.graph
        self.tasks: dict[TaskId, StreamTask] = {t: StreamTask(graph, t, proto) for t in graph.tasks}
        self.channels: dict[ChannelId, deque[OnChannel]] = {c: deque() for c in graph.channels}
        self.blocked: set[ChannelId] = set()
        self.inputs: dict[TaskId, tuple[Any, ...]] = {
            t: tuple(job.inputs.get(t, ())) for t in self.static.emitters
        }
        self.coordinator = CheckpointCoordinator.for_graph(
            graph,
            proto,
            checkpoint_interval,
            min_pause=min_pause,
            timeout=checkpoint_timeout,
            max_concurrent=max_concurrent,
        )
        self.clock = 0
        self.failed: TaskId | None = None
        self.replaying = 0
        self.notices: dict[TaskId, tuple[CheckpointId, ...]] = {}
        """Notify-checkpoint-complete messages on their way to each task (``notify_steps``)."""
        self._own: set[object] = {*self.tasks, *self.channels}
        self._task_keys: dict[TaskId, object] = {}
        """Each unchanged task's :meth:`StreamTask.key`, shared with clones (a task is only
        changed through :meth:`writable_task`, which forgets its key)."""

    # -- copy on write ---------------------------------------------------------------------
    def writable_task(self, t: TaskId) -> StreamTask:
        """Task ``t``, ready to be changed (copied first if a clone still shares it): the one
        way to change a task, as it forgets the task's key."""
        if self._task_keys:  # none unless asked for a key (the explorer, a comparison)
            self._task_keys.pop(t, None)
        if t in self._own:
            return self.tasks[t]
        task = self.tasks[t] = self.tasks[t].clone()
        self._own.add(t)
        return task

    def writable_channel(self, c: ChannelId) -> deque[OnChannel]:
        """Channel ``c``'s queue, ready to be changed (copied first if shared)."""
        if c in self._own:
            return self.channels[c]
        q = self.channels[c] = self.channels[c].copy()
        self._own.add(c)
        return q

    def push(self, sends: list[Send]) -> None:
        """Append each sent message to the tail of its channel (FIFO)."""
        own, channels = self._own, self.channels
        for c, m in sends:
            if isinstance(m, RecordBatch):  # only a runtime batches (StreamTask.deliver_batch)
                raise TypeError(f"the simulator moves one record at a time, not {m!r} on {c}")
            (channels[c] if c in own else self.writable_channel(c)).append(m)

    # -- read access -----------------------------------------------------------------------
    @property
    def job(self) -> Job:
        return self.static.job

    @property
    def graph(self) -> ExecutionGraph:
        return self.static.graph

    @property
    def protocol(self) -> SnapshotProtocol:
        return self.static.protocol

    @property
    def checkpoint_interval(self) -> int | None:
        """Steps between periodic checkpoints (None: only on request)."""
        interval = self.coordinator.interval
        return None if interval is None else int(interval)

    @property
    def max_checkpoints(self) -> int | None:
        """The most checkpoints this run triggers (None: no limit)."""
        return self.static.max_checkpoints

    @property
    def allow_deadlock(self) -> bool:
        """True when ABS Algorithm 1 was allowed on a cyclic graph."""
        return bool(getattr(self.protocol, "allow_deadlock", False))

    def state_of(self, task: TaskId | str) -> Any:
        """The operator state of a task, by id or printed name (``"A"``, ``"count[1]"``)."""
        return self.tasks[self.graph.task(task)].state

    def channel_values(self, channel: ChannelId | str) -> list[Any]:
        """What is in transit on a channel, as values and message names."""
        q = self.channels[self.graph.channel(channel)]
        return [m.value if type(m) is Record else show_message(m) for m in q]

    def output(self) -> Any:
        """The job's output so far (see :meth:`Job.output <absnb.Job.output>`)."""
        return self.job.output({t: task.state for t, task in self.tasks.items()})

    def latest_snapshot(self) -> GlobalSnapshot | None:
        """The latest completed global snapshot, if any."""
        latest = self.coordinator.latest()
        return latest.snapshot if latest else None

    @property
    def snapshots(self) -> list[GlobalSnapshot]:
        """Every completed global snapshot, oldest first."""
        return [c.snapshot for c in self.coordinator.completed]

    def input_remaining(self) -> bool:
        """True while some source or process has input log entries left to consume."""
        tasks, inputs = self.tasks, self.inputs
        for t in self.static.emitters:  # noqa: SIM110 (no generator: schedulers ask every step)
            if tasks[t].offset < len(inputs[t]):
                return True
        return False

    def uncommitted(self) -> int:
        """Sink transactions not yet committed to their external systems
        (:func:`absnb.task.uncommitted` of the sinks)."""
        tasks = self.tasks
        return uncommitted(tasks[t] for t in self.static.sinks)

    def is_finished(self) -> bool:
        """All input consumed, every channel empty and every notification delivered."""
        return (
            self.failed is None
            and not self.notices
            and all(not q for q in self.channels.values())
            and all(self.tasks[t].offset >= len(self.inputs[t]) for t in self.static.emitters)
        )

    # -- value semantics -------------------------------------------------------------------
    def clone(self: _S) -> _S:
        """An independent copy; applying actions to it leaves this state unchanged."""
        new = object.__new__(type(self))
        new.static = self.static
        # Copy on write: both states share every task and channel until they change it.
        new.tasks = dict(self.tasks)
        new.channels = dict(self.channels)
        new._own = set()
        self._own = set()
        # (empty ones, the common case, made new rather than copied: a step with history
        # clones the world)
        new._task_keys = dict(self._task_keys) if self._task_keys else {}
        new.blocked = set(self.blocked) if self.blocked else set()
        new.inputs = dict(self.inputs)
        new.coordinator = self.coordinator.clone()
        new.clock = self.clock
        new.failed = self.failed
        new.replaying = self.replaying
        new.notices = dict(self.notices) if self.notices else {}
        return new

    def key(self, *, recovery: bool = True) -> tuple[object, ...]:
        """A hashable value equal for states whose futures are the same.

        The clock and history (trace, completed and aborted lists, when checkpoints were
        taken) are left out, so different interleavings reaching the same state compare
        equal. The parts acknowledged to pending checkpoints count (they make up the next
        snapshot). With ``recovery`` (the default) it includes what a recovery would read
        (:func:`~absnb.sim.recovery.recovery_key`); the explorer leaves that out when no
        crash can happen.
        """
        return (
            self._tasks_key(),
            tuple(map(tuple, self.channels.values())),
            frozenset(self.blocked),
            self.coordinator.key(self.clock),
            acknowledged_key(self, self.static.part_keys),
            self.failed,
            tuple(map(len, self.inputs.values())),
            tuple(sorted(self.notices.items())),
            self._timers_key() if self.static.alignment_timeout is not None else None,
            recovery_key(self, self.static.part_keys) if recovery else None,
        )

    def _timers_key(self) -> tuple[object, ...]:
        """The tasks' alignment timers, as time since each checkpoint was heard of (they
        need the clock, which a task's own key leaves out)."""
        return tuple(
            (t, task.timer.key(self.clock))
            for t, task in self.tasks.items()
            if task.timer is not None
        )

    def timed(self) -> list[TaskId]:
        """The tasks whose alignment timer runs (:attr:`~absnb.task.StreamTask.timer`)."""
        return [t for t, task in self.tasks.items() if task.timer is not None]

    def _tasks_key(self) -> tuple[object, ...]:
        """Every task's key, in task order, each computed once while the task is unchanged
        (the explorer asks for every state, and a step changes one task or a few)."""
        keys = self._task_keys
        out = []
        for t, task in self.tasks.items():
            k = keys.get(t)
            if k is None:
                k = keys[t] = task.key()
            out.append(k)
        return tuple(out)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WorldState):
            return NotImplemented
        return (
            self.static.graph.fingerprint == other.static.graph.fingerprint
            and self.key() == other.key()
        )

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return (
            f"<World {self.graph.name} {self.protocol.name} step={self.clock} "
            f"in_transit={sum(len(q) for q in self.channels.values())} "
            f"checkpoints={len(self.coordinator.completed)}>"
        )
