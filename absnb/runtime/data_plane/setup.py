"""Setting up a data plane's channels (a mix-in of
:class:`~absnb.runtime.data_plane.transport.DataPlane`): declare the inputs, connect the
outputs to their receivers, wait until every input has connected. The decisions and the
sender's handshake steps are in :mod:`absnb.runtime.data_plane.connect`."""

from __future__ import annotations

import selectors
import time
from collections.abc import Callable, Iterable, Mapping

from absnb.core.ids import ChannelId
from absnb.runtime.connections.admission import Admission
from absnb.runtime.connections.handshake import ClientHandshake
from absnb.runtime.connections.listener import Listener
from absnb.runtime.connections.wire import dumps, encode
from absnb.runtime.data_plane.channel_ends import _Conn, _Input, _Output
from absnb.runtime.data_plane.connect import (
    CREDIT,
    RETRY_SECONDS,
    connect_round,
    match_input,
    missing_inputs_error,
)
from absnb.runtime.data_plane.flow import SendQueue
from absnb.runtime.data_plane.priority import PRIORITY

DATA = 1
"""Frame kind of a batch: a pickled list of messages."""
_INPUT_KINDS = (DATA, PRIORITY)
_OUTPUT_KINDS = (CREDIT,)


class SettingUp:
    """The set-up half of a data plane: its channels declared, connected and admitted."""

    _secret: bytes
    _memory_bytes: int
    _spill_dir: str | None
    _sel: selectors.BaseSelector
    _inputs: dict[ChannelId, _Input]
    _by_name: dict[tuple[str, str], _Input]
    _outputs: dict[ChannelId, _Output]
    _refused: list[str]
    attempt: int
    address: tuple[str, int]
    _credits: int
    _listener: Listener
    _io: Callable[[float], None]
    _write: Callable[[_Conn, bytes], None]

    def expect_inputs(self, channels: Iterable[ChannelId]) -> None:
        """Declare input channels; connections for any other channel are refused."""
        for c in channels:
            c = ChannelId(*c)
            if c not in self._inputs:
                inp = self._inputs[c] = _Input(c, self._sel, _INPUT_KINDS)
                self._by_name[(str(c.src), str(c.dst))] = inp

    def connect_outputs(
        self,
        routes: Mapping[ChannelId, tuple[str, int]],
        timeout: float = 30,
        check: Callable[[], None] | None = None,
    ) -> None:
        """Open one connection per output channel to its receiver's ``address``.

        Retries a refused or failed connect until ``timeout``; returns once every receiver
        has accepted (sent its first credit). Accepts this host's own inputs meanwhile.
        ``check``, if given, is called every few ms while waiting; whatever it raises ends
        the wait (a host uses it to hear that its attempt is over).

        Raises:
            ConnectionError: a receiver closed a connection after the handshake (wrong
                secret, another attempt, or a channel it does not expect).
            TimeoutError: some channel could not be connected in time.
        """
        deadline = time.monotonic() + timeout
        pending = []
        for c, address in routes.items():
            c = ChannelId(*c)
            if c in self._outputs:
                raise ValueError(f"output channel {c} is already connected")
            sends = SendQueue(self._memory_bytes, self._spill_dir)
            route = (address[0], int(address[1]))
            hello = ClientHandshake(self._secret, {"channel": c, "attempt": self.attempt})
            out = self._outputs[c] = _Output(c, self._sel, _OUTPUT_KINDS, route, sends, hello)
            pending.append(out)
        while not connect_round(pending, deadline, timeout, self.attempt, check):
            self._io(max(0.0, min(RETRY_SECONDS, deadline - time.monotonic())))

    def wait_ready(self, timeout: float = 30, check: Callable[[], None] | None = None) -> None:
        """Accept connections until every expected input channel has connected.

        ``check``, if given, is called every few ms while waiting; whatever it raises ends
        the wait.

        Raises:
            TimeoutError: naming the input channels that did not connect in time.
        """
        deadline = time.monotonic() + timeout
        while True:
            missing = [c for c, i in self._inputs.items() if not i.connected]
            if not missing:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise missing_inputs_error(
                    self.address, self.attempt, timeout, missing, self._refused
                )
            if check is None:
                self._io(left)
            else:
                self._io(min(left, RETRY_SECONDS))
                check()

    def _admit(self, admission: Admission) -> None:
        """A peer proved it knows the secret: connect it to the input channel its hello
        names (:func:`~absnb.runtime.data_plane.connect.match_input`), or close it without a
        word."""
        hs = admission.handshake
        inp, reason = match_input(hs.hello, self.attempt, self._inputs, self._by_name)
        if inp is None:
            self._listener.refuse(admission, reason)
            return
        inp.sock = self._listener.admit(admission)
        inp.connected = True
        inp.watch()
        # the server's proof, then the first credit that says the channel is accepted
        self._write(inp, hs.outgoing() + encode(CREDIT, dumps(self._credits)))
