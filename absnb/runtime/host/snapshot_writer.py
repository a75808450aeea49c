"""The asynchronous part of a checkpoint: task snapshots written on a thread of their own.

A task's snapshot is a copy of its state taken the moment it snapshots (``copy_state``,
Alg. 1 line 9); writing that copy to checkpoint storage (pickling, a checksum, fsync) need
not hold up the records behind it. The paper (section 4.2) and Flink split a checkpoint
the same way: a synchronous part that copies, an asynchronous part that persists, and the
acknowledgement only once the snapshot is durable. The host hands each snapshot to a
:class:`SnapshotWriter` and acknowledges it when :meth:`SnapshotWriter.written` returns it.

Every task writes on a thread of its own, as every Flink subtask persists its snapshot on
its own: a remote store's latency (:class:`~absnb.runtime.storage.fs.LatencyFS`) is paid once
per checkpoint, as in the paper's cluster, not once per task of a host, one after another.

Synchronous snapshots still stop the world for the whole write: their sources stay halted
until the checkpoint is complete, which needs every acknowledgement.

A write that checkpoint storage refuses (a full disk, a store out of reach:
:class:`~absnb.runtime.storage.fs.StorageError`) comes back as :class:`WriteFailed`, and the
host declines the checkpoint instead of failing (Flink: the asynchronous part of a snapshot
failed, ``CHECKPOINT_ASYNC_EXCEPTION``); any other error (a state that does not pickle) is
raised to the host.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from absnb.core.array_snapshot import HEAD as ARRAY_HEAD
from absnb.core.array_snapshot import ArraySnapshot
from absnb.core.ids import TaskId
from absnb.core.incremental import IncrementalState
from absnb.core.messages import count_records
from absnb.core.snapshot import TaskSnapshot
from absnb.runtime.connections.wire import dumps
from absnb.runtime.storage.fs import StorageError

if TYPE_CHECKING:
    from absnb.runtime.storage.checkpoints import CheckpointStorage


@dataclass(frozen=True)
class Written:
    """A task snapshot now durable in storage, with what the checkpoint statistics show."""

    snapshot: TaskSnapshot
    key: str
    alignment_s: float
    stats: dict[str, Any]
    """``state_size`` (bytes: the pickled snapshot less its channel state),
    ``channel_state_size`` (bytes, pickled), ``channel_state_records``,
    ``async_duration`` (seconds spent writing: the asynchronous part of the snapshot);
    for keyed state snapshotted incrementally (:mod:`absnb.core.incremental`,
    :mod:`absnb.core.array_snapshot`), also ``incremental`` (only what changed since a
    base), ``state_entries`` (entries written; of an array state, values written),
    ``full_state_entries`` (entries the state held) and
    ``full_state_size`` (bytes of the whole chain down to the full snapshot; of an array
    state, what a full snapshot would write: every key and every value; None
    when this writer did not write it all, after a restore). An array state's snapshot is
    encoded here, on the writer's thread
    (:meth:`~absnb.core.array_snapshot.ArraySnapshot.encode`)."""


@dataclass(frozen=True)
class WriteFailed:
    """A task snapshot checkpoint storage refused to store (nothing of it is left there:
    every write is atomic), and why."""

    snapshot: TaskSnapshot
    error: StorageError


class SnapshotWriter:
    """Writes :class:`~absnb.core.snapshot.TaskSnapshot` objects to a storage on daemon threads, one
    per task, each task's in submission order; not thread-safe on the caller's side (one host thread
    submits and collects)."""

    def __init__(self, storage: CheckpointStorage, job_id: str) -> None:
        self.storage = storage
        self.job_id = job_id
        self._todo: dict[TaskId, queue.SimpleQueue[tuple[TaskSnapshot, float] | None]] = {}
        self._done: queue.SimpleQueue[Written | WriteFailed | BaseException] = queue.SimpleQueue()
        self._pending = 0
        self._lock = threading.Lock()  # guards the chain sizes, which every thread updates
        self._chain_size: dict[tuple[TaskId, int], int] = {}  # full bytes, for the stats

    def submit(self, snapshot: TaskSnapshot, alignment_s: float) -> None:
        """Write ``snapshot`` soon; ``alignment_s`` travels with it to the acknowledgement."""
        todo = self._todo.get(snapshot.task)
        if todo is None:
            todo = self._todo[snapshot.task] = queue.SimpleQueue()
            name = f"snapshot-writer {snapshot.task}"
            threading.Thread(target=self._run, args=(todo,), name=name, daemon=True).start()
        self._pending += 1
        todo.put((snapshot, alignment_s))

    @property
    def pending(self) -> int:
        """Snapshots submitted and not yet returned by :meth:`written`."""
        return self._pending

    def written(self, timeout: float = 0.0) -> list[Written | WriteFailed]:
        """The snapshots written (or refused by the storage) since the last call, in the
        order they became durable; waits up to ``timeout`` for the first when there is
        none. Raises any other error of a write."""
        out: list[Written | WriteFailed] = []
        try:
            item = self._done.get(timeout=timeout) if timeout > 0 else self._done.get_nowait()
            while True:
                self._pending -= 1
                if isinstance(item, BaseException):
                    raise item
                out.append(item)
                item = self._done.get_nowait()
        except queue.Empty:
            pass
        return out

    def close(self) -> None:
        """Stop the threads after the writes already submitted (they are daemons: a host
        that stops at once does not wait for them)."""
        for todo in self._todo.values():
            todo.put(None)

    def _run(self, todo: queue.SimpleQueue[tuple[TaskSnapshot, float] | None]) -> None:
        while True:
            item = todo.get()
            if item is None:
                return
            snapshot, alignment_s = item
            try:
                self._done.put(self._write(snapshot, alignment_s))
            except StorageError as e:  # the host declines the checkpoint
                self._done.put(WriteFailed(snapshot, e))
            except BaseException as e:  # handed to the host, which fails the attempt
                self._done.put(e)

    def _write(self, snapshot: TaskSnapshot, alignment_s: float) -> Written:
        began = time.monotonic()
        payload = dumps(snapshot)  # pickled once, for the storage and for the sizes below
        key = self.storage.write_task(self.job_id, snapshot, payload)
        written = time.monotonic() - began
        recorded = [rs for rs in snapshot.channel_states.values() if rs]
        channel_state_size = sum(len(dumps(rs)) for rs in recorded)
        stats = {  # for absnb.runtime.events.metrics
            "state_size": max(0, len(payload) - channel_state_size),
            "channel_state_size": channel_state_size,
            "channel_state_records": sum(count_records(rs) for rs in recorded),
            "async_duration": written,
        }
        if isinstance(snapshot.state, IncrementalState | ArraySnapshot):
            with self._lock:
                stats.update(self._keyed_stats(snapshot, int(stats["state_size"])))
        return Written(snapshot, key, alignment_s, stats)

    def _keyed_stats(self, snapshot: TaskSnapshot, size: int) -> dict[str, Any]:
        """Incremental against full sizes of a snapshot of keyed state of ``size`` bytes.

        The full size of a dict's increment is the whole chain's bytes (what a restore
        reads); of an array's, what a full snapshot would write: every key of the chain
        once, every value."""
        state = snapshot.state
        own = state.key_bytes if isinstance(state, ArraySnapshot) else size
        chained: int | None = own
        if state.base is not None:
            below = self._chain_size.get((snapshot.task, state.base))
            chained = None if below is None else below + own
        full = chained
        if isinstance(state, ArraySnapshot) and chained is not None:
            # every key once, every value, and this snapshot's header and framing
            framing = size - len(state.encode()) + ARRAY_HEAD.size
            full = chained + 8 * state.size + framing
        if chained is not None:  # a later snapshot of the task may build on this one
            self._chain_size[(snapshot.task, snapshot.checkpoint_id)] = chained
        mine = sorted(k for k in self._chain_size if k[0] == snapshot.task)
        for k in mine[:-8]:  # bases are recent: the last checkpoint confirmed complete
            del self._chain_size[k]
        return {
            "incremental": state.incremental,
            "state_entries": state.entries_stored,
            "full_state_entries": state.size,
            "full_state_size": full,
        }
