"""Keyed state as a checkpoint stores it: all of it, or only what changed since a base.

An incremental snapshot holds the entries changed since the task's snapshot in an earlier
completed checkpoint, its ``base``; that one may be incremental too, down to a full one.
Restoring reads the chain from the full snapshot up and applies each one's entries in
turn. Flink's incremental checkpoints are the model: a RocksDB state backend uploads only
the files created since the last checkpoint confirmed complete, and a checkpoint's
metadata refers to the older files it still needs; here the unit is a key instead of a
file, and checkpoint storage keeps every checkpoint a retained one still needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class IncrementalState:
    """One task's keyed state in one checkpoint.

    Attributes:
        entries: the changed entries (all of them when ``base`` is None).
        base: the checkpoint whose snapshot of the same task this one extends; None: full.
        depth: incremental links down to the full snapshot (0 for a full one).
        chain_entries: entries stored along the chain, this snapshot's included.
        size: entries the state held when the snapshot was taken.
        checkpoint_id: the checkpoint these entries are as of, once read back from storage
            (a restored task bases its next incremental snapshot on it); None when taken.
    """

    entries: dict[Any, Any]
    base: int | None = None
    depth: int = 0
    chain_entries: int = 0
    size: int = 0
    checkpoint_id: int | None = None

    @property
    def incremental(self) -> bool:
        """True when this snapshot holds only what changed since ``base``."""
        return self.base is not None

    @property
    def entries_stored(self) -> int:
        """Entries this snapshot stores."""
        return len(self.entries)


def merge_chain(chain: Sequence[IncrementalState], checkpoint_id: int) -> IncrementalState:
    """The full state that ``chain`` (the full snapshot first, then each incremental one
    on the one before) adds up to, as of ``checkpoint_id`` (the last one's checkpoint)."""
    if not chain or chain[0].incremental:
        raise ValueError("a chain of incremental snapshots starts with a full one")
    top = chain[-1]
    if len(chain) == 1:
        entries = top.entries
    else:
        entries = dict(chain[0].entries)
        for link in chain[1:]:
            entries.update(link.entries)
    return IncrementalState(
        entries, None, top.depth, top.chain_entries, len(entries), checkpoint_id
    )
