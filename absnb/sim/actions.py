"""Actions: everything that can happen next in the simulator, as values.

A scheduler picks one of the enabled actions; a script lists them; a trace file stores
them as JSON objects (see :mod:`absnb.sim.trace`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from absnb.core.errors import InvalidTypeError, InvalidValueError, TransferRefusedError
from absnb.core.ids import ChannelId, TaskId
from absnb.i18n import gettext as _


def _id(action: str, key: str, value: object, kind: type, lookup: str) -> None:
    """Refuse a name where an id is needed: ``Crash("B")`` would never match a task."""
    if not isinstance(value, kind):
        raise InvalidTypeError(
            f"{action}({key}={value!r}): {key} must be a {kind.__name__}, not "
            f"{type(value).__name__}; look a name up with world.graph.{lookup}({value!r})"
        )


@dataclass(frozen=True, slots=True)
class Deliver:
    """Deliver the message at the head of ``channel`` to its receiver."""

    channel: ChannelId

    def __post_init__(self) -> None:
        _id("Deliver", "channel", self.channel, ChannelId, "channel")

    def __str__(self) -> str:
        return _("deliver {channel}").format(channel=self.channel)


@dataclass(frozen=True, slots=True)
class Emit:
    """``task`` consumes the next entry of its own input log (a source emits a record, an
    account makes its next transfer)."""

    task: TaskId

    def __post_init__(self) -> None:
        _id("Emit", "task", self.task, TaskId, "task")

    def __str__(self) -> str:
        return _("{task} emits").format(task=self.task)


@dataclass(frozen=True, slots=True)
class Transfer:
    """Bank: account ``src`` sends ``amount`` to ``dst`` now (appended to its input log)."""

    src: TaskId
    dst: TaskId
    amount: int

    def __post_init__(self) -> None:
        _id("Transfer", "src", self.src, TaskId, "task")
        _id("Transfer", "dst", self.dst, TaskId, "task")
        amount = self.amount
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            kind = "" if isinstance(amount, int) else f", not a {type(amount).__name__}"
            raise TransferRefusedError(
                f"Transfer: account {self.src} cannot send {amount!r} to {self.dst}: an amount "
                f"is a positive whole number, such as 100{kind}"
            )

    def __str__(self) -> str:
        return _("{src} sends {amount:,} to {dst}").format(
            src=self.src, amount=self.amount, dst=self.dst
        )


@dataclass(frozen=True, slots=True)
class TriggerCheckpoint:
    """The coordinator starts the next checkpoint at the initiators, or, for Chandy-Lamport,
    at the named process ``at``."""

    at: TaskId | None = None

    def __post_init__(self) -> None:
        if self.at is not None:
            _id("TriggerCheckpoint", "at", self.at, TaskId, "task")

    def __str__(self) -> str:
        if self.at is None:
            return _("trigger checkpoint")
        return _("trigger checkpoint at {task}").format(task=self.at)


@dataclass(frozen=True, slots=True)
class Crash:
    """``task`` fails: its state is lost and pending checkpoints are aborted."""

    task: TaskId

    def __post_init__(self) -> None:
        _id("Crash", "task", self.task, TaskId, "task")

    def __str__(self) -> str:
        return _("crash {task}").format(task=self.task)


@dataclass(frozen=True, slots=True)
class Notify:
    """The coordinator's notify-checkpoint-complete for ``checkpoint_id`` reaches ``task``.

    A step of its own only in worlds whose sinks commit to an external system (two-phase
    commit), so that a crash can fall between a checkpoint's completion and a commit."""

    task: TaskId
    checkpoint_id: int

    def __post_init__(self) -> None:
        _id("Notify", "task", self.task, TaskId, "task")
        if not isinstance(self.checkpoint_id, int) or self.checkpoint_id < 1:
            raise InvalidValueError(
                f"Notify(checkpoint_id={self.checkpoint_id!r}): a checkpoint id is a whole "
                "number of at least 1"
            )

    def __str__(self) -> str:
        return _("notify {task}: checkpoint {n} complete").format(
            task=self.task, n=self.checkpoint_id
        )


RecoveryMode = Literal["full", "partial"]


@dataclass(frozen=True, slots=True)
class Recover:
    """Restore from the latest completed checkpoint: every task (``full``), or only the
    failed task and its upstream tasks (``partial``)."""

    mode: RecoveryMode = "full"

    def __str__(self) -> str:
        mode = {"full": _("full"), "partial": _("partial")}.get(self.mode, self.mode)
        return _("recover ({mode})").format(mode=mode)


@dataclass(frozen=True, slots=True)
class DeclineCheckpoint:
    """``task`` declines the oldest pending checkpoint it has not acknowledged (Flink:
    ``declineCheckpoint``): the coordinator aborts it and the task sends a cancellation
    barrier downstream."""

    task: TaskId
    reason: str = "declined on request"

    def __post_init__(self) -> None:
        _id("DeclineCheckpoint", "task", self.task, TaskId, "task")

    def __str__(self) -> str:
        return _("{task} declines").format(task=self.task)


@dataclass(frozen=True, slots=True)
class EndInput:
    """The sender of ``channel`` ends it (Flink: ``EndOfPartitionEvent``): its end goes
    behind what is queued, and nothing, barriers included, follows. Enabled once the sender
    has finished: its input log consumed and the end of every input of its own consumed.
    The receiver counts the channel as aligned for every pending and future barrier."""

    channel: ChannelId

    def __post_init__(self) -> None:
        _id("EndInput", "channel", self.channel, ChannelId, "channel")

    def __str__(self) -> str:
        return _("end {channel}").format(channel=self.channel)


@dataclass(frozen=True, slots=True)
class Wait:
    """Time passes with nothing delivered: enabled only while an alignment timer ticks
    (:mod:`absnb.protocols.alignment_timer`) and nothing else can move, so that the
    timeout still fires."""

    def __str__(self) -> str:
        return _("wait")


Action = (
    Deliver
    | Emit
    | Transfer
    | TriggerCheckpoint
    | Notify
    | Crash
    | Recover
    | Wait
    | DeclineCheckpoint
    | EndInput
)
"""Every action the simulator can take, one class per kind (the trace's steps)."""
PROGRESS = (Deliver, Emit, Notify, Wait)
"""Actions that move data; a run is over when none is enabled."""
