"""The wire format shared by the data and control planes: frames, and the job secret.

A frame is a 4-byte big-endian length, a 1-byte kind, then the payload (a pickle,
protocol 5). Every connection starts with a challenge-response on the per-job secret
before anything else is read from it: the server sends a random nonce, the client answers
HMAC-SHA256(secret, nonce || hello) followed by its hello (who it is), and the server
checks the MAC in constant time. A connection that fails is closed without a word.
"""

from __future__ import annotations

import hmac
import os
import pickle
import secrets
import socket
import struct
from typing import Any

HEADER = struct.Struct(">IB")
MAX_FRAME = 256 * 1024 * 1024
NONCE_BYTES = 32
MAC_BYTES = 32
PICKLE_PROTOCOL = 5


class AuthenticationError(ConnectionError):
    """A peer did not prove it knows the job secret."""


class FrameError(ConnectionError):
    """A frame could not be read: the peer closed, or sent something malformed."""


def new_secret() -> bytes:
    """A fresh per-job secret."""
    return secrets.token_bytes(32)


def dumps(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=PICKLE_PROTOCOL)


def loads(data: bytes) -> Any:
    return pickle.loads(data)


def encode(kind: int, payload: bytes) -> bytes:
    """One frame."""
    return HEADER.pack(len(payload), kind) + payload


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from a blocking socket."""
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise FrameError("the peer closed the connection")
        chunks += chunk
    return bytes(chunks)


def send_frame(sock: socket.socket, kind: int, payload: bytes) -> None:
    sock.sendall(encode(kind, payload))


def recv_frame(sock: socket.socket) -> tuple[int, bytes]:
    """One frame from a blocking socket: ``(kind, payload)``."""
    length, kind = HEADER.unpack(recv_exact(sock, HEADER.size))
    if length > MAX_FRAME:
        raise FrameError(f"a frame of {length} bytes is larger than the limit {MAX_FRAME}")
    return kind, recv_exact(sock, length)


def server_handshake(sock: socket.socket, secret: bytes, timeout: float = 10.0) -> Any:
    """Challenge the client; returns its hello, or raises :class:`AuthenticationError`."""
    previous = sock.gettimeout()
    sock.settimeout(timeout)
    try:
        nonce = os.urandom(NONCE_BYTES)
        sock.sendall(nonce)
        mac = recv_exact(sock, MAC_BYTES)
        (length,) = struct.unpack(">I", recv_exact(sock, 4))
        if length > 64 * 1024:
            raise AuthenticationError("hello too long")
        hello = recv_exact(sock, length)
        expected = hmac.new(secret, nonce + hello, "sha256").digest()
        if not hmac.compare_digest(mac, expected):
            raise AuthenticationError("the peer does not know the job secret")
        return loads(hello)
    except (OSError, FrameError, struct.error) as e:
        raise AuthenticationError(f"handshake failed: {e}") from e
    finally:
        sock.settimeout(previous)


def client_handshake(sock: socket.socket, secret: bytes, hello: Any) -> None:
    """Answer the server's challenge and introduce ourselves with ``hello``."""
    nonce = recv_exact(sock, NONCE_BYTES)
    body = dumps(hello)
    mac = hmac.new(secret, nonce + body, "sha256").digest()
    sock.sendall(mac + struct.pack(">I", len(body)) + body)
