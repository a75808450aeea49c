"""Listening in a range of ports, for clusters behind a firewall that opens only those."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

import absnb
from absnb.protocols.coordinator import CheckpointCoordinator
from absnb.runtime.connections.wire import NoFreePortError, bind_address, listen, new_secret
from absnb.runtime.control_plane.server import CoordinatorServer
from absnb.runtime.data_plane.transport import DataPlane
from absnb.runtime.spark import SparkRuntime, final_counts, word_count_answer


def free_range(n: int) -> range:
    """``n`` consecutive ports that are free now (found by trying)."""
    for start in range(41000, 60000, n):
        with ExitStack() as stack:
            try:
                for p in range(start, start + n):
                    stack.enter_context(socket.create_server(("0.0.0.0", p)))
            except OSError:
                continue
        return range(start, start + n)
    pytest.skip("no run of free ports")


@contextmanager
def taken(ports: range) -> Iterator[None]:
    with ExitStack() as stack:
        for p in ports:
            stack.enter_context(socket.create_server(("0.0.0.0", p)))
        yield


def test_listen_takes_the_first_free_port_of_the_range() -> None:
    ports = free_range(3)
    with taken(ports[:1]), listen("0.0.0.0", ports) as sock:
        assert sock.getsockname()[1] == ports[1]


def test_a_range_with_every_port_taken_is_a_clear_error() -> None:
    ports = free_range(2)
    with taken(ports), pytest.raises(NoFreePortError, match=r"from \d+ to \d+ .* wider range"):
        listen("0.0.0.0", ports)


def test_the_coordinator_and_the_data_planes_listen_in_the_range() -> None:
    ports = free_range(4)
    job = absnb.word_count()
    graph = job.graph
    coordinator = CheckpointCoordinator(graph.tasks, graph.name, graph.fingerprint, "abs")
    secret = new_secret()
    server = CoordinatorServer(
        coordinator, secret, hosts=1, initiators=graph.initiators(), ports=ports
    )
    try:
        with DataPlane(secret, ports=ports) as a, DataPlane(secret, ports=ports) as b:
            used = {server.address[1], a.address[1], b.address[1]}
            assert used == set(ports[:3])
            assert a.stats()["address"] == a.address
    finally:
        server.stop()


def test_a_job_runs_with_every_listener_in_the_range(spark, tmp_path) -> None:
    lines = [["to be or not to be"] * 50, ["be quick or be still"] * 50]
    ports = free_range(10)
    runtime = SparkRuntime(spark, checkpoint_dir=str(tmp_path), ports=ports)
    run = runtime.run(absnb.word_count(lines), "abs", checkpoint_interval=0.02)
    assert final_counts(run.output) == word_count_answer(spark, lines)
    assert all(h.metrics["net"]["address"][1] in ports for h in run.hosts)
    with pytest.raises(ValueError, match="range of TCP ports"):
        SparkRuntime(spark, ports=(70000, 70010))


def test_listeners_bind_to_the_interface_the_job_needs() -> None:
    """Loopback for a loopback address (a local master: no other machine may connect);
    every interface for an address that is not this machine's (behind NAT)."""
    assert bind_address("127.0.0.1") == "127.0.0.1"
    assert bind_address("localhost") in ("127.0.0.1", "::1")
    assert bind_address("203.0.113.7") == "0.0.0.0"  # TEST-NET-3: not a local interface
    job = absnb.word_count()
    graph = job.graph
    coordinator = CheckpointCoordinator(graph.tasks, graph.name, graph.fingerprint, "abs")
    server = CoordinatorServer(coordinator, new_secret(), hosts=1, initiators=graph.initiators())
    try:
        with DataPlane(new_secret()) as plane:
            assert plane._listener.getsockname()[0] == "127.0.0.1"
            assert server._listener.getsockname()[0] == "127.0.0.1"
    finally:
        server.stop()
