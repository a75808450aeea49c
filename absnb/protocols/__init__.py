"""Snapshot protocols as sans-IO state machines, and the checkpoint coordinator."""

from __future__ import annotations

from absnb.core.errors import ProtocolSettingError, UnknownProtocolError
from absnb.core.graph import ExecutionGraph
from absnb.protocols.aligned import AlignedProtocol
from absnb.protocols.aligned_timeout import AlignedWithTimeoutProtocol
from absnb.protocols.at_least_once import AtLeastOnceProtocol
from absnb.protocols.base import BarrierHandler, Capabilities, SnapshotProtocol
from absnb.protocols.chandy_lamport import ChandyLamportProtocol
from absnb.protocols.coordinator import CheckpointCoordinator, CompletedCheckpoint
from absnb.protocols.cyclic import CyclicProtocol
from absnb.protocols.none import NoSnapshots
from absnb.protocols.synchronous import SynchronousProtocol
from absnb.protocols.unaligned import UnalignedProtocol

PROTOCOLS: dict[str, type[SnapshotProtocol]] = {
    "chandy-lamport": ChandyLamportProtocol,
    "abs": AlignedProtocol,
    "abs-cyclic": CyclicProtocol,
    "synchronous": SynchronousProtocol,
    "at-least-once": AtLeastOnceProtocol,
    "unaligned": UnalignedProtocol,
    "abs-timeout": AlignedWithTimeoutProtocol,
    "none": NoSnapshots,
}
"""Every snapshot protocol by name (:func:`get_protocol` also takes aliases, such as
``cl``)."""
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
    "at_least_once": "at-least-once",
    "tracker": "at-least-once",
    "flip-76": "unaligned",
    "aligned-timeout": "abs-timeout",
    "abs_timeout": "abs-timeout",
}


def get_protocol(
    name: str | SnapshotProtocol,
    graph: ExecutionGraph | None = None,
    *,
    allow_deadlock: bool = False,
    alignment_timeout: float | None = None,
) -> SnapshotProtocol:
    """The protocol called ``name``, checked against ``graph`` when one is given.

    ``alignment_timeout`` makes ``abs`` (or ``abs-timeout``) switch to unaligned at a task
    whose alignment lasts that long (simulator steps, seconds on Spark).

    Raises:
        UnknownProtocolError: the name is not one of :data:`~absnb.protocols.PROTOCOLS` (or an
            alias).
        CyclicGraphError: ABS Algorithm 1 on a cyclic graph without ``allow_deadlock``.
        ProtocolSettingError: an alignment timeout for a protocol that does not align, or one
            that is not a number >= 0.
    """
    protocol: SnapshotProtocol
    if isinstance(name, SnapshotProtocol):
        protocol = name
        if alignment_timeout not in (None, getattr(protocol, "alignment_timeout", None)):
            raise ProtocolSettingError(
                f"{protocol!r} is a protocol object: give it its alignment timeout when you "
                f"make it, not alignment_timeout={alignment_timeout!r} here"
            )
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
        if alignment_timeout is not None:
            if cls not in (AlignedProtocol, AlignedWithTimeoutProtocol):
                raise ProtocolSettingError(
                    f"protocol {name!r} does not align, so it takes no alignment timeout "
                    f"(got {alignment_timeout!r}): give one with 'abs' or 'abs-timeout'"
                )
            cls = AlignedWithTimeoutProtocol
            protocol = AlignedWithTimeoutProtocol(alignment_timeout)
        elif cls is AlignedProtocol:
            protocol = AlignedProtocol(allow_deadlock=allow_deadlock)
        else:
            protocol = cls()
    if graph is not None:
        protocol.check(graph)
    return protocol


__all__ = [
    "PROTOCOLS",
    "BarrierHandler",
    "Capabilities",
    "CheckpointCoordinator",
    "CompletedCheckpoint",
    "SnapshotProtocol",
    "get_protocol",
]
