"""The ABS lab's base class: what a student's Algorithm 1 subclasses, and the protocol that
runs it.

A student writes the two decisions of ABS Algorithm 1 at one task, as effects
(:mod:`absnb.core.effects`):

- :meth:`AbsHandler.waiting_for_more`: a barrier arrived and barriers of the same checkpoint
  are still missing on other inputs (Alg. 1, lines 7-9);
- :meth:`AbsHandler.all_arrived`: the last barrier arrived (lines 10-15).

The base class does the bookkeeping every aligning protocol of the package shares
(:class:`~absnb.protocols.aligning.AligningHandler`): the named states, which inputs a
checkpoint waits for (the paper's Nil input at a source, less the inputs that ended),
stale barriers, subsumption by a newer checkpoint, the coordinator's abort, clone and key.
:class:`LabProtocol` makes a handler of the student's class for every task, so the
simulator, the explorer and the one-task harness run the student's code.
"""

from __future__ import annotations

import copy
import linecache
import os
import sysconfig
import traceback
from collections.abc import Callable, Sequence
from functools import partial
from typing import ClassVar

from absnb.core.effects import (
    Acknowledge,
    Block,
    BroadcastEvent,
    Decline,
    Effect,
    SnapshotState,
    Unblock,
)
from absnb.core.errors import ProtocolError
from absnb.core.graph import ExecutionGraph
from absnb.core.ids import ChannelId, CheckpointId, TaskId
from absnb.core.messages import Record, RecordBatch
from absnb.protocols.aligned import AlignedProtocol
from absnb.protocols.aligning import (
    AligningHandler,
    CollectingBarriers,
    InProgress,
    WaitingForFirstBarrier,
)
from absnb.protocols.base import NO_EFFECTS, SnapshotProtocol, task_handler_args

LAB_EFFECTS = (Block, Unblock, BroadcastEvent, SnapshotState, Acknowledge, Decline)
"""The effects an ABS handler may return."""


class LabError(ProtocolError):
    """A student's handler broke the lab's rules (returned something that is not a list of
    effects, or an effect the runtime cannot carry out): the message says what to change."""


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_OURS = (_PACKAGE + os.sep, sysconfig.get_paths()["stdlib"] + os.sep)


def student_line(error: BaseException) -> tuple[str, int, str] | None:
    """Where in the student's code ``error`` was raised: the file, line and function of the
    innermost frame of its traceback outside absnb, Python's library and generated code
    (``<string>``, a dataclass's methods) (None: absnb raised it)."""
    found = None
    for frame, line in traceback.walk_tb(error.__traceback__):
        path = frame.f_code.co_filename
        if not (path.startswith("<") or os.path.abspath(path).startswith(_OURS)):
            found = (path, line, frame.f_code.co_name)
    return found


def raised_text(call: str, error: Exception) -> str:
    """``call raised Error: message``, and where in the student's code (not for a
    NotImplementedError: that is a decision not written yet, which its message says)."""
    where = None if isinstance(error, NotImplementedError) else student_line(error)
    text = f"{call} raised {type(error).__name__}: {error}"
    return text + (f" ({say_where(where)})" if where else "")


def say_where(where: tuple[str, int, str]) -> str:
    """``line 12 of handlers.py, in all_arrived: return [Block(c)]`` (with the code where
    the file can be read)."""
    path, line, function = where
    code = linecache.getline(path, line).strip()
    # a notebook cell's code is compiled from a file such as /tmp/ipykernel_42/1234.py
    place = "its cell" if "ipykernel_" in path else os.path.basename(path)
    return f"line {line} of {place}, in {function}" + (f": {code}" if code else "")


def located(error: BaseException, task: TaskId | str, call: str) -> None:
    """Mark ``error``, raised by the student's decision ``call`` at ``task``, with that call
    (``error.student_call``), where it was raised (``error.student_line``) and a note
    saying both, so that a report far from its traceback (a Spark executor's, which
    pickling drops) still shows the student's line."""
    if getattr(error, "student_call", None) is not None:
        return
    where = student_line(error)
    try:  # read by the labs' part d (absnb.labs.spark)
        error.student_call = f"{call} at {task}"  # type: ignore[attr-defined]
        error.student_line = where  # type: ignore[attr-defined]
    except AttributeError:  # an exception with __slots__
        return
    add_note = getattr(error, "add_note", None)  # Python 3.11
    if add_note is not None:
        add_note(f"raised by {call} at {task}" + (f", {say_where(where)}" if where else ""))


class AbsHandler(AligningHandler):
    """ABS Algorithm 1 at one task, with its two decisions left to a subclass.

    A subclass implements :meth:`waiting_for_more` and :meth:`all_arrived`; each returns
    the list of effects the task carries out, in order, before it consumes anything else.
    The effects are those of :mod:`absnb.core.effects`: ``Block(channel)``,
    ``Unblock(channel)``, ``BroadcastEvent(CheckpointBarrier(n))`` (send the barrier on every
    output), ``SnapshotState(n)`` (copy the task's state as its part of checkpoint ``n``)
    and ``Acknowledge(n)`` (report that part to the coordinator; only after its snapshot).

    Attributes:
        task: the task this handler runs at.
        inputs: the task's input channels, in order.
        expected: the inputs whose barriers a checkpoint waits for (the paper's Nil input,
            ``None``, at a source, where the coordinator injects the barrier); an input that
            ended is no longer expected.
        state: ``WaitingForFirstBarrier()``, or ``CollectingBarriers(checkpoint_id,
            received)``: the inputs a barrier of the checkpoint has arrived on.
    """

    __slots__ = ("fault",)

    catches: ClassVar[bool] = False
    """Whether an exception raised by a decision is kept in :attr:`fault` (the task then
    does nothing) rather than raised: the lab's checks set it, so that the explorer finds
    the shortest run that reaches it."""

    algorithm: ClassVar[str] = "ABS"
    """The algorithm the decisions are of, in the messages of
    :class:`~absnb.labs.handler.LabError`."""
    allowed_effects: ClassVar[tuple[type, ...]] = LAB_EFFECTS
    """The effects a decision may return."""
    effect_names: ClassVar[str] = (
        "Block, Unblock, BroadcastEvent(CheckpointBarrier(n)), SnapshotState and Acknowledge"
    )
    """:attr:`allowed_effects` as a student writes them."""

    def __init__(
        self,
        task: TaskId,
        inputs: tuple[ChannelId, ...],
        loop_inputs: frozenset[ChannelId],
        initiator: bool,
    ) -> None:
        super().__init__(task, inputs, loop_inputs, initiator)
        self.fault: str | None = None
        """What a decision raised, when :attr:`catches` (None: nothing)."""

    # -- what a student writes -------------------------------------------------------------
    def waiting_for_more(self, n: CheckpointId, channel: ChannelId) -> Sequence[Effect]:
        """The barrier of checkpoint ``n`` arrived on input ``channel``, and barriers of ``n``
        are still missing on other inputs (Alg. 1, lines 7-9). Return the effects."""
        raise NotImplementedError(
            f"{type(self).__name__}.waiting_for_more(n, channel) is not written yet: return "
            "what the task does when the barrier of checkpoint n arrives on channel and other "
            "inputs still wait for theirs (Alg. 1, lines 7-9)"
        )

    def all_arrived(self, n: CheckpointId, blocked: tuple[ChannelId, ...]) -> Sequence[Effect]:
        """The last barrier of checkpoint ``n`` arrived (or the coordinator triggered ``n``
        at this source, or the last input still waited for ended): Alg. 1, lines 10-15.
        ``blocked``: the inputs whose barrier of ``n`` arrived earlier, in input order (those
        :meth:`waiting_for_more` was called for). Return the effects."""
        raise NotImplementedError(
            f"{type(self).__name__}.all_arrived(n, blocked) is not written yet: return what "
            "the task does when barriers of checkpoint n have arrived on every input "
            "(Alg. 1, lines 10-15)"
        )

    # -- the bookkeeping around them -------------------------------------------------------
    def _barrier(
        self,
        state: WaitingForFirstBarrier | CollectingBarriers | InProgress,
        channel: ChannelId | None,
        n: CheckpointId,
        overtaken: tuple[Record | RecordBatch, ...],
        late: bool,
        effects: list[Effect],
    ) -> Sequence[Effect]:
        """A barrier that is not stale, after the base gave up an older checkpoint: record
        it in the named state, then ask the student's decision."""
        if not isinstance(state, WaitingForFirstBarrier | CollectingBarriers):
            raise ProtocolError(f"ABS Algorithm 1 has no state {state!r}")
        collecting = state.barrier_received(n, channel)
        if collecting.aligned(self.expected):
            return self._complete(collecting, channel, effects)
        self.state = collecting
        if channel is not None:  # the Nil input (a trigger) is never blocked
            asked = partial(self.waiting_for_more, n, channel)
            effects.extend(self._asked("waiting_for_more", n, str(channel), asked))
        return effects

    def _complete(
        self, collecting: CollectingBarriers, last: ChannelId | None, effects: list[Effect]
    ) -> list[Effect]:
        n = collecting.checkpoint_id
        self._finish(n)
        earlier = tuple(c for c in self.inputs if c in collecting.received and c != last)
        asked = partial(self.all_arrived, n, earlier)
        effects.extend(self._asked("all_arrived", n, _names(earlier), asked))
        return effects

    def on_end_of_input(self, channel: ChannelId) -> Sequence[Effect]:
        """An ended input counts as aligned for this and every later checkpoint (FLIP-147),
        which may complete the alignment in progress (then :meth:`all_arrived`)."""
        self.expected = self.expected - {channel}
        state = self.state
        if isinstance(state, CollectingBarriers) and state.aligned(self.expected):
            return self._complete(state, None, [])
        return NO_EFFECTS

    def _asked(
        self, hook: str, n: CheckpointId, arg: str, asked: Callable[[], object]
    ) -> list[Effect]:
        """The effects the student's decision ``hook`` (called as ``asked()``, with
        checkpoint ``n`` and ``arg``) returns, checked; what it raised is kept in
        :attr:`fault` when the class :attr:`catches`."""
        try:
            return self._checked(hook, asked())
        except Exception as e:
            if not self.catches:
                located(e, self.task, f"{hook}({n}, {arg})")
                raise
            self.fault = raised_text(f"{hook}({n}, {arg})", e)
            return []

    def _checked(self, hook: str, result: object) -> list[Effect]:
        """``result`` of the student's ``hook``: a list (or tuple) of effects, each
        acknowledgement after its snapshot."""
        if not isinstance(result, list | tuple):
            raise LabError(
                f"{type(self).__name__}.{hook} returned {result!r:.60}, not a list of effects: "
                "return a list, e.g. [Block(channel)] (an empty list does nothing)"
            )
        for e in result:
            if not isinstance(e, self.allowed_effects):
                raise LabError(
                    f"{type(self).__name__}.{hook} returned {e!r:.60} in its list, which is no "
                    f"effect of {self.algorithm}: use {self.effect_names}"
                )
        for i, e in enumerate(result):
            if type(e) is Acknowledge and not self._taken(e.checkpoint_id, result[:i]):
                raise LabError(
                    f"{type(self).__name__}.{hook} acknowledged checkpoint {e.checkpoint_id} "
                    f"without taking its snapshot first: put SnapshotState({e.checkpoint_id}) "
                    "before Acknowledge in the list"
                )
        return list(result)

    def _taken(self, n: CheckpointId, before: Sequence[object]) -> bool:
        """Whether the snapshot of ``n`` is taken by the time of an effect preceded by
        ``before`` in its list (Alg. 1: in the same list)."""
        return SnapshotState(n) in before

    # -- views and value semantics ---------------------------------------------------------
    def describe(self) -> str:
        state = self.state
        if isinstance(state, CollectingBarriers):
            got = len([c for c in state.received if c is not None])
            return f"aligning checkpoint {state.checkpoint_id} ({got}/{len(self.inputs)} barriers)"
        return "waiting for first barrier"

    def clone(self) -> AbsHandler:
        """A copy; attributes a subclass keeps without ``__slots__`` are copied too."""
        new = super().clone()
        assert isinstance(new, AbsHandler)  # AligningHandler.clone makes type(self)
        extra = getattr(self, "__dict__", None)
        if extra:
            new.__dict__.update(copy.deepcopy(extra))
        return new

    def key(self) -> object:
        """The base's key, the fault, and a subclass's own attributes (by their text)."""
        extra = getattr(self, "__dict__", None)
        own = tuple(sorted((k, repr(v)) for k, v in extra.items())) if extra else ()
        return (super().key(), self.fault, own)


def _names(channels: tuple[ChannelId, ...]) -> str:
    """``channels`` as a tuple is written, by their names."""
    return "(" + ", ".join(map(str, channels)) + ("," if len(channels) == 1 else "") + ")"


class LabProtocol(SnapshotProtocol):
    """ABS Algorithm 1 with a student's handler class at every task (the capabilities and
    the graph check of :class:`~absnb.protocols.aligned.AlignedProtocol`).

    Args:
        handler_class: a subclass of :class:`~absnb.labs.handler.AbsHandler` (or any
            aligning handler, such as the package's own
            :class:`~absnb.protocols.aligned.AlignedBarrierHandler`).
        catch: keep what a decision raises in the handler's ``fault`` instead of raising it
            (the lab's checks look for it after every step).
    """

    name = "abs-lab"
    title = "ABS (Algorithm 1), the lab's handler"
    short_title = "the lab's ABS Algorithm 1"
    without_channel_state = AlignedProtocol.without_channel_state

    def __init__(self, handler_class: type[AligningHandler], *, catch: bool = False) -> None:
        self.student_class = handler_class
        self.handler_class: type[AligningHandler] = (
            type(handler_class.__name__, (handler_class,), {"__slots__": (), "catches": True})
            if catch
            else handler_class
        )

    def check(self, graph: ExecutionGraph) -> None:
        AlignedProtocol().check(graph)

    def handler(self, graph: ExecutionGraph, task: TaskId) -> AligningHandler:
        return self.handler_class(*task_handler_args(graph, task))

    def __repr__(self) -> str:
        return f"<protocol {self.name}: {self.student_class.__name__}>"
