"""Frames on a stream (:mod:`absnb.runtime.connections.wire`'s format: a 4-byte big-endian length, a
1-byte kind, a pickle): :class:`FrameReader` reassembles them as bytes arrive, refusing a
frame that is too long or of a kind the connection does not carry; :func:`frame` writes one.
"""

from __future__ import annotations

from absnb.runtime.connections.wire import HEADER, MAX_FRAME, FrameError, dumps, encode, loads


def frame(kind: int, message: object) -> bytes:
    """``message`` pickled into one frame of ``kind``."""
    return encode(kind, dumps(message))


class FrameReader:
    """The frames of one connection, as its bytes come (:meth:`feed`).

    Args:
        kinds: the frame kinds this connection carries; any other is corruption.
    """

    __slots__ = ("_buffer", "kinds")

    def __init__(self, kinds: tuple[int, ...]) -> None:
        if not kinds:
            raise ValueError("a FrameReader needs the frame kinds its connection carries")
        self.kinds = kinds
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buffer)

    def clear(self) -> None:
        """Forget a partial frame (the connection is gone)."""
        self._buffer.clear()

    def feed(self, data: bytes) -> list[tuple[int, object]]:
        """``(kind, message)`` of every frame that ``data`` completes, in order; the bytes of
        an incomplete one wait for the next call.

        Raises:
            FrameError: a frame is longer than
                :data:`~absnb.runtime.connections.wire.MAX_FRAME`, of a kind not in
                :attr:`kinds`, or its payload does not unpickle.
        """
        if self._buffer:  # the common case, a whole frame in one read, copies nothing
            self._buffer += data
            buf: bytes | bytearray = self._buffer
        else:
            buf = data
        frames = []
        pos, n = 0, len(buf)
        with memoryview(buf) as view:
            while n - pos >= HEADER.size:
                length, kind = HEADER.unpack_from(buf, pos)
                if length > MAX_FRAME or kind not in self.kinds:
                    raise FrameError(f"not a frame here (kind {kind}, {length} bytes)")
                end = pos + HEADER.size + length
                if end > n:
                    break
                try:
                    message = loads(view[pos + HEADER.size : end])
                except Exception as e:  # the peer is authenticated; its frame is malformed
                    raise FrameError(f"a frame of kind {kind} could not be unpickled: {e}") from e
                frames.append((kind, message))
                pos = end
        if buf is data:
            self._buffer = bytearray(data[pos:]) if pos < n else bytearray()
        else:
            del self._buffer[:pos]
        return frames
