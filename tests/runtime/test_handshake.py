"""The accepting side of the job-secret handshake as a state machine, without sockets:
it accepts the right answer however the bytes are split, names the hello only after the
proof checks, fails a wrong secret, a malformed or over-long answer, a peer that closes,
and one that misses its deadline."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.runtime.connections.handshake import HANDSHAKE_SECONDS, ClientHandshake, ServerHandshake
from absnb.runtime.connections.wire import (
    MAC_BYTES,
    NONCE_BYTES,
    SERVER_LABEL,
    AuthenticationError,
    FrameError,
    check_server_proof,
    client_answer,
    mac,
    new_secret,
)
from tests.runtime.conftest import Tripwire

SECRET = new_secret()
NONCE = bytes(range(NONCE_BYTES))


def chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@given(cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_the_right_answer_in_any_split_is_accepted_with_a_proof(cuts) -> None:
    hs = ServerHandshake(SECRET, now=0.0)
    challenge = hs.outgoing()
    assert len(challenge) == NONCE_BYTES
    answer, expected = client_answer(SECRET, challenge, {"channel": ("a", "b"), "attempt": 2})
    for part in chunks(answer, cuts):
        assert hs.state == "waiting"
        hs.receive(part)
    assert hs.state == "done"
    assert hs.hello == {"channel": ("a", "b"), "attempt": 2}
    check_server_proof(expected, hs.outgoing())  # the client accepts the server's proof


def test_a_wrong_secret_fails_and_nothing_is_unpickled(unpickled) -> None:
    hs = ServerHandshake(SECRET, now=0.0, nonce=NONCE)
    answer, _ = client_answer(new_secret(), hs.outgoing(), Tripwire("hello"))
    hs.receive(answer)
    assert (hs.state, hs.error) == ("failed", "the peer does not know the job secret")
    assert hs.hello is None
    assert unpickled == []
    assert hs.outgoing() == b""  # no proof for an impostor


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"\0" * MAC_BYTES + struct.pack(">I", 3) + b"abc", "a hello of 3 bytes is malformed"),
        (b"\0" * MAC_BYTES + struct.pack(">I", 1 << 30), "is malformed"),
        (b"", "closed the connection during the handshake"),
    ],
)
def test_a_malformed_answer_or_a_close_fails(answer, error) -> None:
    hs = ServerHandshake(SECRET, now=0.0)
    hs.receive(answer)
    assert hs.state == "failed"
    assert error in hs.error


def test_more_bytes_than_the_answer_fail() -> None:
    hs = ServerHandshake(SECRET, now=0.0)
    answer, _ = client_answer(SECRET, hs.outgoing(), "hello")
    hs.receive(answer + b"x")
    assert hs.state == "failed"
    assert "more than its answer" in hs.error


def test_the_deadline_is_total_not_per_byte() -> None:
    """A byte a second does not keep a connection alive: the deadline counts from accept."""
    hs = ServerHandshake(SECRET, now=100.0, timeout=3.0)
    answer, _ = client_answer(SECRET, hs.outgoing(), "hello")
    for second, byte in enumerate(answer[:3]):
        assert not hs.expired(100.0 + second)
        hs.receive(bytes([byte]))
    assert hs.expired(103.0)
    assert hs.state == "failed"
    assert "deadline" in hs.error
    assert not hs.expired(104.0)  # reported once


def test_a_finished_handshake_never_expires() -> None:
    hs = ServerHandshake(SECRET, now=0.0)
    answer, _ = client_answer(SECRET, hs.outgoing(), "hello")
    hs.receive(answer)
    assert not hs.expired(HANDSHAKE_SECONDS * 10)
    assert hs.state == "done"


def test_the_proof_is_bound_to_the_nonce_and_the_answer() -> None:
    hs = ServerHandshake(SECRET, now=0.0, nonce=NONCE)
    hs.outgoing()
    answer, _ = client_answer(SECRET, NONCE, "hello")
    hs.receive(answer)
    body = answer[MAC_BYTES + 4 :]
    assert hs.outgoing() == mac(SECRET, SERVER_LABEL, NONCE, body)


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_a_deadline_must_be_in_the_future(timeout) -> None:
    with pytest.raises(ValueError, match="above 0 seconds"):
        ServerHandshake(SECRET, now=0.0, timeout=timeout)


@given(
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=20),
    after=st.binary(max_size=40),
)
def test_the_client_half_completes_against_the_server_half_however_the_bytes_come(
    cuts, after
) -> None:
    """The client's half, fed the server's challenge and proof (and the first frames after
    it) in any split, answers once, checks the proof, and hands back what followed it."""
    server = ServerHandshake(SECRET, now=0.0)
    client = ClientHandshake(SECRET, {"channel": ("a", "b"), "attempt": 2})
    challenge = server.outgoing()
    rest = b""
    answered = False
    for part in chunks(challenge, cuts):
        assert client.state == "challenge"
        rest += client.receive(part)
    assert client.state == "proof"
    answer = client.outgoing()
    assert answer
    assert client.outgoing() == b""  # once
    server.receive(answer)
    assert server.hello == {"channel": ("a", "b"), "attempt": 2}
    for part in chunks(server.outgoing() + after, cuts):
        answered = answered or client.state == "done"
        if answered:
            rest += part  # the frames' bytes, after the proof
        else:
            rest += client.receive(part)
    assert client.state == "done"
    assert rest == after


def test_the_client_half_refuses_a_server_without_the_secret() -> None:
    client = ClientHandshake(SECRET, "hello")
    client.receive(NONCE)
    answer = client.outgoing()
    impostor = mac(new_secret(), SERVER_LABEL, NONCE, answer[MAC_BYTES + 4 :])
    with pytest.raises(AuthenticationError, match="does not know the job secret"):
        client.receive(impostor)
    assert client.state != "done"


@pytest.mark.parametrize("state", ["challenge", "proof"])
def test_the_client_half_says_when_the_server_closed_during_the_handshake(state: str) -> None:
    client = ClientHandshake(SECRET, "hello")
    if state == "proof":
        client.receive(NONCE)
    with pytest.raises(FrameError, match="closed the connection during the handshake"):
        client.receive(b"")
