"""The operator contract: F_t(S, r) -> (S', D) (paper section 3.2).

An operator object is the user function only; the state it works on is kept by the task
that runs it, so the same operator serves every task of its operator and every runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, cast

from absnb.core.validate import operator_result

if TYPE_CHECKING:
    # A TypeVar with a default (PEP 696): a bare ``Operator`` is an operator whose state
    # type is not known where it is held (a graph holds operators of every state type).
    # typing gains ``default`` in Python 3.13; at run time the default is not needed.
    from typing_extensions import TypeVar

    from absnb.core.columns import Columns
    from absnb.core.ids import TaskId

    S = TypeVar("S", default=Any)
else:
    from typing import TypeVar

    S = TypeVar("S")


class To(NamedTuple):
    """An output sent only along the edge to operator ``target`` (e.g. loop or exit)."""

    target: str
    value: object


def _each(
    step: Callable[[S, object], tuple[S, Sequence[object]]], state: S, items: Sequence[object]
) -> tuple[S, list[object]]:
    """``step`` of each of ``items`` in turn, from ``state``: the last state, all outputs."""
    outs: list[object] = []
    for item in items:
        result = step(state, item)
        if type(result) is not tuple or len(result) != 2 or type(result[1]) not in (list, tuple):
            # step is an operator's bound method (act or act_batch): name its class
            operator = getattr(step, "__self__", step)
            result = operator_result(operator, getattr(step, "__name__", "act"), result)
        state, out = result
        if out:
            outs.extend(out)
    return state, outs


class Operator(Generic[S]):
    """A stateful user function, generic in its state ``S``.

    Subclasses override :meth:`process` (records from input channels) and, for sources and
    processes, :meth:`act` (one entry of the task's own replayable input log).
    ``process`` may update a mutable state in place and return it; ``copy_state`` must then
    copy deeply enough that a snapshot never changes afterwards.

    Records (``value``) and input log entries (``entry``) are the user's values: a subclass
    names their types in its own signatures.
    """

    kind: ClassVar[str] = "operator"
    emits_to: ClassVar[bool] = True
    """False for operators whose outputs are never :class:`~absnb.operators.base.To`: the real
    runtime then routes a batch's outputs without looking for one (a scan of every output)."""
    external: ClassVar[bool] = False
    """True for sinks that write to a system outside the job (the simulator then makes each
    notify-checkpoint-complete a step of its own)."""

    def initial_state(self) -> S:
        """The state before any record (also what recovery without a checkpoint restores).
        By default None, the state of an operator that keeps none (``Operator[None]``)."""
        return cast("S", None)

    def process(self, state: S, value: Any) -> tuple[S, Sequence[object]]:
        """F_t(S, r) -> (S', D): consume one record, return the new state and the outputs."""
        raise NotImplementedError

    def act(self, state: S, entry: Any) -> tuple[S, Sequence[object]]:
        """Consume one entry of the task's own input log (sources and processes)."""
        raise TypeError(f"{type(self).__name__} has no input log of its own")

    def waits(self, state: S, entry: Any) -> str | None:
        """Why the next entry of the task's own input log cannot be consumed yet in
        ``state`` (the simulator then leaves it disabled), or None. By default never."""
        return None

    def process_batch(self, state: S, values: Sequence[Any]) -> tuple[S, list[object]]:
        """:meth:`~absnb.operators.base.Operator.process` of each of ``values`` in turn, outputs
        in order (the real runtime calls this, once per batch). Override it only to do the same
        faster."""
        return _each(self.process, state, values)

    def act_batch(self, state: S, entries: Sequence[Any]) -> tuple[S, list[object]]:
        """:meth:`act` of each of ``entries`` in turn, outputs in order."""
        return _each(self.act, state, entries)

    def process_columns(
        self, state: S, columns: Columns
    ) -> tuple[S, Sequence[object] | Columns] | None:
        """:meth:`process_batch` of the records ``columns`` holds (a columnar batch of the
        real runtime, :mod:`absnb.core.columns`), with the same new state and outputs (as a
        list or as columns); None, before touching ``state``, when this operator has no
        columnar path for them: the task then passes their values as a list to
        :meth:`process_batch`. By default None."""
        return None

    def emits_columns(self) -> bool:
        """Whether :meth:`act_columns` may give columns (the hosts of a job with such an
        operator load Arrow as they set up, not at the first batch). By default False."""
        return False

    def act_columns(self, state: S, entries: Sequence[Any]) -> tuple[S, Columns] | None:
        """:meth:`act_batch` of ``entries`` with its outputs as columns, or None (before
        touching ``state``) when this operator has no columnar path for them. By default
        None."""
        return None

    def copy_state(self, state: S) -> S:
        """A copy that later updates of ``state`` do not change."""
        if isinstance(state, dict | list | set):
            return cast("S", state.copy())  # a container of the same type
        return state

    def freeze(self, state: S) -> object:
        """A hashable value equal for equal states (worlds are compared and hashed)."""
        if isinstance(state, dict):
            try:
                return tuple(sorted(state.items()))
            except TypeError:
                return tuple(sorted(state.items(), key=repr))
        if isinstance(state, list):
            return tuple(state)
        if isinstance(state, set):
            return frozenset(state)
        return state

    def initialize_state(self, task: TaskId, state: S, recovering: bool) -> S:
        """The task starts (``state`` is :meth:`initial_state`) or restarts after a failure
        (``recovering``; ``state`` is restored from a checkpoint, or initial if there was
        none). Flink: ``initializeState``. Returns the state to run with."""
        return state

    def snapshot_state(self, state: S, checkpoint_id: int) -> S:
        """The task takes its snapshot for ``checkpoint_id`` now (Flink: ``snapshotState``);
        returns the state to store, which the task keeps running with."""
        return state

    def notify_checkpoint_complete(self, state: S, checkpoint_id: int) -> S:
        """Checkpoint ``checkpoint_id`` is complete everywhere; returns the new state."""
        return state

    def notify_checkpoint_aborted(self, state: S, checkpoint_id: int) -> S:
        """Checkpoint ``checkpoint_id`` was aborted; returns the new state."""
        return state

    def end_input(self, state: S) -> tuple[S, Sequence[object]]:
        """The task has consumed all of its input (Flink: ``BoundedOneInput.endInput``): its
        input log, if it has one, and the end of every input channel. Returns the final
        state and the last outputs (a final count, a window closed at the end), sent before
        the end of every output. The task calls it once, in every runtime
        (:meth:`~absnb.task.StreamTask.end_input`)."""
        return state, ()

    def uncommitted(self, state: S) -> int:
        """Output not yet visible outside the job (a transactional sink's open and pending
        transactions); a final checkpoint at the end of the input commits it."""
        return 0

    def output(self, states: Sequence[S]) -> Sequence[object]:
        """A sink's output, from the states of its tasks (by default each state is the list
        of records it collected); sinks writing to an external system read it there."""
        return [v for state in states for v in cast("Iterable[object]", state)]

    def describe(self) -> str:
        """A short name for views."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


_REPLACES = {"process_columns": ("process", "process_batch"), "act_columns": ("act", "act_batch")}


_PATHS: dict[tuple[type, str], bool] = {}


def columnar_path(fn: Operator[Any], method: str) -> bool:
    """Whether operator ``fn``'s ``method`` (``process_columns`` or ``act_columns``) still
    does what the per-record methods it replaces do: no class below the one defining it
    overrides them (a user's subclass of ``KeyedCount`` with its own ``process_batch`` keeps
    the per-record path). Worked out once per class."""
    cls = type(fn)
    holds = _PATHS.get((cls, method))
    if holds is None:

        def owner(name: str) -> type:
            return next(c for c in cls.__mro__ if name in vars(c))

        defined = owner(method)
        holds = all(issubclass(defined, owner(name)) for name in _REPLACES[method])
        _PATHS[cls, method] = holds
    return holds
