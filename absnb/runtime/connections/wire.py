"""The wire format shared by the data and control planes: frames, and the job secret.

A frame is a 4-byte big-endian length, a 1-byte kind, then the payload (a pickle,
protocol 5). Every connection starts with a mutual challenge-response on the per-job
secret, before either side unpickles anything from the other:

1. server -> client: a random nonce ``ns``;
2. client -> server: its proof ``HMAC(secret, "absnb-client" || ns || nc || hello)``, the length
   of ``nc || hello``, then a random nonce ``nc`` and its hello (who it is, pickled);
3. the server (:class:`absnb.runtime.connections.handshake.ServerHandshake`, sans-IO, with a
   deadline) checks the client's MAC in constant time (closing the connection without a word if it
   is wrong), and only then unpickles the hello and answers
   ``HMAC(secret, "absnb-server" || ns || nc || hello)``;
4. the client checks the server's MAC before it reads anything else from the connection.

The two labels keep one side's proof from being reflected as the other's; the fresh
nonces of both sides keep an old proof from being replayed.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import os
import pickle
import secrets
import socket
import struct

HEADER = struct.Struct(">IB")
MAX_FRAME = 256 * 1024 * 1024
"""The longest payload a frame may have, in bytes: a reader takes a longer length as a
corrupt stream."""
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


def dumps(obj: object) -> bytes:
    return pickle.dumps(obj, protocol=PICKLE_PROTOCOL)


def loads(data: bytes | memoryview) -> object:
    return pickle.loads(data)


def encode(kind: int, payload: bytes) -> bytes:
    """One frame."""
    return HEADER.pack(len(payload), kind) + payload


class NoFreePortError(OSError):
    """Every port of the range a runtime was told to listen in is taken."""


def listen(bind_host: str, ports: range | None = None, backlog: int = 128) -> socket.socket:
    """A listening socket on ``bind_host``: on the first free port of ``ports``, or any
    port the OS chooses when ``ports`` is None (firewalls: give the range they open).

    Raises:
        NoFreePortError: every port of ``ports`` is in use.
    """
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    if ports is None:
        return socket.create_server((bind_host, 0), family=family, backlog=backlog)
    for port in ports:
        try:
            return socket.create_server((bind_host, port), family=family, backlog=backlog)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
    raise NoFreePortError(
        errno.EADDRINUSE,
        f"every port from {ports.start} to {ports.stop - 1} on {bind_host} is in use: give "
        f"SparkRuntime(ports=...) a wider range (a host needs one port, the driver one)",
    )


def bind_address(advertise_host: str) -> str:
    """The interface to listen on so that peers reach us at ``advertise_host``: loopback
    for a loopback address (a local master: nothing outside the machine may connect), else
    that address's own interface, or every interface if it is not one of this machine's
    (behind NAT)."""
    try:
        ip = socket.getaddrinfo(advertise_host, None, type=socket.SOCK_STREAM)[0][4][0]
    except (OSError, IndexError):
        return "0.0.0.0"
    if ipaddress.ip_address(ip).is_loopback:
        return str(ip)
    family = socket.AF_INET6 if ":" in str(ip) else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((ip, 0))
    except OSError:
        return "::" if family == socket.AF_INET6 else "0.0.0.0"
    return str(ip)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from a blocking socket."""
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise FrameError("the peer closed the connection")
        chunks += chunk
    return bytes(chunks)


CLIENT_LABEL = b"absnb-client"
SERVER_LABEL = b"absnb-server"
MAX_HELLO = 64 * 1024


def mac(secret: bytes, label: bytes, server_nonce: bytes, body: bytes) -> bytes:
    return hmac.new(secret, label + server_nonce + body, "sha256").digest()


def client_answer(secret: bytes, server_nonce: bytes, hello: object) -> tuple[bytes, bytes]:
    """The client's side of the handshake without I/O: ``(answer to send, server proof
    expected back)``, for clients that drive their sockets themselves."""
    body = os.urandom(NONCE_BYTES) + dumps(hello)
    answer = mac(secret, CLIENT_LABEL, server_nonce, body) + struct.pack(">I", len(body)) + body
    return answer, mac(secret, SERVER_LABEL, server_nonce, body)


def check_server_proof(expected: bytes, proof: bytes) -> None:
    """Raise :class:`AuthenticationError` unless the server's ``proof`` is the one expected."""
    if not hmac.compare_digest(expected, proof):
        raise AuthenticationError(
            "the server does not know the job secret: it is not this job's coordinator or "
            "host (check the address), or it was started with another secret"
        )
