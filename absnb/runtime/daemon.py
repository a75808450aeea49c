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
"""

import importlib

import pyspark.daemon

PRELOADED = (
    "pyspark.worker",  # what every worker imports first
    "absnb.runtime.spark",  # what unpickling a host's plan imports
    "absnb.runtime.host",
    "absnb.runtime.storage",
    "absnb.runtime.control_client",  # what a host imports when it runs
    "absnb.runtime.control_messages",
    "absnb.runtime.transport",
)
"""The modules the daemon imports before it forks."""

if __name__ == "__main__":
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:
            break
    pyspark.daemon.manager()
