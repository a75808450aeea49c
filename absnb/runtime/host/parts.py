"""What a host is made of (:class:`HostParts`): its tasks, restored from the latest completed
checkpoint of the plan's job, and what it keeps beside them (local queues, checkpoint
storage and the snapshot writer, the event log, alignments, announced barriers, injected
failures, source pacing, its inbox and outbox, its counters), made from its
:class:`~absnb.runtime.plan.HostPlan` and joined to the data and control planes. The loop
that runs them is :class:`~absnb.runtime.host.host.Host`'s; what it carries out, one table
each, :mod:`absnb.runtime.host.carry_out`'s."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.protocols import get_protocol
from absnb.runtime.control_plane.client import ControlClient
from absnb.runtime.control_plane.messages import Command
from absnb.runtime.data_plane.transport import DataPlane
from absnb.runtime.events.log import EventLog
from absnb.runtime.failures import Injections, declines
from absnb.runtime.host.alignment import Alignments
from absnb.runtime.host.announce import Announcements
from absnb.runtime.host.connect import connect_channels, open_planes
from absnb.runtime.host.inbox import Inbox
from absnb.runtime.host.outbox import Outbox
from absnb.runtime.host.pacing import SourcePacing
from absnb.runtime.host.restore import restore
from absnb.runtime.host.snapshot_writer import SnapshotWriter
from absnb.runtime.plan import HostPlan, terminates_by_quiescence
from absnb.task import StreamTask


class HostParts:
    """The tasks of one :class:`~absnb.runtime.plan.HostPlan` and what a host keeps beside
    them; :meth:`open` joins them to the planes."""

    _deliver: Callable[[ChannelId, Any, ControlClient], None]
    net: DataPlane
    client: ControlClient
    outbox: Outbox

    def __init__(self, plan: HostPlan) -> None:
        from absnb.runtime.storage.checkpoints import CheckpointStorage

        self.plan = plan
        self.graph = graph = plan.job.graph
        protocol = get_protocol(
            plan.protocol,
            graph,
            allow_deadlock=plan.allow_deadlock,
            alignment_timeout=plan.alignment_timeout,
        )
        self.local = set(plan.tasks)
        # Every task restarts from a checkpoint here: no consumption order to keep.
        self.tasks = {t: StreamTask(graph, t, protocol, history=False) for t in plan.tasks}
        for t, task in self.tasks.items():  # a failure spec's declines (StreamTask.declines)
            task.declines = declines(plan.failures, plan.attempt, str(t))
            task.columnar = plan.columnar
        if plan.columnar and any(o.function.emits_columns() for o in graph.operators.values()):
            load_columns()  # as it sets up, not at the first batch (idle_seconds, pacing)
        self.storage = CheckpointStorage(plan.storage_url, write_latency=plan.storage_latency)
        self.writer = SnapshotWriter(self.storage, plan.job_id)
        self.queues: dict[ChannelId, deque[Any]] = {
            c: deque() for t in plan.tasks for c in graph.inputs[t] if c.src in self.local
        }
        restoring = time.monotonic()
        self.log = EventLog(plan, self.tasks)
        # channel state of channels from other hosts, delivered before what they bring
        self.refill = restore(plan, self.storage, self.tasks, self.queues, self.log)
        self.finished: set[TaskId] = set()
        self.ended = False
        """Whether the host told the coordinator that its tasks have all finished
        (:class:`~absnb.runtime.control_plane.messages.Ended`): it waits for ``Finish``."""
        self.notified: CheckpointId = 0  # the newest notification carried out this attempt
        self.consumed: dict[TaskId, int] = dict.fromkeys(plan.tasks, 0)
        self.aligning = Alignments(self.queues)  # where a channel is blocked (alignment.py)
        self.blocked = self.aligning.blocked  # the local channels held back now
        self.clock: Callable[[], float] = time.monotonic  # the alignment timer's
        self.injected = Injections(plan.failures, plan.attempt, self.log.on_fire)
        self.overtake = protocol.barriers_overtake  # barriers take the priority lane
        self.announced = Announcements(self.tasks)  # announced barriers
        self.announce = self.announced.timed and not self.overtake
        self.split = self.overtake or self.announce  # priority events between pieces
        self.inbox = Inbox()
        self.sources = [t for t in plan.tasks if graph.kind(t) in ("source", "process")]
        self.metrics: dict[str, Any] = {"records_in": 0, "records_out": 0, "checkpoints": []}
        self.cpu_started = time.process_time()  # the CPU the host costs (its threads too)
        if plan.attempt > 0:  # reading the checkpoint and restoring every task from it
            self.metrics["restore_seconds"] = time.monotonic() - restoring
        self.quiescence = terminates_by_quiescence(graph)
        self.early: list[Command] = []  # commands that came while the host was connecting
        self.pacing = SourcePacing(plan)

    def open(self) -> tuple[DataPlane, ControlClient]:
        """Open the data and control planes (:func:`~.connect.open_planes`) and
        :meth:`attach` them."""
        net, client = open_planes(self.plan)
        self.attach(net, client)
        return net, client

    def attach(self, net: DataPlane, client: ControlClient) -> None:
        """Send and hear through ``net`` and ``client`` from now on."""
        self.net = self.aligning.net = net
        self.client = self.log.client = client
        self.outbox = Outbox(
            self.local,
            self.queues,
            net,
            overtake=self.overtake,
            announced=self.announced if self.announce else None,
            deliver=lambda c, m: self._deliver(c, m, client),
            tally=self._tally,
            clock=lambda: self.clock(),
        )

    def connect(self, check: Callable[[], None]) -> None:
        """Connect every channel to and from the other hosts
        (:func:`~.connect.connect_channels`), calling ``check`` while it waits."""
        connect_channels(self.plan, self.net, self.client, check)

    def _count(self, t: TaskId, n: int) -> None:
        """``t`` consumed ``n`` more records (a failure injected after so many fires)."""
        total = self.consumed[t] = self.consumed[t] + n
        self.injected.after_records(str(t), total)

    def _tally(self, counter: str, by: float = 1) -> None:
        self.metrics[counter] = self.metrics.get(counter, 0) + by


COLUMN_MODULES = (
    "pandas",  # pyarrow imports it at its first conversion from or to NumPy
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.ipc",
    "pyarrow.pandas_compat",
    "pyarrow.vendored.version",
    "absnb.core.vector_hash",
    "absnb.operators.columnar",
)
"""What columnar batches import: Arrow, NumPy and the kernels, and pandas, which pyarrow
imports at its first conversion from or to NumPy (``pa.array``, ``to_numpy``): some 2 s
of CPU in a fresh process. Spark's daemon imports them before it forks its workers
(:mod:`absnb.runtime.spark.daemon`)."""


def load_columns() -> None:
    """Import :data:`COLUMN_MODULES` (nothing to do in a worker forked from absnb's daemon)
    as the host sets up, and not at its first batch, where a fresh worker's imports held a
    paced host busy for its first second; and keep Arrow to one thread."""
    import importlib

    for name in COLUMN_MODULES:
        importlib.import_module(name)
    import pyarrow

    pyarrow.set_cpu_count(1)  # a host is one Spark task slot: no pool of Arrow threads
