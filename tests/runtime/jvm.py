"""JVM options for the JVMs the tests start themselves (a standalone cluster's master,
worker, driver and executors, through ``JAVA_TOOL_OPTIONS``)."""

from __future__ import annotations

from absnb.runtime.spark import SESSION_MEMORY

FAST_JVM = str(SESSION_MEMORY["spark.driver.extraJavaOptions"])
"""The options :func:`~absnb.runtime.spark.default_session` starts the driver's JVM with
(C1 only, the serial collector: about half the CPU time to start); the tests' jobs are far
too small to miss C2."""
