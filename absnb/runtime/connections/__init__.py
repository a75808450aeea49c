"""The connections both planes share: the data plane's channels
(:class:`~absnb.runtime.data_plane.transport.DataPlane`) and the control plane
(:class:`~absnb.runtime.control_plane.server_loop.SelectorServer`, the host's
:class:`~absnb.runtime.control_plane.client.ControlClient`).

One job per module: :mod:`.wire` is the wire format both planes use, :mod:`.handshake`
both halves of the job-secret handshake (each plane's client proves the secret with
:class:`~.handshake.ClientHandshake`), :mod:`.frames` reads and writes frames,
:mod:`.admission` admits a connecting peer (it proves that it knows the job secret by its
deadline, or it is dropped), :mod:`.listener` is the selector loop that accepts, admits and
reports what is ready, and :mod:`.link` keeps one connection's socket for a non-blocking
loop (the data plane's channel ends and the control server's connections).
"""
