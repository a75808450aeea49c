"""Setting up a data plane's channels, the decisions and the sender's handshake steps of
:class:`~absnb.runtime.data_plane.transport.DataPlane` (which drives them from its loop).

Connections. The sender opens one TCP connection per output channel
(:meth:`DataPlane.connect_outputs <absnb.runtime.data_plane.setup.SettingUp.connect_outputs>`,
:func:`try_connect`) and answers the receiver's challenge with hello
``{"channel": ChannelId, "attempt": n}``
(:class:`~absnb.runtime.connections.handshake.ClientHandshake`, the control client's too, fed by
:func:`handshake_step`). The receiver's :class:`~absnb.runtime.connections.listener.Listener` checks
the answer without blocking its loop (a peer that does not answer by its deadline is dropped),
proves to the sender that it knows the secret too (the sender checks that proof before it reads a
frame), and maps the connection to the channel (:func:`match_input`), or closes it without a word: a
wrong secret, another attempt (an old attempt's messages are dropped), a channel it does not expect,
or one already connected. Accepting is acknowledged by the receiver's first CREDIT frame.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable, Mapping

from absnb.core.ids import ChannelId
from absnb.runtime.connections.handshake import HANDSHAKE_SECONDS
from absnb.runtime.data_plane.channel_ends import _Input, _Output

CREDIT = 2
"""Frame kind of a credit grant: a pickled count of frames."""
HANDSHAKE_TIMEOUT = HANDSHAKE_SECONDS
"""Seconds a connecting peer has to answer the receiver's challenge."""
RETRY_SECONDS = 0.05
"""How long a refused connect waits before the next try, and a wait between its checks."""


def connect_round(
    pending: list[_Output],
    deadline: float,
    timeout: float,
    attempt: int,
    check: Callable[[], None] | None,
) -> bool:
    """One round of
    :meth:`DataPlane.connect_outputs <absnb.runtime.data_plane.setup.SettingUp.connect_outputs>`:
    (re)try the connects that are due; True once every output is open (the loop's I/O runs between
    rounds).

    Raises:
        ConnectionError: a receiver refused a channel (:func:`refused_error`).
        TimeoutError: ``deadline`` passed with channels unconnected; whatever ``check``
            raises.
    """
    now = time.monotonic()
    for out in pending:
        if out.state == "connecting" and out.next_try <= now:
            try_connect(out, deadline - now)
    refused = [o for o in pending if o.state in ("refused", "closed")]
    if refused:
        raise refused_error(refused, attempt)
    waiting = [o for o in pending if o.state != "open"]
    if not waiting:
        return True
    if check is not None:
        check()
    if time.monotonic() >= deadline:
        raise unconnected_error(waiting, timeout)
    return False


def try_connect(out: _Output, left: float) -> None:
    """Open the output's connection (``left`` seconds remain): its handshake runs next, or,
    refused, it retries after :data:`RETRY_SECONDS`."""
    try:
        sock = socket.create_connection(out.address, timeout=max(0.1, min(5.0, left)))
    except OSError as e:
        out.error = f"{type(e).__name__}: {e}"
        out.next_try = time.monotonic() + RETRY_SECONDS
        return
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(False)
    out.sock = sock
    out.state = "handshake"
    out.watch()


def handshake_step(out: _Output, data: bytes) -> bytes | None:
    """Bytes from the receiver during the output's handshake
    (:class:`~absnb.runtime.connections.handshake.ClientHandshake`): the bytes after the receiver's
    proof (``b""`` while it is incomplete; the state is ``ack`` once it checks), ``None`` if the
    connection is lost (``out.error`` says why). The caller sends
    ``out.handshake.outgoing()``."""
    try:
        rest = out.handshake.receive(data)
    except ConnectionError as e:
        out.error = str(e)
        return None
    if out.handshake.state == "done":
        out.state = "ack"
    return rest


def match_input(
    hello: object,
    attempt: int,
    inputs: Mapping[ChannelId, _Input],
    by_name: Mapping[tuple[str, str], _Input],
) -> tuple[_Input | None, str]:
    """The input channel a proven peer's ``hello`` connects, or ``None`` and why it is
    refused: another attempt, a channel not expected (looked up as it came, then by its
    tasks' names), or one already connected."""
    if not isinstance(hello, dict):
        return None, f"a hello that is not a dict: {hello!r}"
    peer_attempt, channel = hello.get("attempt"), hello.get("channel")
    if peer_attempt != attempt:
        return None, f"channel {channel} of attempt {peer_attempt}, this is attempt {attempt}"
    inp = None
    if isinstance(channel, tuple) and len(channel) == 2:
        try:
            inp = inputs.get(ChannelId(*channel))
        except TypeError:  # unhashable
            inp = None
        if inp is None and all(isinstance(s, str) for s in channel):
            inp = by_name.get(channel)
    if inp is None:
        return None, f"channel {channel!r} is not an expected input"
    if inp.connected:
        return None, f"channel {inp.channel} is already connected"
    return inp, ""


def _route(out: _Output) -> str:
    return f"{out.channel} to {out.address[0]}:{out.address[1]}"


def refused_error(refused: Iterable[_Output], attempt: int) -> ConnectionError:
    """The error of
    :meth:`DataPlane.connect_outputs <absnb.runtime.data_plane.setup.SettingUp.connect_outputs>`
    when receivers refused channels."""
    return ConnectionError(
        "the receiver closed the connection after the handshake (wrong job secret, "
        f"another attempt than {attempt}, or a channel it does not expect), "
        "or failed to prove it knows the job secret: "
        + ", ".join(_route(o) + (f" ({o.error})" if o.error else "") for o in refused)
    )


def unconnected_error(waiting: Iterable[_Output], timeout: float) -> TimeoutError:
    """The error of
    :meth:`DataPlane.connect_outputs <absnb.runtime.data_plane.setup.SettingUp.connect_outputs>`
    when channels did not connect."""
    return TimeoutError(
        f"could not connect output channels within {timeout:g} s: "
        + "; ".join(
            f"{_route(o)} ({o.state}" + (f", {o.error}" if o.error else "") + ")" for o in waiting
        )
    )


def missing_inputs_error(
    address: tuple[str, int],
    attempt: int,
    timeout: float,
    missing: Iterable[ChannelId],
    refused: list[str],
) -> TimeoutError:
    """The error of
    :meth:`DataPlane.wait_ready <absnb.runtime.data_plane.setup.SettingUp.wait_ready>` naming the
    inputs that never connected."""
    why = f"; refused: {'; '.join(refused)}" if refused else ""
    return TimeoutError(
        f"the data plane at {address[0]}:{address[1]} (attempt {attempt}) waited {timeout:g} s "
        f"for input channels that never connected: {', '.join(map(str, missing))}{why}"
    )


def not_an_input(channel: ChannelId) -> ValueError:
    """The error of using a channel the data plane was not told to expect."""
    return ValueError(
        f"{channel} is not an input channel of this host; declare it with expect_inputs()"
    )


def cannot_send(channel: ChannelId, out: _Output | None) -> Exception:
    """Why nothing can be sent on ``channel`` (``out``: its sending end, if it has one)."""
    if out is None:
        return ValueError(
            f"{channel} is not an output channel of this host; connect it with connect_outputs()"
        )
    return ConnectionError(f"output channel {channel} is {out.state}: {out.error}")
