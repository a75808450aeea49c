"""Setting up a data plane's channels: connecting its outputs (answering each
receiver's challenge, checking its proof) and admitting its inputs (a
:class:`~absnb.runtime.handshake.ServerHandshake` per connection, fed by the loop, with a
deadline). A mixin of :class:`~absnb.runtime.transport.DataPlane`, which does the rest.

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

import contextlib
import selectors
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from absnb.core.ids import ChannelId
from absnb.runtime.channel_ends import _Admission, _Input, _Output
from absnb.runtime.flow import SendQueue
from absnb.runtime.handshake import HANDSHAKE_SECONDS, ServerHandshake
from absnb.runtime.wire import NONCE_BYTES, client_answer, dumps, encode

CREDIT = 2
"""Frame kind of a credit grant: a pickled count of frames."""
HANDSHAKE_TIMEOUT = HANDSHAKE_SECONDS
"""Seconds a connecting peer has to answer the receiver's challenge."""
_READ = selectors.EVENT_READ
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
    _sel: Any
    _listener: socket.socket
    _inputs: dict[ChannelId, _Input]
    _by_name: dict[tuple[str, str], _Input]
    _outputs: dict[ChannelId, _Output]
    _admissions: set[_Admission]
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
            out = self._outputs[c] = _Output(c, (address[0], int(address[1])), sends)
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

    def _accept_all(self) -> None:
        while True:
            try:
                conn, peer = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # e.g. out of file descriptors: try again later
                self._refused.append(f"accept failed: {e}")
                return
            self._admit(conn, peer)

    def _admit(self, sock: socket.socket, peer: Any) -> None:
        """Challenge a new connection; it answers by its deadline or is dropped, and this
        loop never waits for it (:class:`~absnb.runtime.handshake.ServerHandshake`)."""
        sock.setblocking(False)
        admission = _Admission(sock, peer, ServerHandshake(self._secret, time.monotonic()))
        self._admissions.add(admission)
        self._sel.register(sock, _READ, admission)
        self._admission_send(admission)

    def _admission_send(self, admission: _Admission) -> bool:
        out = admission.handshake.outgoing()
        try:
            if out and admission.sock.send(out) < len(out):  # a few dozen bytes: never short
                raise OSError("short send during the handshake")
        except OSError as e:
            self._end_admission(admission, f"handshake failed: {e}")
            return False
        return True

    def _read_admission(self, admission: _Admission) -> None:
        hs = admission.handshake
        data = self._recv(admission)
        if data is None:
            return
        hs.receive(data)
        if hs.state == "waiting":
            return
        if hs.state == "failed":
            self._end_admission(admission, hs.error)
            return
        inp, reason = self._match(hs.hello)
        if inp is None:
            self._end_admission(admission, reason)
            return
        self._sel.unregister(admission.sock)
        self._admissions.discard(admission)
        sock = admission.sock
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        inp.sock = sock
        inp.connected = True
        self._rewatch(inp)
        # the server's proof, then the first credit that says the channel is accepted
        self._write(inp, hs.outgoing() + encode(CREDIT, dumps(self._credits)))

    def _end_admission(self, admission: _Admission, reason: str) -> None:
        self._admissions.discard(admission)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(admission.sock)
        self._refuse(admission.sock, admission.peer, reason)

    def _expire_admissions(self) -> None:
        now = time.monotonic()
        for admission in [a for a in self._admissions if a.handshake.expired(now)]:
            self._end_admission(admission, admission.handshake.error)

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

    def _refuse(self, sock: socket.socket, peer: Any, reason: str) -> None:
        self._refused.append(f"{peer}: {reason}")
        sock.close()

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
