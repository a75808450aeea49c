"""One long-lived ``dot -Tsvg`` process that renders graph after graph.

Starting ``dot`` costs about 40-80 ms (plugins, fonts); rendering a teaching job's graph
about 5 ms. The stepper widget redraws the graph on every click, so it keeps one process
and writes each graph to its standard input: ``dot`` reads graphs one after another from a
stream and writes each one's SVG as soon as the graph is complete (Graphviz's
``ingraphs``). The drawing is the same as a fresh ``dot``'s, but not always the text: the
group ids count the graphs of the stream (normalised here) and clusters may come in
another order, so stored notebook outputs use a fresh ``dot``
(:func:`absnb.views.graph.render_svg`).

Only DOT text this package makes goes through here (:func:`render`'s caller checks
nothing); a graph ``dot`` rejects writes no SVG, so every read has a time limit, after
which the process is stopped and the caller falls back to a one-shot ``dot``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import selectors
import shutil
import subprocess
import threading
import time

END = b"</svg>\n"
TIMEOUT_S = 10.0
"""How long one graph may take before the process is given up (then a one-shot ``dot``
renders the graph, and reports its error if it has one)."""

_PAGE = re.compile(r'id="page\d+,\d+_graph0"')
_lock = threading.Lock()
_proc: subprocess.Popen[bytes] | None = None


def _start() -> subprocess.Popen[bytes] | None:
    exe = shutil.which("dot")
    if exe is None:
        return None
    proc = subprocess.Popen(
        [exe, "-Tsvg"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
        # Not in the kernel's process group: ipykernel, shutting down, signals every child
        # in its group until none is left, and an unreaped one stays listed (a zombie), so
        # each shutdown waited out jupyter_client's 2.5 s and ended in a SIGTERM that ran
        # no exit handler. An interrupt (SIGINT to the group) no longer stops it either.
        # The process ends at exit (atexit below) or, the kernel killed, at its input's end.
        start_new_session=True,
    )
    atexit.register(_stop, proc)
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End ``proc`` and close its pipes (left open, each warned unclosed at exit)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):  # a flush into a pipe whose reader is gone
                pipe.close()


def _read_svg(proc: subprocess.Popen[bytes]) -> bytes | None:
    """Bytes from ``proc`` up to the end of one SVG; None after :data:`TIMEOUT_S`. Read
    from the descriptor (not a buffered file), so that nothing waits unseen in a buffer."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    out = bytearray()
    deadline = time.monotonic() + TIMEOUT_S
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while not out.endswith(END):
            if not sel.select(max(0.0, deadline - time.monotonic())):
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the process ended
                return None
            out += chunk
    return bytes(out)


def render(dot: str) -> str | None:
    """The SVG of ``dot`` from the long-lived process; None when there is no ``dot``, or
    it failed or took too long (the process is then stopped; the next call starts one)."""
    global _proc
    with _lock:
        if _proc is not None and _proc.poll() is not None:  # it ended: killed, or crashed
            _stop(_proc)
            _proc = None
        if _proc is None:
            _proc = _start()
        proc = _proc
        if proc is None or proc.stdin is None:
            return None
        try:
            proc.stdin.write(dot.encode("utf-8") + b"\n")
            proc.stdin.flush()
            svg = _read_svg(proc)
        except OSError:
            svg = None
        if svg is None:
            _stop(proc)
            _proc = None
            return None
        # dot numbers the graphs of a stream: the second one's group is "page0,1_graph0"
        return _PAGE.sub('id="graph0"', svg.decode("utf-8"), count=1)
