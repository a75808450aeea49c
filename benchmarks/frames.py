"""What a batch costs between two hosts: the data plane's DATA frame against the floor, an
Arrow record batch through a socket.

    PYTHONPATH=. python benchmarks/frames.py [frames] [repeats]

Word count's two kinds of batch, made as the columnar path makes them from 512 lines of
``datasets.text_partitions("large")``: the words a source sends a counter (one string
column) and the ``(word, count so far)`` pairs a counter sends a sink (a string and an
int64 column). Each goes ``frames`` times (default 2,000) through a socket pair, a thread
writing and the main thread reading (reads of the transport's size, 256 KiB), as:

* ``frame, columns``: what the hosts send: the batch pickled into a DATA frame (its columns
  as one Arrow IPC stream inside the pickle, :meth:`Columns.to_ipc
  <absnb.core.columns.Columns.to_ipc>`), read back by a ``FrameReader``;
* ``frame, out of band``: the same with the IPC stream after the pickle instead of copied
  into it (pickle protocol 5's out-of-band buffers): a frame kind of its own would save
  these copies and no more;
* ``Arrow IPC alone``: the floor, the columns written to the socket by Arrow's own stream
  writer and read by its reader, no pickle at all;
* ``frame, per record``: the per-record path's batch, a list of Python values pickled.

Prints ns per record, the best of ``repeats`` (default 3), measured in one run.
"""

from __future__ import annotations

import pickle
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absnb import datasets
from absnb.core.columns import Columns, column, from_ipc
from absnb.core.messages import RecordBatch
from absnb.runtime.connections.frames import FrameReader, frame
from absnb.runtime.connections.link import _RECV_BYTES as RECV_BYTES
from absnb.runtime.connections.wire import HEADER, encode

DATA = 1
LINES = 512


def batches() -> dict[str, Columns]:
    lines = datasets.text_partitions("large")[0][:LINES]
    words = pa.array(" ".join(lines).split())
    counts = pa.array(range(1, len(words) + 1), pa.int64())
    return {
        "words": column(words, "word"),
        "(word, count)": Columns(("word", "count"), (words, counts)),
    }


def through_socket(write: Callable[[socket.socket], None], read: Callable[[socket.socket], None]):
    """Seconds for ``write`` in a thread and ``read`` here to pass everything through."""
    a, b = socket.socketpair()
    with a, b:
        writer = threading.Thread(target=write, args=(a,))
        began = time.perf_counter()
        writer.start()
        read(b)
        writer.join()
        return time.perf_counter() - began


def framed(payload: Callable[[], bytes], frames: int, oob: bool = False) -> float:
    def write(s: socket.socket) -> None:
        for _ in range(frames):
            s.sendall(payload())

    def read(s: socket.socket) -> None:
        reader, got = FrameReader((DATA,)), 0
        while got < frames:
            got += len(reader.feed(s.recv(RECV_BYTES)))

    def read_out_of_band(s: socket.socket) -> None:
        buf, got = b"", 0
        while got < frames:
            buf += s.recv(RECV_BYTES)
            pos = 0
            while len(buf) - pos >= HEADER.size:
                length, _ = HEADER.unpack_from(buf, pos)
                if len(buf) - pos - HEADER.size < length:
                    break
                start = pos + HEADER.size
                out_of_band_loads(memoryview(buf)[start : start + length])
                pos, got = start + length, got + 1
            buf = buf[pos:]

    return through_socket(write, read_out_of_band if oob else read)


def out_of_band(message: object) -> bytes:
    """``message`` pickled with its Arrow buffers after the pickle, in one frame."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    sizes = struct.pack(f">II{len(raws)}Q", len(head), len(raws), *(r.nbytes for r in raws))
    return encode(4, b"".join([sizes, head, *raws]))


def out_of_band_loads(view: memoryview) -> object:
    head, n = struct.unpack_from(">II", view)
    sizes = struct.unpack_from(f">{n}Q", view, 8)
    pos = 8 + 8 * n
    body = view[pos : pos + head]
    pos += head
    buffers = []
    for size in sizes:
        buffers.append(view[pos : pos + size])
        pos += size
    return pickle.loads(body, buffers=buffers)


class _OutOfBand(Columns):
    __slots__ = ()

    def __reduce_ex__(self, protocol):  # type: ignore[override]
        batch = pa.RecordBatch.from_arrays(list(self.arrays), names=list(self.names))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        return from_ipc, (pickle.PickleBuffer(sink.getvalue()),)


def arrow_alone(cols: Columns, frames: int) -> float:
    batch = pa.RecordBatch.from_arrays(list(cols.arrays), names=list(cols.names))

    def write(s: socket.socket) -> None:
        with s.makefile("wb") as f, pa.ipc.new_stream(f, batch.schema) as writer:
            for _ in range(frames):
                writer.write_batch(batch)

    def read(s: socket.socket) -> None:
        with s.makefile("rb") as f, pa.ipc.open_stream(f) as reader:
            for _ in range(frames):
                reader.read_next_batch()

    return through_socket(write, read)


def main() -> None:
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(f"{frames:,} frames a kind, best of {repeats}; ns per record")
    print(
        f"{'batch':14} {'records':>7} {'frame, columns':>15} {'out of band':>12} "
        f"{'Arrow alone':>12} {'per record':>11}"
    )
    for name, cols in batches().items():
        oob = _OutOfBand(cols.names, cols.arrays)
        values = cols.to_pylist()
        ways = {
            "columns": lambda c=cols: framed(lambda: frame(DATA, [RecordBatch(c, 0)]), frames),
            "oob": lambda o=oob: framed(lambda: out_of_band([RecordBatch(o, 0)]), frames, True),
            "arrow": lambda c=cols: arrow_alone(c, frames),
            "records": lambda v=values: framed(lambda: frame(DATA, [RecordBatch(v, 0)]), frames),
        }
        ns = {
            k: min(way() for _ in range(repeats)) / (frames * len(cols)) * 1e9
            for k, way in ways.items()
        }
        print(
            f"{name:14} {len(cols):>7,} {ns['columns']:>15.1f} {ns['oob']:>12.1f} "
            f"{ns['arrow']:>12.1f} {ns['records']:>11.1f}"
        )


if __name__ == "__main__":
    main()
