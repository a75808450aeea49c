"""Real execution: the Spark runtime (``spark``, with ``daemon``, Spark's Python daemon
preloading absnb, and ``structured_streaming``, the two-phase-commit file sink from a
Structured Streaming query: the only modules that import pyspark), the framed TCP data
plane (``transport``), the control plane (``control``) and checkpoint storage
(``storage``)."""

from absnb.runtime.event_table import RunEvents, load_events

__all__ = ["RunEvents", "load_events"]
