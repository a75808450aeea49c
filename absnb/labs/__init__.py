"""Labs: students write a protocol, the model checker grades it and shows the bug.

The ABS lab: subclass :class:`~absnb.labs.handler.AbsHandler` (ABS Algorithm 1 at one
task, with its two decisions left to write), then ``absnb.labs.check(MyHandler)``:
scripted cases at one task, random runs with crashes, every interleaving of small jobs; a
failure comes with the shortest run that shows it, in words, and ``report.stepper()``
opens the stepper widget there. The lab notebook is ``notebooks/labs/abs_lab.ipynb``.

Its extension, ABS Algorithm 2 on cyclic graphs: subclass
:class:`~absnb.labs.cyclic.handler.CyclicAbsHandler` (three decisions: at the last barrier
of the regular inputs, at a barrier before it, at a barrier back on a loop input, whose
backup log the base keeps), then ``check(MyHandler)`` (lab ``abs-cyclic``): the worked
example of notebook 03 at the loop's head, random runs of the Collatz loop with crashes,
every interleaving of small loops. Its section closes the ABS lab's notebook.

The Chandy-Lamport lab: subclass
:class:`~absnb.labs.chandy_lamport.handler.MarkerHandler` (a process's two decisions, at
the first marker of a snapshot and at each later one), then ``check(MyHandler)``: seed
001's bank at one process, random runs of banks with concurrent snapshots and crashes,
every interleaving of small banks with snapshots started at any account. Its notebook is
``notebooks/labs/chandy_lamport_lab.ipynb``.

The two-phase-commit lab: subclass
:class:`~absnb.labs.two_phase_commit.handler.TransactionalSink` (the checkpoint glue of an
exactly-once sink: write, pre-commit at the snapshot, commit on the notification, commit
and abort on a restore), then ``check(MySink)``: Flink's ``TwoPhaseCommitSinkFunctionTest``
cases at one sink, random runs with crashes, every interleaving of a small word count
writing to the simulator's transaction store, crashes included. Its notebook is
``notebooks/labs/two_phase_commit_lab.ipynb``.

Once those pass, where Java is present, each lab runs the student's class once on Spark
(:mod:`absnb.labs.spark`), through the runtime the package's own protocols run on, with a
failure and a recovery; ``check(MyHandler, spark=False)`` skips that run.

Each lab is also in Korean and Chinese (``notebooks/ko/labs/``, ``notebooks/zh/labs/``):
the prose translated, the code the same, and the report in the language set by
:func:`absnb.set_language` (see :mod:`absnb.labs.report`).
"""

from __future__ import annotations

from absnb.core.effects import (
    Acknowledge,
    Block,
    BroadcastEvent,
    RecordChannelState,
    SnapshotState,
    Unblock,
)
from absnb.core.messages import CheckpointBarrier, Marker
from absnb.labs.chandy_lamport.handler import MarkerHandler, MarkerLabProtocol
from absnb.labs.cyclic.handler import CyclicAbsHandler, CyclicLabProtocol
from absnb.labs.grade import check
from absnb.labs.handler import AbsHandler, LabError, LabProtocol
from absnb.labs.report import Counterexample, LabReport, PartResult
from absnb.labs.two_phase_commit.handler import TransactionalSink

__all__ = [
    "AbsHandler",
    "Acknowledge",
    "Block",
    "BroadcastEvent",
    "CheckpointBarrier",
    "Counterexample",
    "CyclicAbsHandler",
    "CyclicLabProtocol",
    "LabError",
    "LabProtocol",
    "LabReport",
    "Marker",
    "MarkerHandler",
    "MarkerLabProtocol",
    "PartResult",
    "RecordChannelState",
    "SnapshotState",
    "TransactionalSink",
    "Unblock",
    "check",
]
