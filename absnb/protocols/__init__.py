"""Snapshot protocols as sans-IO state machines, and the checkpoint coordinator."""

from __future__ import annotations

from absnb.core.errors import UnknownProtocolError
from absnb.core.graph import ExecutionGraph
from absnb.protocols.aligned import AlignedProtocol
from absnb.protocols.base import BarrierHandler, SnapshotProtocol
from absnb.protocols.chandy_lamport import ChandyLamportProtocol
from absnb.protocols.coordinator import CheckpointCoordinator, CompletedCheckpoint
from absnb.protocols.cyclic import CyclicProtocol
from absnb.protocols.none import NoSnapshots
from absnb.protocols.synchronous import SynchronousProtocol

PROTOCOLS: dict[str, type[SnapshotProtocol]] = {
    "chandy-lamport": ChandyLamportProtocol,
    "abs": AlignedProtocol,
    "abs-cyclic": CyclicProtocol,
    "synchronous": SynchronousProtocol,
    "none": NoSnapshots,
}
ALIASES = {
    "cl": "chandy-lamport",
    "chandy_lamport": "chandy-lamport",
    "aligned": "abs",
    "abs1": "abs",
    "alg1": "abs",
    "cyclic": "abs-cyclic",
    "abs2": "abs-cyclic",
    "alg2": "abs-cyclic",
    "abs_cyclic": "abs-cyclic",
    "sync": "synchronous",
}


def get_protocol(
    name: str | SnapshotProtocol,
    graph: ExecutionGraph | None = None,
    *,
    allow_deadlock: bool = False,
) -> SnapshotProtocol:
    """The protocol called ``name``, checked against ``graph`` when one is given.

    Raises:
        UnknownProtocolError: the name is not one of :data:`PROTOCOLS` (or an alias).
        CyclicGraphError: ABS Algorithm 1 on a cyclic graph without ``allow_deadlock``.
    """
    if isinstance(name, SnapshotProtocol):
        protocol = name
    else:
        if not isinstance(name, str):
            raise UnknownProtocolError(
                f"protocol {name!r} is not a protocol's name: choose one of {', '.join(PROTOCOLS)}"
            )
        key = ALIASES.get(name.lower(), name.lower())
        if key not in PROTOCOLS:
            raise UnknownProtocolError(
                f"unknown protocol {name!r}: choose one of {', '.join(PROTOCOLS)}"
            )
        cls = PROTOCOLS[key]
        protocol = cls(allow_deadlock=allow_deadlock) if cls is AlignedProtocol else cls()
    if graph is not None:
        protocol.check(graph)
    return protocol


__all__ = [
    "PROTOCOLS",
    "BarrierHandler",
    "CheckpointCoordinator",
    "CompletedCheckpoint",
    "SnapshotProtocol",
    "get_protocol",
]
