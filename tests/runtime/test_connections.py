"""The connections both planes share: the frame reader gives the same frames however a
stream is split and refuses corruption (a kind the connection does not carry, an over-long
frame, a payload that does not unpickle); the listener admits a peer that proves the secret,
hands the plane its hello, and drops a silent peer at its deadline, noting why."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.runtime.connections.admission import Admission
from absnb.runtime.connections.frames import FrameReader, frame
from absnb.runtime.connections.handshake import client_handshake
from absnb.runtime.connections.listener import Listener
from absnb.runtime.connections.wire import HEADER, MAX_FRAME, FrameError, new_secret
from tests.runtime.test_handshake import chunks

SECRET = new_secret()
messages = st.lists(
    st.tuples(st.sampled_from([1, 2]), st.one_of(st.integers(), st.text(), st.binary())),
    max_size=8,
)


@given(sent=messages, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_frames_come_out_whole_and_in_order_however_the_stream_is_split(sent, cuts) -> None:
    stream = b"".join(frame(kind, message) for kind, message in sent)
    reader = FrameReader((1, 2))
    got = [f for piece in chunks(stream, cuts) for f in reader.feed(piece)]
    assert got == sent
    assert reader.pending == 0


@pytest.mark.parametrize(
    "corrupt",
    [
        frame(3, "a kind this connection does not carry"),
        HEADER.pack(MAX_FRAME + 1, 1),  # refused from its header alone
        HEADER.pack(3, 1) + b"\x80\x05x",  # not a pickle
    ],
    ids=["kind", "too-long", "not-a-pickle"],
)
def test_a_corrupt_frame_is_refused_with_a_frame_error(corrupt: bytes) -> None:
    reader = FrameReader((1, 2))
    assert reader.feed(frame(1, "fine")) == [(1, "fine")]
    with pytest.raises(FrameError):
        reader.feed(corrupt)


def test_a_reader_without_kinds_is_refused() -> None:
    with pytest.raises(ValueError, match="frame kinds"):
        FrameReader(())


def select_until(listener: Listener, done, seconds: float = 5.0) -> list[object]:
    """Run the listener's loop until ``done(ready)``; return what it handed out."""
    handed: list[object] = []
    deadline = time.monotonic() + seconds
    while not done(handed) and time.monotonic() < deadline:
        handed.extend(data for data, _ in listener.select(0.05))
    return handed


def test_a_proven_peer_is_handed_to_the_plane_with_its_hello() -> None:
    listener = Listener(SECRET)
    try:
        with socket.create_connection(listener.address) as peer:
            peer.settimeout(5)
            # the peer's side blocks on the challenge, then on the proof: the loop runs here
            thread = threading.Thread(target=client_handshake, args=(peer, SECRET, "hi"))
            thread.start()
            handed = select_until(listener, lambda h: bool(h))
            assert len(handed) == 1
            assert type(handed[0]) is Admission
            admission = handed[0]
            assert admission.handshake.hello == "hi"
            sock = listener.admit(admission)
            sock.sendall(admission.handshake.outgoing())  # the server's proof
            thread.join(5)
            assert not thread.is_alive()
            sock.close()
    finally:
        listener.close("the test ended")


def test_a_silent_peer_is_dropped_at_its_deadline_and_the_reason_noted() -> None:
    refused: list[str] = []
    listener = Listener(SECRET, handshake_timeout=0.2, on_refused=refused.append)
    try:
        with socket.create_connection(listener.address) as peer:
            peer.settimeout(5)
            assert select_until(listener, lambda _: bool(refused)) == []
            assert "deadline" in refused[0]
            peer.recv(64)  # the challenge
            assert peer.recv(64) == b""  # then closed without a word
    finally:
        listener.close("the test ended")
