"""A host's two connections, opened: its end of the data plane and its client of the
control plane (the coordinator on the driver), then its channels to the other hosts."""

from __future__ import annotations

from collections.abc import Callable

from absnb.core.ids import TaskId
from absnb.runtime.connections.wire import bind_address
from absnb.runtime.control_plane.client import ControlClient, report_setup_failure
from absnb.runtime.data_plane.transport import DataPlane
from absnb.runtime.plan import HostPlan


def open_planes(plan: HostPlan) -> tuple[DataPlane, ControlClient]:
    """This host's data plane, listening, and its control client (not yet registered); a
    data plane that cannot listen (every port of the range taken) is reported to the
    coordinator before it raises."""
    try:
        net = DataPlane(
            plan.secret,
            bind_host=bind_address(plan.advertise_host),
            ports=plan.ports,
            advertise_host=plan.advertise_host,
            attempt=plan.attempt,
        )
    except BaseException as e:
        report_setup_failure(plan, e)
        raise
    client = ControlClient(
        plan.coordinator,
        plan.secret,
        host_id=plan.host_id,
        attempt=plan.attempt,
        tasks=plan.tasks,
        data_address=net.address,
        timeout=plan.setup_timeout,
    )
    return net, client


def connect_channels(
    plan: HostPlan, net: DataPlane, client: ControlClient, check: Callable[[], None]
) -> None:
    """Register with the coordinator, which answers with every host's data address, then
    connect this host's channels to and from the other hosts and wait until all are ready;
    ``check`` runs while waiting (it raises when the attempt is over)."""
    graph, local = plan.job.graph, set[TaskId](plan.tasks)
    net.expect_inputs([c for t in plan.tasks for c in graph.inputs[t] if c.src not in local])
    book = client.register()
    remote_out = [c for t in plan.tasks for c in graph.outputs[t] if c.dst not in local]
    net.connect_outputs(
        {c: book.hosts[book.task_host[c.dst]] for c in remote_out}, plan.setup_timeout, check
    )
    net.wait_ready(plan.setup_timeout, check)
