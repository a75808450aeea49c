"""Labs: students write a protocol, the model checker grades it and shows the bug.

The ABS lab: subclass :class:`~absnb.labs.handler.AbsHandler` (ABS Algorithm 1 at one
task, with its two decisions left to write), then ``absnb.labs.check(MyHandler)``:
scripted cases at one task, random runs with crashes, every interleaving of small jobs; a
failure comes with the shortest run that shows it, in words, and ``report.stepper()``
opens the stepper widget there. The lab notebook is ``notebooks/labs/abs_lab.ipynb``.

The Chandy-Lamport lab: subclass
:class:`~absnb.labs.chandy_lamport.handler.MarkerHandler` (a process's two decisions, at
the first marker of a snapshot and at each later one), then ``check(MyHandler)``: seed
001's bank at one process, random runs of banks with concurrent snapshots and crashes,
every interleaving of small banks with snapshots started at any account. Its notebook is
``notebooks/labs/chandy_lamport_lab.ipynb``.

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
    "Marker",
    "MarkerHandler",
    "MarkerLabProtocol",
    "PartResult",
    "RecordChannelState",
    "SnapshotState",
    "Unblock",
    "check",
]
