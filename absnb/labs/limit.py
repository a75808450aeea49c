"""A time limit per part of a lab's check, so that an endless loop in a student's decision
fails its part with a clear message instead of hanging the grader.

The limit is a real-time interval timer (``SIGALRM``), which interrupts the student's code
wherever it is; it raises :class:`PartTimeout`, a ``BaseException``, which the labs' bases
(they keep what a decision raises as its fault) do not catch. Off the main thread, or where
the platform has no such timer, there is no limit.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class PartTimeout(BaseException):
    """A part of a check ran past its time limit."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`PartTimeout` in the code run inside if it takes more than ``seconds``
    (None: no limit)."""
    if (
        seconds is None
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def expired(_signum: int, _frame: FrameType | None) -> None:
        raise PartTimeout(f"more than {seconds:g} s")

    before = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
