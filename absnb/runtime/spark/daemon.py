"""Spark's Python daemon with the hosts' modules imported before it forks its workers.

Spark starts a Python worker for a task by forking its daemon (``pyspark.daemon``); the
new worker then imports PySpark's worker module, and unpickling the barrier stage's
function imports absnb: some 0.15 s of CPU per worker, and after a failure the hosts of
the next attempt pay it all at once (a worker whose task raised or was killed is not
reused), on the path from the failure to running again. ``default_session`` in
:mod:`absnb.runtime.spark` makes this module the daemon (``spark.python.daemon.module``):
it imports them once, and every worker forked from it starts with them loaded. None of
them starts a thread on import, which the daemon must not have before it forks. Where the
daemon cannot import absnb (shipped to the executors with the job rather than installed),
it runs as PySpark's own and the workers import absnb themselves.

Before it forks, the daemon freezes its objects out of the garbage collector's reach
(``gc.freeze``, Python's advice for a server that forks its workers): a worker's
collections then never write to the headers of the objects it shares with the daemon, so
fewer of those pages are copied into each worker (an idle worker held 43 MiB of its own
instead of 48 MiB after the bench's warm-up), and a worker's collections look at the
objects it made itself (6,600 after the warm-up, instead of 44,000).

The daemon also has glibc's allocator serve all threads from one arena
(:func:`~absnb.runtime.events.memory.one_arena`), a setting its workers inherit: what a
host's snapshot writers free on their threads then goes back to the system after each host
(:func:`~absnb.runtime.events.memory.release_freed`), where an arena per thread kept it and
a reused worker grew by a few MiB every run (the default bench: from 90 MiB to 230 MiB a
worker, 1,442 MiB at its peak; 1,102 MiB with one arena).
"""

import gc
import importlib

import pyspark.daemon

PRELOADED = (
    "pyspark.worker",  # what every worker imports first
    "absnb.runtime.spark",  # what unpickling a host's plan imports
    "absnb.runtime.host.host",
    "absnb.runtime.storage.checkpoints",
    "absnb.runtime.control_plane.client",  # what a host imports when it runs
    "absnb.runtime.control_plane.messages",
    "absnb.runtime.data_plane.transport",
)
"""The modules the daemon imports before it forks."""

if __name__ == "__main__":
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:
            break
    try:
        from absnb.runtime.events.memory import one_arena
    except ImportError:  # absnb comes with the job: the workers run as PySpark's own
        pass
    else:
        one_arena()  # before any thread: forked workers keep the allocator's settings
    gc.freeze()
    pyspark.daemon.manager()
