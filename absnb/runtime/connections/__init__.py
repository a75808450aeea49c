"""The connections both planes share: the data plane's channels
(:class:`~absnb.runtime.transport.DataPlane`) and the control plane
(:class:`~absnb.runtime.server_loop.SelectorServer`, the host's
:class:`~absnb.runtime.control_client.ControlClient`).

One job per module: :mod:`~absnb.runtime.connections.frames` reads and writes frames,
:mod:`~absnb.runtime.connections.admission` admits a connecting peer (it proves that it knows
the job secret by its deadline, or it is dropped), :mod:`~absnb.runtime.connections.listener`
is the selector loop that accepts, admits and reports what is ready, and
:mod:`~absnb.runtime.connections.link` keeps one connection's socket for a non-blocking loop
(the data plane's channel ends and the control server's connections). Both planes' clients
prove the secret with one handshake, :class:`~absnb.runtime.handshake.ClientHandshake`.
"""
