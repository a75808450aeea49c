"""Ended input channels for a protocol that does not count them itself (Flink FLIP-147:
"checkpoint barriers are considered received on finished channels").

ABS Algorithm 1, unaligned checkpoints and the at-least-once tracker count an ended channel
as aligned in their own :meth:`~absnb.protocols.base.BarrierHandler.on_end_of_input`. The
others (Chandy-Lamport, Algorithm 2, the synchronous baseline) take a barrier or marker on
every input; for them an ended channel is taken to carry every barrier its task waits for
(:func:`owed`), which the task hands the handler as if it had arrived there, so that no
snapshot waits for a barrier that an ended channel will never bring.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from absnb.core.ids import ChannelId
from absnb.protocols.base import BarrierHandler


def counts_ended(handler: BarrierHandler) -> bool:
    """Whether ``handler`` counts ended channels itself (it overrides ``on_end_of_input``)."""
    return type(handler).on_end_of_input is not BarrierHandler.on_end_of_input


def owed(
    handler: BarrierHandler, ended: Set[ChannelId], message: type
) -> list[tuple[ChannelId, Any]]:
    """The barriers (of type ``message``: a barrier or a marker) that the ``ended`` inputs
    of ``handler``'s task are taken to carry now: one for each snapshot it waits for, on
    each ended input that has not brought it, oldest snapshot first."""
    return [
        (c, message(w.checkpoint_id)) for w in handler.waiting() for c in w.channels if c in ended
    ]
