"""absnb: distributed snapshots you can step through and measure.

Chandy-Lamport, ABS for acyclic graphs (Algorithm 1) and cyclic graphs (Algorithm 2), a
synchronous baseline, recovery, and exactly-once checks, as sans-IO protocols driven by a
deterministic simulator (and, in :mod:`absnb.runtime`, by PySpark).

Example:
    >>> import absnb
    >>> world = absnb.World(absnb.word_count(), "abs", checkpoint_interval=5)
    >>> stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=1))
    >>> _ = stepper.run()
    >>> stepper.world.is_finished(), absnb.exactly_once(stepper.world)
    (True, True)
"""

from absnb.core.errors import (
    AbsnbError,
    ActionNotEnabledError,
    CyclicGraphError,
    FailureNotFiredWarning,
    GraphError,
    ProtocolError,
    SnapshotMismatchError,
    TraceFormatError,
    UnknownJobError,
    UnknownProtocolError,
)
from absnb.core.graph import (
    Broadcast,
    ExecutionGraph,
    Forward,
    Hash,
    JobGraph,
    Rebalance,
)
from absnb.core.ids import ChannelId, TaskId
from absnb.core.messages import CancelCheckpointMarker, CheckpointBarrier, Marker, Record
from absnb.core.snapshot import GlobalSnapshot, TaskSnapshot
from absnb.harness import TaskHarness
from absnb.i18n import get_language, set_language
from absnb.jobs import Job, bank_transfer, build_job, cyclic, word_count
from absnb.protocols import PROTOCOLS, CheckpointCoordinator, get_protocol
from absnb.sim import (
    Crash,
    Deadlock,
    DeclineCheckpoint,
    Deliver,
    Emit,
    EndInput,
    Event,
    Exploration,
    ManualScheduler,
    Notify,
    RandomScheduler,
    Recover,
    RoundRobinScheduler,
    ScriptedScheduler,
    Stepper,
    Transfer,
    TriggerCheckpoint,
    World,
    exactly_once,
    explore,
    find_deadlock,
    reference_output,
    snapshot_problems,
    world_problems,
)

__version__ = "0.1.0"

__all__ = [
    "PROTOCOLS",
    "AbsnbError",
    "ActionNotEnabledError",
    "Broadcast",
    "CancelCheckpointMarker",
    "ChannelId",
    "CheckpointBarrier",
    "CheckpointCoordinator",
    "Crash",
    "CyclicGraphError",
    "Deadlock",
    "DeclineCheckpoint",
    "Deliver",
    "Emit",
    "EndInput",
    "Event",
    "ExecutionGraph",
    "Exploration",
    "FailureNotFiredWarning",
    "Forward",
    "GlobalSnapshot",
    "GraphError",
    "Hash",
    "Job",
    "JobGraph",
    "ManualScheduler",
    "Marker",
    "Notify",
    "ProtocolError",
    "RandomScheduler",
    "Rebalance",
    "Record",
    "Recover",
    "RoundRobinScheduler",
    "ScriptedScheduler",
    "SnapshotMismatchError",
    "Stepper",
    "TaskHarness",
    "TaskId",
    "TaskSnapshot",
    "TraceFormatError",
    "Transfer",
    "TriggerCheckpoint",
    "UnknownJobError",
    "UnknownProtocolError",
    "World",
    "bank_transfer",
    "build_job",
    "cyclic",
    "exactly_once",
    "explore",
    "find_deadlock",
    "get_language",
    "get_protocol",
    "reference_output",
    "set_language",
    "snapshot_problems",
    "word_count",
    "world_problems",
]
