"""Script helpers for the protocol tests, in the shape of Flink's AlignedCheckpointsTest.

A test builds a small graph, takes the handler of one task, feeds it records and barriers
(or markers) channel by channel, and checks the effects after every step. Channels and
tasks are named as printed: ``"a->t"``, ``"count[1]"``.
"""

from __future__ import annotations

from collections.abc import Iterable

from absnb import CheckpointBarrier, ExecutionGraph, JobGraph, Marker, Record, get_protocol
from absnb.core.effects import Block, RecordChannelState, Unblock
from absnb.core.ids import ChannelId


def fan_in(*sources: str, task: str = "t") -> ExecutionGraph:
    """Sources ``sources`` each connected to operator ``task``, which feeds sink ``out``.

    ``task``'s inputs are ``"<source>-><task>"`` in the order given.
    """
    g = JobGraph("fan_in")
    for s in sources:
        g.add(s, "source", None)
    g.add(task, "operator", None)
    g.add("out", "sink", None)
    for s in sources:
        g.connect(s, task)
    g.connect(task, "out")
    return g.compile()


def loop(regular: Iterable[str] = ("s",), bodies: Iterable[str] = ("b",)) -> ExecutionGraph:
    """Sources ``regular`` feed loop head ``h``; ``h`` feeds every body and every body feeds
    ``h`` back (the back-edges) and sink ``out``.

    ``h``'s inputs are the regular inputs ``"<source>->h"`` then the loop inputs ``"<body>->h"``.
    """
    regular, bodies = list(regular), list(bodies)
    g = JobGraph("loop")
    for s in regular:
        g.add(s, "source", None)
    g.add("h", "operator", None)
    for b in bodies:
        g.add(b, "operator", None)
    g.add("out", "sink", None)
    for s in regular:
        g.connect(s, "h")
    for b in bodies:
        g.connect("h", b)
        g.connect(b, "h")
        g.connect(b, "out")
    return g.compile()


def processes(names: Iterable[str], links: Iterable[str]) -> ExecutionGraph:
    """Processes (Chandy-Lamport style) joined by ``links`` written ``"A->B"``."""
    g = JobGraph("processes")
    for n in names:
        g.add(n, "process", None)
    for link in links:
        src, dst = link.split("->")
        g.connect(src, dst)
    return g.compile()


class Script:
    """One task's handler, fed one message at a time; every method returns the effects."""

    def __init__(self, protocol: str, graph: ExecutionGraph, task: str) -> None:
        self.graph = graph
        proto = get_protocol(protocol, graph)
        self.handler = proto.handler(graph, graph.task(task))

    def ch(self, label: str) -> ChannelId:
        return self.graph.channel(label)

    def rec(self, channel: str, value: object, seq: int = 0) -> list:
        return list(self.handler.on_record(self.ch(channel), Record(value, seq)))

    def barrier(self, channel: str, n: int) -> list:
        return list(self.handler.on_barrier(self.ch(channel), CheckpointBarrier(n)))

    def marker(self, channel: str, n: int) -> list:
        return list(self.handler.on_barrier(self.ch(channel), Marker(n)))

    def trigger(self, n: int) -> list:
        return list(self.handler.on_trigger(n))

    def complete(self, n: int) -> list:
        return list(self.handler.on_checkpoint_complete(n))

    def abort(self, n: int) -> list:
        return list(self.handler.on_checkpoint_aborted(n))

    # Expected effects, by channel label.
    def block(self, *channels: str) -> list[Block]:
        return [Block(self.ch(c)) for c in channels]

    def unblock(self, *channels: str) -> list[Unblock]:
        return [Unblock(self.ch(c)) for c in channels]

    def state(self, n: int, channel: str, *values: object) -> RecordChannelState:
        """The recorded state of ``channel`` in snapshot ``n``: records with ``values``."""
        return RecordChannelState(n, self.ch(channel), tuple(Record(v) for v in values))
