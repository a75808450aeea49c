"""A host's control client takes only control-plane messages from the coordinator: a
frame that unpickles to something else, or a second address book, is a clear
:class:`ControlError`, not an error deep in the host's loop."""

from __future__ import annotations

import time
from typing import Any

import pytest

from absnb.core.ids import CheckpointId, TaskId
from absnb.runtime.connections.wire import new_secret
from absnb.runtime.control_plane.client import ControlClient
from absnb.runtime.control_plane.messages import HELLO, AddressBook, ControlError, Register, Trigger
from absnb.runtime.control_plane.server_loop import SelectorServer, _Conn

SECRET = new_secret()


class Coordinator(SelectorServer):
    """Answers a registration with the address book, then ``then``."""

    def __init__(self, then: list[Any]) -> None:
        super().__init__(SECRET, hello=HELLO)
        self.then = then

    def _dispatch(self, conn: _Conn, message: Any) -> None:
        if isinstance(message, Register):
            self._send(conn, AddressBook(0, {0: message.data_address}, {}, CheckpointId(0)))
            for later in self.then:
                self._send(conn, later)


def commands(then: list[Any]) -> list[Any]:
    """What the client's polls return until it has something (or raises)."""
    with Coordinator(then) as server:
        server.start()
        client = ControlClient(
            server.address,
            SECRET,
            host_id=0,
            attempt=0,
            tasks=[TaskId("a", 0)],
            data_address=("127.0.0.1", 1),
            timeout=5,
        )
        with client:
            client.register()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if got := client.poll():
                    return got
                time.sleep(0.01)
    return []


def test_commands_after_the_address_book_are_handed_out() -> None:
    trigger = Trigger(CheckpointId(1), (TaskId("a", 0),))
    assert commands([trigger]) == [trigger]


@pytest.mark.parametrize(
    ("then", "named"),
    [(["a string"], "'str'"), ([AddressBook(0, {}, {}, CheckpointId(0))], "AddressBook")],
    ids=["not-a-message", "second-book"],
)
def test_anything_but_a_command_is_a_clear_control_error(then: list[Any], named: str) -> None:
    with pytest.raises(ControlError, match=named):
        commands(then)
