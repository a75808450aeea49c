"""The World: the whole simulated system as plain data.

Tasks (operator state, protocol handler, counters), FIFO channels with their blocked flag,
input logs, the checkpoint coordinator and a step clock. A world can be cloned, compared
and hashed, so the stepper can go back and the explorer can branch and deduplicate.
:meth:`World.apply` performs one action (:mod:`absnb.sim.steps`) and returns the
:class:`~absnb.sim.events.Event`.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from absnb.core.errors import ActionNotEnabledError, TransferRefusedError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import EndOfInput, OnChannel, Record
from absnb.core.snapshot import GlobalSnapshot
from absnb.jobs.base import Job
from absnb.operators.base import Operator
from absnb.protocols import CheckpointCoordinator, get_protocol
from absnb.protocols.base import SnapshotProtocol
from absnb.sim import effects, modes, steps
from absnb.sim.actions import (
    Action,
    Crash,
    Deliver,
    Emit,
    Notify,
    Recover,
    Transfer,
    TriggerCheckpoint,
    Wait,
)
from absnb.sim.args import check_world
from absnb.sim.enabled import why_not
from absnb.sim.events import Event
from absnb.sim.format import show_message
from absnb.sim.recovery import acknowledged_key, recovery_key
from absnb.task import StreamTask

WAIT = Wait()


class _Static:
    """What every clone of a world shares: the job, the protocol, prebuilt actions."""

    def __init__(
        self,
        job: Job,
        protocol: SnapshotProtocol,
        max_checkpoints: int | None,
        notify_steps: bool,
    ):
        self.job = job
        self.graph = job.graph
        self.protocol = protocol
        self.max_checkpoints = max_checkpoints
        self.deliver = {c: Deliver(c) for c in self.graph.channels}
        self.emitters = tuple(
            t for t in self.graph.tasks if self.graph.kind(t) in ("source", "process")
        )
        self.emit = {t: Emit(t) for t in self.emitters}
        self.waits = {  # operators whose next log entry may have to wait (the bank)
            t: self.graph.function(t).waits
            for t in self.emitters
            if type(self.graph.function(t)).waits is not Operator.waits
        }
        self.trigger = TriggerCheckpoint()
        self.sinks = tuple(t for t in self.graph.tasks if self.graph.kind(t) == "sink")
        self.notify_steps = notify_steps
        self.overtake = protocol.barriers_overtake
        timeout = getattr(protocol, "alignment_timeout", None)
        self.alignment_timeout: float | None = timeout


class World:
    """One state of a simulated job.

    Args:
        job: the job to run (see :mod:`absnb.jobs`).
        protocol: a protocol name (``chandy-lamport``, ``abs``, ``abs-cyclic``,
            ``synchronous``, ``at-least-once``, ``unaligned``, ``abs-timeout``, ``none``) or
            object.
        checkpoint_interval: steps between periodic checkpoints (the schedulers trigger
            them when due); None for checkpoints only on request.
        max_checkpoints: stop triggering after this many (exhaustive exploration).
        allow_deadlock: run ABS Algorithm 1 on a cyclic graph anyway.
        alignment_timeout: with ``abs``, switch to unaligned at a task whose alignment has
            lasted this many steps (protocol ``abs-timeout``, Flink's aligned checkpoint
            timeout).
        checkpoint_timeout: abort a checkpoint still pending this many steps after its
            trigger (Flink's checkpoint timeout); None: never.
        min_pause: steps after a completed checkpoint before the next periodic trigger.
        max_concurrent: checkpoints pending at once (default: the protocol's; None: no
            limit).
        notify_steps: deliver notify-checkpoint-complete to each task as a step of its own
            (:class:`~absnb.sim.actions.Notify`) rather than with the completing step; by
            default when a sink writes to an external system (``Operator.external``).
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
        self._s = _Static(job, proto, max_checkpoints, notify_steps)
        graph = job.graph
        self.tasks: dict[TaskId, StreamTask] = {t: StreamTask(graph, t, proto) for t in graph.tasks}
        self.channels: dict[ChannelId, deque[OnChannel]] = {c: deque() for c in graph.channels}
        self.blocked: set[ChannelId] = set()
        self.inputs: dict[TaskId, tuple[Any, ...]] = {
            t: tuple(job.inputs.get(t, ())) for t in self._s.emitters
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
        self.aligning: dict[TaskId, int] = {}
        """The step at which each task now aligning blocked its first input (protocols with
        an alignment timeout)."""
        self._own: set[object] = {*self.tasks, *self.channels}

    # -- copy on write ---------------------------------------------------------------------
    def writable_task(self, t: TaskId) -> StreamTask:
        """Task ``t``, ready to be changed (copied first if a clone still shares it)."""
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

    # -- read access -----------------------------------------------------------------------
    @property
    def job(self) -> Job:
        return self._s.job

    @property
    def graph(self) -> ExecutionGraph:
        return self._s.graph

    @property
    def protocol(self) -> SnapshotProtocol:
        return self._s.protocol

    @property
    def checkpoint_interval(self) -> int | None:
        """Steps between periodic checkpoints (None: only on request)."""
        interval = self.coordinator.interval
        return None if interval is None else int(interval)

    @property
    def max_checkpoints(self) -> int | None:
        """The most checkpoints this run triggers (None: no limit)."""
        return self._s.max_checkpoints

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
        """The job's output so far (see :meth:`Job.output`)."""
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
        return any(self.tasks[t].offset < len(self.inputs[t]) for t in self._s.emitters)

    def uncommitted(self) -> int:
        """Sink transactions not yet committed to their external systems."""
        tasks, graph = self.tasks, self.graph
        return sum(graph.function(t).uncommitted(tasks[t].state) for t in self._s.sinks)

    def needs_final_checkpoint(self) -> bool:
        """True when the input is consumed and the channels are empty, but sinks still hold
        uncommitted output: a last checkpoint commits it (Flink's final checkpoint)."""
        return (
            self.failed is None
            and not self.notices
            and not self.coordinator.pending
            and all(not q for q in self.channels.values())
            and not self.input_remaining()
            and self.can_trigger()
            and self.uncommitted() > 0
        )

    def is_finished(self) -> bool:
        """All input consumed, every channel empty and every notification delivered."""
        return (
            self.failed is None
            and not self.notices
            and all(not q for q in self.channels.values())
            and all(self.tasks[t].offset >= len(self.inputs[t]) for t in self._s.emitters)
        )

    # -- enabled actions -------------------------------------------------------------------
    def enabled_actions(self, *, crashes: bool = False) -> list[Action]:
        """The actions that can happen now, in a fixed order: deliveries by channel, emits
        by task, then a checkpoint trigger, then (with ``crashes``) a crash of each task."""
        s = self._s
        if self.failed is not None:
            return [Recover("full"), Recover("partial")]
        blocked, tasks = self.blocked, self.tasks
        acts: list[Action] = []
        check_replay = self.replaying > 0
        for c, q in self.channels.items():
            if q and c not in blocked and (not check_replay or self._replay_allows(c, q[0])):
                acts.append(s.deliver[c])
        inputs, waits = self.inputs, s.waits
        for t in s.emitters:
            task = tasks[t]
            if (
                not task.halted
                and task.offset < len(inputs[t])
                and (not task.replay or task.replay[0] is None)
                and (t not in waits or waits[t](task.state, inputs[t][task.offset]) is None)
            ):
                acts.append(s.emit[t])
        for t, pending in self.notices.items():
            acts.append(Notify(t, pending[0]))
        if self.aligning and not acts:
            acts.append(WAIT)
        if self.can_trigger():
            acts.append(s.trigger)
        if crashes:
            acts.extend(Crash(t) for t in s.graph.tasks)
        return acts

    def progress_actions(self) -> list[Action]:
        """The enabled deliveries, emits and notifications: the run is over when there are
        none."""
        return [a for a in self.enabled_actions() if type(a) in (Deliver, Emit, Notify, Wait)]

    def _replay_allows(self, channel: ChannelId, head: OnChannel) -> bool:
        replay = self.tasks[channel.dst].replay
        return not replay or type(head) is not Record or replay[0] == channel

    def can_trigger(self) -> bool:
        """True when the coordinator may start a checkpoint now."""
        s = self._s
        return (
            self.failed is None
            and self.replaying == 0
            and self.coordinator.can_trigger()
            and (s.max_checkpoints is None or self.coordinator.next_id <= s.max_checkpoints)
        )

    def is_enabled(self, action: Action) -> bool:
        """True when ``action`` can be applied now."""
        return self._why_not(action) is None

    def _why_not(self, action: Action) -> str | None:
        return why_not(self, action)

    # -- applying actions ------------------------------------------------------------------
    def apply(self, action: Action, *, checked: bool = False) -> Event:
        """Perform ``action`` and return what happened; ``checked``: the caller took it
        from :meth:`enabled_actions` of this very state, so it is not checked again.

        Raises:
            ActionNotEnabledError: the action is not enabled now; the message says why and
                lists what is.
        """
        why = None if checked else self._why_not(action)
        if why is not None:
            options = ", ".join(str(a) for a in self.enabled_actions()) or "nothing"
            refused = type(action) is Transfer and why.startswith("account ")
            raise (TransferRefusedError if refused else ActionNotEnabledError)(
                f"cannot {action} at step {self.clock}: {why}. Enabled now: {options}"
            )
        event = steps.perform(self, action)
        self._expire_and_time_out(action, event)
        if type(action) is TriggerCheckpoint or type(event.message) is EndOfInput:
            modes.ended_tasks_join(self, event)
        self.clock += 1
        return event

    def _expire_and_time_out(self, action: Action, event: Event) -> None:
        """At the end of each step: abort the checkpoints pending longer than the checkpoint
        timeout, and switch the tasks aligning longer than the alignment timeout to
        unaligned."""
        coordinator = self.coordinator
        if coordinator.timeout is not None and coordinator.pending:
            effects.abort(self, coordinator.expire(self.clock), event)
        if self._s.alignment_timeout is not None and (
            self.aligning or event.blocked or type(action) is TriggerCheckpoint
        ):
            modes.alignment_timeouts(self, event)

    # -- value semantics -------------------------------------------------------------------
    def clone(self) -> World:
        """An independent copy; applying actions to it leaves this world unchanged."""
        new = World.__new__(World)
        new._s = self._s
        # Copy on write: both worlds share every task and channel until they change it.
        new.tasks = dict(self.tasks)
        new.channels = dict(self.channels)
        new._own = set()
        self._own = set()
        new.blocked = set(self.blocked)
        new.inputs = dict(self.inputs)
        new.coordinator = self.coordinator.clone()
        new.clock = self.clock
        new.failed = self.failed
        new.replaying = self.replaying
        new.notices = dict(self.notices)
        new.aligning = dict(self.aligning)
        return new

    def key(self, *, recovery: bool = True) -> tuple[Any, ...]:
        """A hashable value equal for worlds whose futures are the same.

        The clock and history (trace, completed and aborted lists, when checkpoints were
        taken) are left out, so different interleavings reaching the same state compare
        equal. The parts acknowledged to pending checkpoints count (they make up the next
        snapshot). With ``recovery`` (the default) it includes what a recovery would read
        (:func:`~absnb.sim.recovery.recovery_key`); the explorer leaves that out when no
        crash can happen.
        """
        return (
            tuple(task.key() for task in self.tasks.values()),
            tuple(tuple(q) for q in self.channels.values()),
            frozenset(self.blocked),
            self.coordinator.key(self.clock),
            acknowledged_key(self),
            self.failed,
            tuple(len(v) for v in self.inputs.values()),
            tuple(sorted(self.notices.items())),
            tuple(sorted((t, self.clock - s) for t, s in self.aligning.items())),
            recovery_key(self) if recovery else None,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, World):
            return NotImplemented
        return self._s.graph.fingerprint == other._s.graph.fingerprint and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return (
            f"<World {self.graph.name} {self.protocol.name} step={self.clock} "
            f"in_transit={sum(len(q) for q in self.channels.values())} "
            f"checkpoints={len(self.coordinator.completed)}>"
        )
