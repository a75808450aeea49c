"""Short text forms of values for traces, the command line and views."""

from __future__ import annotations

from typing import Any

from absnb.core.messages import CheckpointBarrier, Marker, Record


def show_value(value: Any) -> str:
    """A record's value: numbers with thousands separators, tuples without quotes."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, tuple):
        return "(" + ", ".join(show_value(v) for v in value) + ")"
    return str(value)


def show_message(message: Any) -> str:
    """``1,000`` for a record, ``barrier 1`` or ``marker 1`` otherwise."""
    if isinstance(message, CheckpointBarrier):
        return f"barrier {message.checkpoint_id}"
    if isinstance(message, Marker):
        return f"marker {message.snapshot_id}"
    if isinstance(message, Record):
        return show_value(message.value)
    return str(message)
