"""Stateful operators F_t(S, r) -> (S', D), replayable sources and collecting sinks."""

from absnb.operators.base import Operator, To
from absnb.operators.library import (
    Account,
    CollectSink,
    Filter,
    FlatMap,
    KeyedCount,
    KeyedReduce,
    Map,
    Source,
)

__all__ = [
    "Account",
    "CollectSink",
    "Filter",
    "FlatMap",
    "KeyedCount",
    "KeyedReduce",
    "Map",
    "Operator",
    "Source",
    "To",
]
