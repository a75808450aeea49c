"""Cuts through a run, and which side of a cut every message lies on.

A cut gives every task one point on the time axis: the moment its state was recorded
(Chandy and Lamport 1985, section 3: a global state is a set of process states and
channel states; the cut is where each process's state was taken). An event of a task lies
*before* the cut when it happened before that point, *after* it otherwise. A message then
falls in one of four classes:

- ``before``: sent and received before the cut (its effect is inside the recorded states);
- ``after``: sent after the cut (it is not part of the snapshot at all);
- ``channel state``: sent before the cut and received after it (or not yet received): it
  must be in the recorded state of its channel;
- ``offending``: received before the cut but sent after it. A cut with such a message is
  inconsistent (Chandy and Lamport, section 3: a consistent global state has no message
  recorded as received that is not recorded as sent).

A task that recorded its state at step ``s`` sits at ``s``: the message it received in
that step (the marker, the last barrier) is before the cut, what it sent in that step (its
own markers or barriers) after. A cut composed by hand (:meth:`Cut.before <absnb.views.Cut.before>`)
sits between two steps.

Example:
    >>> import absnb
    >>> from absnb.views.timeline import message_arrows
    >>> job = absnb.bank_transfer()
    >>> A, B = job.graph.task("A"), job.graph.task("B")
    >>> s = absnb.Stepper(absnb.World(job, "chandy-lamport"))
    >>> for action in [absnb.Transfer(A, B, 1000), absnb.Deliver(job.graph.channel("A->B"))]:
    ...     _ = s.step(action)
    >>> cut = Cut.before({A: 0, B: 2}, label="A before it sent, B after it received")
    >>> [classify(a, cut) for a in message_arrows(s.trace, s.world)]
    ['offending']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from absnb.core.ids import CheckpointId, TaskId
from absnb.core.snapshot import GlobalSnapshot
from absnb.views.arrows import Arrow
from absnb.views.drawn_run import DrawnRun

if TYPE_CHECKING:
    from absnb.sim.events import Event
    from absnb.sim.world import World

Side = Literal["before", "after"]
MessageClass = Literal["before", "after", "channel state", "offending", "lost", "control"]
CutStatus = Literal["completed", "pending", "by hand"]


@dataclass(frozen=True)
class Cut:
    """A cut: every task's point on the time axis (a step, or between two steps).

    Attributes:
        positions: for every task, where its recorded state sits.
        label: what the diagram calls it (``checkpoint 2``).
        status: ``completed`` or ``pending`` (a checkpoint of the run), or ``by hand``.
        waiting: tasks of a pending checkpoint that have not recorded their state yet;
            their position is the current step (everything they did so far is before).
        checkpoint_id: the checkpoint, for a cut of the run.
    """

    positions: Mapping[TaskId, float]
    label: str
    status: CutStatus = "by hand"
    waiting: tuple[TaskId, ...] = ()
    checkpoint_id: CheckpointId | None = None

    @classmethod
    def before(cls, steps: Mapping[TaskId, int], *, label: str = "cut by hand") -> Cut:
        """A cut composed by hand: every task's state as it was just before ``steps[task]``
        ran (``0``: the initial state). Any choice is allowed, so the cut may be
        inconsistent; that is what it is for.

        Raises:
            ValueError: a step is negative.
        """
        for task, step in steps.items():
            if step < 0:
                raise ValueError(
                    f"cut position of {task} is step {step}; use a step >= 0 (0: the "
                    "state before the first step)"
                )
        return cls({t: s - 0.5 for t, s in steps.items()}, label)

    def position(self, task: TaskId) -> float:
        """Where ``task``'s recorded state sits.

        Raises:
            KeyError: the cut has no position for ``task``.
        """
        try:
            return self.positions[task]
        except KeyError:
            known = ", ".join(str(t) for t in self.positions)
            raise KeyError(
                f"{self.label} has no position for task {task} (it has {known})"
            ) from None


def side(cut: Cut, task: TaskId, step: float, *, sending: bool) -> Side:
    """Which side of ``cut`` an event of ``task`` at ``step`` lies on. In the step where
    a task records its state, what it receives is before the cut, what it sends after."""
    at = cut.position(task)
    if step < at or (step == at and not sending):
        return "before"
    return "after"


def classify(arrow: Arrow, cut: Cut) -> MessageClass:
    """The class of one message with respect to ``cut`` (see the module docstring). A
    message not yet received counts as received after the cut; one discarded by a
    recovery is ``lost``; a control message is ``control``: a marker or barrier is what
    draws the cut (sent right after its sender recorded, it makes its receiver record),
    and neither it nor a cancellation marker or an end of input is ever part of the
    recorded state."""
    if arrow.lost_step is not None:
        return "lost"
    if arrow.kind != "record":
        return "control"
    sent = side(cut, arrow.src, arrow.sent_step, sending=True)
    if arrow.received_step is None:
        received: Side = "after"
    else:
        received = side(cut, arrow.dst, arrow.received_step, sending=False)
    if sent == received:
        return sent
    return "channel state" if sent == "before" else "offending"


def offending(arrows: Iterable[Arrow], cut: Cut) -> list[Arrow]:
    """The messages that make ``cut`` inconsistent: received before it, sent after it."""
    return [a for a in arrows if classify(a, cut) == "offending"]


def snapshot_cuts(trace: Sequence[Event], world: World) -> list[Cut]:
    """The cut of every checkpoint in ``trace`` that completed or is still pending at its
    end (aborted ones are left out), in checkpoint order. A task of a pending checkpoint
    that has not recorded its state yet sits at the current step (``world.clock``)."""
    from absnb.views.simulated import simulated

    return run_cuts(simulated(trace, world), float(world.clock))


def run_cuts(run: DrawnRun, now: float) -> list[Cut]:
    """:func:`snapshot_cuts` of a run's rows: a task of a pending checkpoint that has not
    recorded its state yet sits at ``now``."""
    recorded: dict[CheckpointId, dict[TaskId, float]] = {}
    completed: set[CheckpointId] = set()
    aborted: set[CheckpointId] = set()
    for r in run.rows:
        if r.checkpoint is None:
            continue
        if r.kind == "snapshot":
            recorded.setdefault(r.checkpoint, {})[run.task(r.task)] = r.time
        elif r.kind == "completed":
            completed.add(r.checkpoint)
        elif r.kind == "aborted":
            aborted.add(r.checkpoint)
    cuts = []
    for n in sorted(recorded):
        if n in completed:
            cuts.append(Cut(recorded[n], f"checkpoint {n}", "completed", checkpoint_id=n))
        elif n not in aborted:
            positions = dict(recorded[n])
            waiting = tuple(t for t in run.tasks if t not in positions)
            positions.update(dict.fromkeys(waiting, now))
            cuts.append(Cut(positions, f"checkpoint {n}", "pending", waiting, n))
    return cuts


def completed_cuts(cuts: Sequence[Cut], tasks: Sequence[TaskId]) -> list[Cut]:
    """The completed ones of ``cuts``, each task with no part in one (a task that had
    finished, or a close up's edge) at its neighbour's point, as one the cut waits for."""
    out = []
    for c in cuts:
        if c.status != "completed" or not c.positions:
            continue
        positions, missing = dict(c.positions), [t for t in tasks if t not in c.positions]
        for t in missing:
            i = tasks.index(t)
            near = sorted((abs(j - i), j) for j, u in enumerate(tasks) if u in c.positions)
            positions[t] = c.positions[tasks[near[0][1]]]
        out.append(Cut(positions, c.label, c.status, tuple(missing), c.checkpoint_id))
    return out


def snapshot_cut(
    snapshot: GlobalSnapshot, trace: Sequence[Event], *, label: str | None = None
) -> Cut:
    """The cut a global snapshot was taken along: every task's part sits at the step its
    task recorded it (found in ``trace`` by task and checkpoint id). A snapshot composed
    by hand from parts of different checkpoints (A's from checkpoint 1, B's from
    checkpoint 2) gives a cut that may well be inconsistent.

    Raises:
        ValueError: ``trace`` has no step at which a task recorded its part.
    """
    from absnb.views.simulated import rows_of

    recorded = {(r.task, r.checkpoint): r.time for r in rows_of(trace) if r.kind == "snapshot"}
    positions: dict[TaskId, float] = {}
    for task, part in snapshot.tasks.items():
        step = recorded.get((str(task), part.checkpoint_id))
        if step is None:
            raise ValueError(
                f"{task}'s part of the snapshot belongs to checkpoint {part.checkpoint_id}, "
                "which the trace never records for it: pass the trace of the run that took it"
            )
        positions[task] = float(step)
    parts = sorted({p.checkpoint_id for p in snapshot.tasks.values()})
    name = label or (
        f"checkpoint {parts[0]}"
        if len(parts) == 1
        else "parts of checkpoints " + ", ".join(map(str, parts))
    )
    return Cut(positions, name, "by hand", checkpoint_id=snapshot.checkpoint_id)
