"""How a host's attempt is stopped: the coordinator's
:class:`~absnb.runtime.control_plane.messages.Stop` ends a host at once (:func:`stopped`,
every wait of the loop listens for it), and a host that fails tells a failure of its own
from what a peer ending on the run's final Stop did to it (:func:`run_stopped`)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from absnb.runtime.control_plane.client import ControlClient
from absnb.runtime.control_plane.messages import Command, Stop
from absnb.runtime.failures import InjectedFailure
from absnb.runtime.plan import HostPlan

RUN_STOP_WAIT = 0.1
"""Seconds a failing host listens for the coordinator's final Stop before it reports its
error (:func:`run_stopped`)."""


class HostStopped(RuntimeError):
    """The coordinator told this host to stop: its attempt is over or a peer host was lost."""


class RunStopped(HostStopped):
    """The coordinator stopped the whole run (a final
    :class:`~absnb.runtime.control_plane.messages.Stop`): the driver raises why, and the
    host's Spark task ends without failing."""


def stopped(plan: HostPlan, commands: list[Command]) -> list[Command]:
    """``commands``, unless one of them is Stop: then raise :class:`HostStopped` (or
    :class:`RunStopped`, for the run's final Stop)."""
    for cmd in commands:
        if isinstance(cmd, Stop):
            raise (RunStopped if cmd.final else HostStopped)(
                f"host {plan.host_id} of attempt {plan.attempt} was stopped by "
                f"the coordinator: {cmd.reason or 'no reason given'}"
            )
    return commands


def run_stopped(client: ControlClient, early: Sequence[object], error: BaseException) -> bool:
    """Whether the coordinator stopped the whole run (a final Stop came, among the
    ``early`` commands or within :data:`RUN_STOP_WAIT` s), so that ``error``, what a peer
    ending on that Stop did to this host, is no failure of its own. An injected failure is
    always one."""
    if isinstance(error, InjectedFailure | KeyboardInterrupt):
        return False
    deadline = time.monotonic() + RUN_STOP_WAIT
    while True:
        try:
            commands = client.poll()
        except Exception:  # the connection is gone: no Stop to read
            return False
        if any(type(c) is Stop and c.final for c in (*early, *commands)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
