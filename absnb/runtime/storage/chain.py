"""Chains of incremental snapshots in checkpoint storage: reading one, and what retention
must keep.

A task's snapshot in checkpoint ``n`` may hold only the keys changed since its snapshot in
an earlier complete checkpoint, its base (:mod:`absnb.core.incremental`). Restoring it
reads the chain down to a full snapshot, each link verified against its own checkpoint's
manifest; a missing, truncated or corrupt link makes checkpoint ``n`` unusable. Retention
keeps every checkpoint a retained one builds on, however old (Flink: the shared state
registry keeps the files a retained checkpoint still refers to).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from absnb.core.array_snapshot import ArraySnapshot, ArraySnapshotError, merge_array_chain
from absnb.core.incremental import IncrementalState, merge_chain
from absnb.core.snapshot import TaskSnapshot
from absnb.runtime.storage.format import Corrupt


def resolve(snapshot: TaskSnapshot, read_base: Callable[[int], TaskSnapshot]) -> TaskSnapshot:
    """``snapshot`` with an incremental state merged with its chain into the full state
    as of its checkpoint (other snapshots as they are). ``read_base(b)`` is the same
    task's snapshot in checkpoint ``b``, verified (it raises
    :class:`~absnb.runtime.storage.format.Corrupt` naming the file that is missing or damaged).
    The state is an :class:`~absnb.core.incremental.IncrementalState` (a dict's entries) or
    an :class:`~absnb.core.array_snapshot.ArraySnapshot` (keys and a value array); every
    link of a chain is of the same kind."""
    state = snapshot.state
    if not isinstance(state, IncrementalState | ArraySnapshot):
        return snapshot
    kind = type(state)
    chain = [state]
    at = snapshot.checkpoint_id
    while chain[-1].base is not None:
        base = chain[-1].base
        if base >= at:
            raise Corrupt(f"checkpoint {at} builds on checkpoint {base}, which is not older")
        link = read_base(base).state
        if not isinstance(link, kind):
            raise Corrupt(
                f"checkpoint {at} builds on checkpoint {base}, which holds no keyed state "
                f"of the same kind ({kind.__name__})"
            )
        chain.append(link)
        at = base
    if isinstance(state, IncrementalState):
        dicts = [c for c in chain if isinstance(c, IncrementalState)]
        return replace(snapshot, state=merge_chain(dicts[::-1], snapshot.checkpoint_id))
    arrays = [c for c in chain if isinstance(c, ArraySnapshot)]
    try:
        merged = merge_array_chain(arrays[::-1], snapshot.checkpoint_id)
    except ArraySnapshotError as e:
        raise Corrupt(f"the chain of checkpoint {snapshot.checkpoint_id} is broken: {e}") from None
    return replace(snapshot, state=merged)


def needed(keep: Iterable[int], bases_of: Callable[[int], dict[str, int]]) -> set[int]:
    """``keep`` and every checkpoint their task snapshots build on, directly or through
    others, each task along its own chain; ``bases_of(n)``: the checkpoint each task's
    snapshot in checkpoint ``n`` builds on, by task (tasks with a full snapshot absent)."""
    out = set(keep)
    todo = [(n, task, base) for n in out for task, base in bases_of(n).items()]
    seen: set[tuple[int, str]] = set()
    while todo:
        _, task, base = todo.pop()
        if (base, task) in seen:
            continue
        seen.add((base, task))
        out.add(base)
        further = bases_of(base).get(task)
        if further is not None:
            todo.append((base, task, further))
    return out
