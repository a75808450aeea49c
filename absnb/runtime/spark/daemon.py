"""Spark's Python daemon with the hosts' modules imported before it forks its workers.

Spark starts a Python worker for a task by forking its daemon (``pyspark.daemon``); the
new worker then imports PySpark's worker module, and unpickling the barrier stage's
function imports absnb: some 0.15 s of CPU per worker, and after a failure the hosts of
the next attempt pay it all at once (a worker whose task raised or was killed is not
reused), on the path from the failure to running again. ``default_session`` in
:mod:`absnb.runtime.spark` makes this module the daemon (``spark.python.daemon.module``):
it imports them once, and every worker forked from it starts with them loaded.

It imports what columnar batches import too (pyarrow, its kernels, and pandas, which
pyarrow imports at its first conversion from or to NumPy): some 2 s of CPU that every
fresh worker running a columnar job paid as its host set up, the hosts of an attempt after
a failure among them. Forked, the workers share those pages with the daemon instead of
each holding its own (the daemon grows from 48 MiB to 151 MiB). On four of the test
suite's Spark files, which restart after failures, that took the files from 126-137 s to
74-84 s. PySpark's own daemon imports neither, because pyarrow and NumPy start threads on
import, which a process must not have when it forks: under :data:`NO_THREADS` they start
none (a test counts the daemon's threads). Where the daemon cannot import absnb (shipped
to the executors with the job rather than installed), it runs as PySpark's own and the
workers import absnb themselves.

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
import os

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

NO_THREADS = {"JE_ARROW_MALLOC_CONF": "background_thread:false", "OPENBLAS_NUM_THREADS": "1"}
"""Settings under which importing pyarrow and NumPy starts no thread (jemalloc's background
thread, OpenBLAS's pool), where they are not set already; the workers inherit them."""


def preload() -> None:
    """Import :data:`PRELOADED`, then what columnar batches import
    (:data:`~absnb.runtime.host.parts.COLUMN_MODULES`: pyarrow, pandas; some 2 s of CPU a
    worker), under :data:`NO_THREADS`; stop at the first that cannot be imported."""
    for key, value in NO_THREADS.items():
        os.environ.setdefault(key, value)
    try:
        for name in PRELOADED:
            importlib.import_module(name)
        from absnb.runtime.host.parts import COLUMN_MODULES

        for name in COLUMN_MODULES:
            importlib.import_module(name)
    except ImportError:
        pass


if __name__ == "__main__":
    preload()
    try:
        from absnb.runtime.events.memory import one_arena
    except ImportError:  # absnb comes with the job: the workers run as PySpark's own
        pass
    else:
        one_arena()  # before any thread: forked workers keep the allocator's settings
    gc.freeze()
    pyspark.daemon.manager()
