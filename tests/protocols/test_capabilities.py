"""Every protocol declares what it does; callers ask, never test its name."""

from __future__ import annotations

import pytest

from absnb.core.messages import CheckpointBarrier, Marker
from absnb.protocols import PROTOCOLS, Capabilities, get_protocol


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_capabilities_are_one_frozen_value(name: str) -> None:
    caps = get_protocol(name).capabilities
    assert isinstance(caps, Capabilities)
    with pytest.raises(AttributeError):
        caps.blocks_inputs = not caps.blocks_inputs  # type: ignore[misc]
    assert caps.message in (CheckpointBarrier, Marker)
    if caps.logs_loop_inputs:
        assert caps.records_channel_state
        assert caps.treats_loops_apart


def test_the_paper_protocols_declare_what_they_do() -> None:
    cl = get_protocol("chandy-lamport").capabilities
    assert (cl.message, cl.records_channel_state, cl.blocks_inputs) == (Marker, True, False)
    assert cl.starts_anywhere
    assert not cl.subsumes
    assert cl.max_concurrent is None
    abs1 = get_protocol("abs").capabilities
    assert abs1.blocks_inputs
    assert not abs1.records_channel_state
    assert not abs1.logs_loop_inputs
    abs2 = get_protocol("abs-cyclic").capabilities
    assert abs2.logs_loop_inputs
    assert abs2.channel_state_kind == "backup log"
    sync = get_protocol("synchronous").capabilities
    assert sync.halts_sources
    assert not abs1.halts_sources
    none = get_protocol("none").capabilities
    assert not none.takes_checkpoints
    assert not none.exactly_once


BARRIER_PROTOCOLS = sorted(
    name
    for name in PROTOCOLS
    if get_protocol(name).capabilities.message is CheckpointBarrier
    and get_protocol(name).capabilities.takes_checkpoints
)


def test_the_barrier_protocols_are_the_abs_family() -> None:
    assert {"abs", "abs-cyclic", "unaligned", "at-least-once"} <= set(BARRIER_PROTOCOLS)


@pytest.mark.parametrize("name", BARRIER_PROTOCOLS)
def test_a_barrier_protocol_refuses_a_marker_naming_the_task(name: str) -> None:
    import absnb
    from absnb.core.errors import ProtocolError

    graph = absnb.word_count().graph
    task = graph.task("count[0]")
    handler = get_protocol(name, graph).handler(graph, task)
    with pytest.raises(ProtocolError, match=r"count\[0\] received marker 1"):
        handler.on_barrier(graph.inputs[task][0], Marker(1))
