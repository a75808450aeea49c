"""The control plane's messages between the coordinator (on the driver) and the hosts.

Messages are small frozen dataclasses, pickled (protocol 5) into frames of kind
:data:`FRAME_KIND` (:mod:`absnb.runtime.connections.frames` reads and writes them). Both
sides prove they know the job secret first (the client says :data:`HELLO`, so that a
data-plane peer is refused).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from absnb.core.errors import AbsnbError
from absnb.core.ids import ChannelId, CheckpointId, TaskId

FRAME_KIND = 0x43
"""The frame kind of every control-plane message."""

HELLO = "absnb-control/1"
"""What a control client says in the handshake, so that a data-plane peer is refused."""


class ControlError(AbsnbError, ConnectionError):
    """The control plane failed: the coordinator refused a host, or a connection broke."""


class HostFailure(AbsnbError, RuntimeError):
    """A host failed with an exception that could not travel to the driver as itself."""


# -- messages ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Register:
    """Host -> server, first frame: who the host is and where its data plane listens."""

    host_id: int
    attempt: int
    tasks: tuple[TaskId, ...]
    data_address: tuple[str, int]

    def problem(
        self,
        job: str,
        attempt: int,
        hosts: int,
        registered: Collection[int],
        tasks: Collection[TaskId],
        task_host: Collection[TaskId],
    ) -> str | None:
        """Why the coordinator refuses this registration (None: it accepts it), given the
        current ``attempt`` of ``hosts`` hosts, the hosts ``registered`` so far, the job's
        ``tasks`` and the tasks some host already runs (``task_host``)."""
        if self.attempt != attempt:
            return (
                f"host {self.host_id} registered for attempt {self.attempt} of job {job!r}, "
                f"but the current attempt is {attempt}"
            )
        if self.host_id in registered:
            return f"host {self.host_id} of attempt {self.attempt} has already registered"
        if len(registered) >= hosts:
            return f"all {hosts} hosts of attempt {self.attempt} have already registered"
        unknown = [str(t) for t in self.tasks if t not in tasks]
        taken = [str(t) for t in self.tasks if t in task_host]
        if unknown or taken:
            return (
                f"host {self.host_id} registered tasks that are not tasks of job {job!r} "
                f"({unknown}) or belong to another host ({taken})"
            )
        return None


@dataclass(frozen=True)
class AddressBook:
    """Server -> every host once all hosts of the attempt registered."""

    attempt: int
    hosts: dict[int, tuple[str, int]]
    task_host: dict[TaskId, int]
    restore_checkpoint: CheckpointId
    """The checkpoint every task restores; 0 for none (a fresh start)."""


@dataclass(frozen=True)
class Trigger:
    """Server -> hosts of initiator tasks: start checkpoint ``checkpoint_id`` at ``tasks``."""

    checkpoint_id: CheckpointId
    tasks: tuple[TaskId, ...]


@dataclass(frozen=True)
class Ack:
    """Host -> server: ``task``'s part of a checkpoint is written to storage; or, when
    ``declined`` gives a reason, ``task`` declined the checkpoint (Flink:
    ``DeclineCheckpoint``) and nothing was written; ``write_failed`` when it declined
    because its snapshot could not be written to checkpoint storage (Flink:
    ``CHECKPOINT_ASYNC_EXCEPTION``), a failure the coordinator tolerates only so often
    (``tolerable_failed_checkpoints``)."""

    task: TaskId
    checkpoint_id: CheckpointId
    snapshot_key: str
    state_bytes: int
    alignment_s: float
    metrics: dict[str, object] = field(default_factory=dict)
    declined: str = ""
    write_failed: bool = False


@dataclass(frozen=True)
class Notify:
    """Server -> every host: the checkpoint is complete (its manifest is written)."""

    checkpoint_id: CheckpointId


@dataclass(frozen=True)
class Aborted:
    """Server -> hosts: the checkpoint is aborted (subsumed, or the attempt failed)."""

    checkpoint_id: CheckpointId


@dataclass(frozen=True)
class Finished:
    """Host -> server: every task of the host has finished."""

    host_id: int
    attempt: int
    metrics: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Ended:
    """Host -> server: every task of the host has finished (FLIP-147), and its sinks hold
    ``uncommitted`` output (:func:`absnb.task.uncommitted`) as of checkpoint ``notified``
    (the newest whose notify-checkpoint-complete the host carried out in this attempt; 0:
    none). The host goes on serving triggers, acknowledgements and notifications, and says
    this again after each notification, until the server tells it to :class:`Finish`."""

    host_id: int
    attempt: int
    uncommitted: int
    notified: CheckpointId = 0


@dataclass(frozen=True)
class Failed:
    """Host -> server, its last word: the host failed with ``error`` (its peers hear why).

    ``exception`` is the pickled exception (empty if it does not pickle), so that the
    driver can raise the user's own error; ``setup`` says that the host failed before its
    attempt ran (setting up its tasks, its data plane or its channels). A host that fails
    before it registers sends this on a connection of its own, as its only frame."""

    host_id: int
    attempt: int
    error: str
    exception: bytes = b""
    setup: bool = False


@dataclass(frozen=True)
class Stop:
    """Server -> hosts: stop now, failing (the host's attempt is over, a host of the attempt
    was lost, or the server is stopping); with ``final``, the driver stopped the whole run
    (more checkpoints failed in a row than it tolerates) and raises the error itself, so
    the host ends without failing its Spark task."""

    reason: str = field(default="", compare=False)
    final: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class Probe:
    """Server -> every host: report your counts for termination-detection round ``round``."""

    round: int


@dataclass(frozen=True)
class Report:
    """Host -> server, the answer to :class:`Probe`: whether the host is idle (its own input
    logs consumed, nothing queued locally) and its tasks' records sent and received per
    channel (the channel sequence numbers, restored with the tasks after a failure)."""

    host_id: int
    attempt: int
    round: int
    idle: bool
    sent: dict[ChannelId, int]
    received: dict[ChannelId, int]


@dataclass(frozen=True)
class Terminate:
    """Server -> every host: the job has terminated (quiescence detected); finish now."""


@dataclass(frozen=True)
class Refused:
    """Server -> host, then the connection is closed: why the registration was refused."""

    reason: str


@dataclass(frozen=True)
class Finish:
    """Server -> every host, once every host has :class:`Ended`: the job's final checkpoint
    has completed and the hosts carried out its notification (the sinks committed), or none
    was due; finish now (Flink 1.15: a task exits once its final checkpoint completed)."""


Command = Trigger | Notify | Aborted | Stop | Probe | Terminate | Finish
"""What :meth:`ControlClient.poll <absnb.runtime.control_plane.client.ControlClient.poll>`
returns."""
