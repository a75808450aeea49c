"""Setting up a data plane's channels: connecting its outputs (answering each
receiver's challenge, checking its proof) and taking or refusing the inputs its
:class:`~absnb.runtime.connections.listener.Listener` admitted (each proved it knows the job
secret by its deadline). A mixin of :class:`~absnb.runtime.transport.DataPlane`, which
does the rest.

Connections. The sender opens one TCP connection per output channel
(:meth:`DataPlane.connect_outputs`) and answers the receiver's challenge
(:func:`~absnb.runtime.wire.client_answer`) with hello ``{"channel": ChannelId, "attempt": n}``.
The receiver checks it with a :class:`~absnb.runtime.handshake.ServerHandshake` fed from its
loop (never blocking it: a peer that does not answer by its deadline is dropped), proves to
the sender that it knows the secret too (the sender checks that proof before it reads a
frame), and maps the connection to the channel, or closes it without a word: a wrong
secret, another attempt (an old attempt's messages are dropped), a channel it does not
expect, or one already connected. Accepting is acknowledged by the receiver's first CREDIT
frame.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from absnb.core.ids import ChannelId
from absnb.runtime.channel_ends import _Input, _Output
from absnb.runtime.connections.admission import Admission
from absnb.runtime.connections.listener import Listener
from absnb.runtime.flow import SendQueue
from absnb.runtime.handshake import HANDSHAKE_SECONDS
from absnb.runtime.wire import NONCE_BYTES, client_answer, dumps, encode

CREDIT = 2
"""Frame kind of a credit grant: a pickled count of frames."""
HANDSHAKE_TIMEOUT = HANDSHAKE_SECONDS
"""Seconds a connecting peer has to answer the receiver's challenge."""
_RETRY_SECONDS = 0.05


class Connecting:
    """Connection setup of :class:`~absnb.runtime.transport.DataPlane` (see the module
    docstring); the attributes are the data plane's."""

    attempt: int
    address: tuple[str, int]
    _secret: bytes
    _credits: int
    _memory_bytes: int
    _spill_dir: str | None
    _listener: Listener
    _inputs: dict[ChannelId, _Input]
    _by_name: dict[tuple[str, str], _Input]
    _outputs: dict[ChannelId, _Output]
    _refused: list[str]

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
            out = self._outputs[c] = _Output(c, (CREDIT,), (address[0], int(address[1])), sends)
            pending.append(out)
        while True:
            now = time.monotonic()
            for out in pending:
                if out.state == "connecting" and out.next_try <= now:
                    self._try_connect(out, deadline - now)
            refused = [o for o in pending if o.state in ("refused", "closed")]
            if refused:
                raise ConnectionError(
                    "the receiver closed the connection after the handshake (wrong job secret, "
                    f"another attempt than {self.attempt}, or a channel it does not expect), "
                    "or failed to prove it knows the job secret: "
                    + ", ".join(
                        f"{o.channel} to {o.address[0]}:{o.address[1]}"
                        + (f" ({o.error})" if o.error else "")
                        for o in refused
                    )
                )
            waiting = [o for o in pending if o.state != "open"]
            if not waiting:
                return
            if check is not None:
                check()
            now = time.monotonic()
            if now >= deadline:
                raise TimeoutError(
                    f"could not connect output channels within {timeout:g} s: "
                    + "; ".join(
                        f"{o.channel} to {o.address[0]}:{o.address[1]} ({o.state}"
                        + (f", {o.error}" if o.error else "")
                        + ")"
                        for o in waiting
                    )
                )
            self._io(min(_RETRY_SECONDS, deadline - now))

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
                refused = f"; refused: {'; '.join(self._refused)}" if self._refused else ""
                raise TimeoutError(
                    f"the data plane at {self.address[0]}:{self.address[1]} (attempt "
                    f"{self.attempt}) waited {timeout:g} s for input channels that never "
                    f"connected: {', '.join(map(str, missing))}{refused}"
                )
            if check is None:
                self._io(left)
            else:
                self._io(min(left, _RETRY_SECONDS))
                check()

    def _try_connect(self, out: _Output, left: float) -> None:
        try:
            sock = socket.create_connection(out.address, timeout=max(0.1, min(5.0, left)))
        except OSError as e:
            out.error = f"{type(e).__name__}: {e}"
            out.next_try = time.monotonic() + _RETRY_SECONDS
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(HANDSHAKE_TIMEOUT)
        out.sock = sock
        out.state = "nonce"
        self._rewatch(out)

    def _answer_challenge(self, out: _Output) -> None:
        """The receiver's challenge is readable: answer it (never blocks once it is here)."""
        sock = out.live()
        try:
            peek = sock.recv(NONCE_BYTES, socket.MSG_PEEK)
        except OSError as e:
            self._lost(out, e)
            return
        if not peek:
            self._lost(out, None)
            return
        if len(peek) < NONCE_BYTES:
            return
        hello = {"channel": out.channel, "attempt": self.attempt}
        try:
            nonce = sock.recv(NONCE_BYTES)
            answer, out.proof = client_answer(self._secret, nonce, hello)
            sock.sendall(answer)
        except OSError as e:
            self._lost(out, e)
            return
        sock.setblocking(False)
        out.state = "proof"  # the receiver's proof comes next, read by _read_output

    def _admit(self, admission: Admission) -> None:
        """A peer proved it knows the secret: connect it to the input channel its hello
        names, or close it without a word (another attempt, a channel this plane does not
        expect, or one already connected)."""
        hs = admission.handshake
        inp, reason = self._match(hs.hello)
        if inp is None:
            self._listener.refuse(admission, reason)
            return
        inp.sock = self._listener.admit(admission)
        inp.connected = True
        self._rewatch(inp)
        # the server's proof, then the first credit that says the channel is accepted
        self._write(inp, hs.outgoing() + encode(CREDIT, dumps(self._credits)))

    def _match(self, hello: Any) -> tuple[_Input | None, str]:
        if not isinstance(hello, dict):
            return None, f"a hello that is not a dict: {hello!r}"
        attempt, channel = hello.get("attempt"), hello.get("channel")
        if attempt != self.attempt:
            return None, f"channel {channel} of attempt {attempt}, this is attempt {self.attempt}"
        inp = None
        if isinstance(channel, tuple) and len(channel) == 2:
            try:
                inp = self._inputs.get(channel)  # type: ignore[call-overload]  # a peer's tuple, looked up as it came
            except TypeError:  # unhashable
                inp = None
            if inp is None and all(isinstance(s, str) for s in channel):
                inp = self._by_name.get(channel)
        if inp is None:
            return None, f"channel {channel!r} is not an expected input"
        if inp.connected:
            return None, f"channel {inp.channel} is already connected"
        return inp, ""

    # -- the data plane's own ------------------------------------------------------------
    def _io(self, timeout: float) -> None:
        raise NotImplementedError

    def _rewatch(self, conn: Any) -> None:
        raise NotImplementedError

    def _write(self, conn: Any, data: bytes) -> None:
        raise NotImplementedError

    def _recv(self, conn: Any) -> bytes | None:
        raise NotImplementedError

    def _lost(self, conn: Any, error: OSError | None) -> None:
        raise NotImplementedError
