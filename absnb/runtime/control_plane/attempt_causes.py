"""Why an attempt failed: the first failure a host reported that is not a consequence of another's.

When one host of an attempt fails, its peers fail too (their channels to it close), and under
load a peer may report before the host that caused it. The coordinator server records every
host's :class:`~absnb.runtime.control_plane.messages.Failed` here; a report that only follows from a
peer's (:func:`~absnb.runtime.failures.follows_from_a_peer`) gives way to the first one that
does not. Sans-IO: the server feeds it reports and asks it, under its own lock.
"""

from __future__ import annotations

import contextlib
from typing import cast

from absnb.runtime.connections.wire import loads
from absnb.runtime.control_plane.messages import Failed, HostFailure
from absnb.runtime.failures import follows_from_a_peer

REPORT_CHARS = 500
"""How much of a host's error text is kept (the rest is a traceback's tail)."""


class AttemptCauses:
    """The cause of each attempt's failure, from the hosts' reports.

    Attributes:
        failures: each attempt's cause as text (``"RuntimeError: ..."``), which Spark's own
            message may not say (it names whichever task ended first).
        exceptions: each attempt's cause as an exception (the user's own, if it unpickles on
            the driver, else :class:`~absnb.runtime.control_plane.messages.HostFailure`) and whether
            the host failed while setting up (see
            :class:`~absnb.runtime.control_plane.messages.Failed`).
    """

    def __init__(self) -> None:
        self.failures: dict[int, str] = {}
        self.exceptions: dict[int, tuple[BaseException, bool]] = {}

    def report(self, message: Failed) -> None:
        """Record ``message``: it becomes its attempt's cause if it is the first report, or
        if the known cause only follows from a peer's failure and this one does not."""
        known, follows = self.failures.get(message.attempt), follows_from_a_peer
        if known is None or (follows(known) and not follows(message.error)):
            self.failures[message.attempt] = message.error[:REPORT_CHARS]
            self.exceptions.pop(message.attempt, None)
        if message.attempt not in self.exceptions:
            error: BaseException = HostFailure(message.error)
            if message.exception:
                with contextlib.suppress(Exception):  # a class the driver cannot import
                    error = cast(BaseException, loads(message.exception))  # the host's own
            self.exceptions[message.attempt] = (error, message.setup)

    def settled(self, attempt: int) -> bool:
        """Whether ``attempt`` has a cause that does not only follow from a peer's."""
        return attempt in self.exceptions and not follows_from_a_peer(self.failures[attempt])

    def cause(self, attempt: int) -> tuple[BaseException, bool] | None:
        """``attempt``'s cause as an exception and whether it came while setting up."""
        return self.exceptions.get(attempt)
