"""Labs: students write a protocol, the model checker grades it and shows the bug.

The ABS lab: subclass :class:`~absnb.labs.handler.AbsHandler` (ABS Algorithm 1 at one
task, with its two decisions left to write), then ``absnb.labs.check(MyHandler)``:
scripted cases at one task, random runs with crashes, every interleaving of small jobs; a
failure comes with the shortest run that shows it, in words, and ``report.stepper()``
opens the stepper widget there. The lab notebook is ``notebooks/labs/abs_lab.ipynb``.
"""

from __future__ import annotations

from absnb.core.effects import Acknowledge, Block, BroadcastEvent, SnapshotState, Unblock
from absnb.core.messages import CheckpointBarrier
from absnb.labs.grade import check
from absnb.labs.handler import AbsHandler, LabError, LabProtocol
from absnb.labs.report import Counterexample, LabReport, PartResult

__all__ = [
    "AbsHandler",
    "Acknowledge",
    "Block",
    "BroadcastEvent",
    "CheckpointBarrier",
    "Counterexample",
    "LabError",
    "LabProtocol",
    "LabReport",
    "PartResult",
    "SnapshotState",
    "Unblock",
    "check",
]
