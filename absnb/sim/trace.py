"""Trace files: a run as JSON lines, to save, edit by hand and replay.

The first line is a header naming the job (its builder and parameters) and the protocol;
every further line is one action::

    {"absnb": "trace", "version": 1, "job": "bank_transfer", "params": {},
     "protocol": "chandy-lamport", "checkpoint_interval": null, "allow_deadlock": false}
    {"action": "transfer", "src": "A", "dst": "B", "amount": 1000}
    {"action": "trigger", "at": "A"}
    {"action": "deliver", "channel": "A->B"}

The action kinds are ``deliver`` (``channel``), ``emit`` (``task``), ``transfer`` (``src``,
``dst``, ``amount``), ``trigger`` (optional ``at``), ``notify`` (``task``, ``checkpoint``),
``crash`` (``task``), ``recover`` (``mode``: ``full`` or ``partial``), ``wait``, ``decline``
(``task``, optional ``reason``) and ``end`` (``channel``); :mod:`absnb.sim.trace_actions`
reads and writes them. Blank lines and lines starting with ``#`` are ignored, and so are
keys a reader does not know: saved traces add ``step`` and a human ``note`` to every line,
a script written by hand needs only the action keys. Replaying a saved trace gives the
same events as the run it was saved from.

**Times (a delay model).** Any action line may carry ``"time": T``, a number >= 0 in any
unit: when the action happens. A schedule given in time units (a message sent at t=2 that
arrives after a delay of 3 is a ``deliver`` at ``"time": 5``) is written down line by line in
any order; the replay takes the actions in order of time (lines with equal times in the
order written), and a line without a time happens at the time of the line before it (0 at
the start). The report then gives every step's time.

**Custom jobs.** ``job`` is a built-in builder (``word_count``, ``bank_transfer``,
``cyclic``) or a user's own, named ``package.module:function`` (see
:mod:`absnb.jobs.custom`): the replay imports that module and calls the function with
``params``, so replay only traces whose job module you trust.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from absnb.core.errors import AbsnbError, ActionNotEnabledError, TraceFormatError
from absnb.jobs import BUILDERS, build_job
from absnb.jobs.custom import build_custom, is_custom
from absnb.sim.actions import Action
from absnb.sim.events import Event
from absnb.sim.schedulers import ScriptedScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.trace_actions import action_from_json, action_to_json
from absnb.sim.world import World

FORMAT = "trace"
VERSION = 1
HEADER_EXAMPLE = (
    '{"absnb": "trace", "version": 1, "job": "bank_transfer", "params": {}, '
    '"protocol": "chandy-lamport"}'
)


@dataclass(frozen=True)
class TraceHeader:
    """What a trace's first line says: enough to build the starting world again."""

    job: str
    params: dict[str, Any]
    protocol: str
    checkpoint_interval: int | None = None
    allow_deadlock: bool = False
    alignment_timeout: float | None = None

    @classmethod
    def of(cls, world: World) -> TraceHeader:
        """The header of a run of ``world`` (its job must come from a known builder)."""
        job = world.job
        if job.builder not in BUILDERS and not is_custom(job.builder):
            raise TraceFormatError(
                f"job {job.name!r} was not made by a builder absnb knows "
                f"({', '.join(BUILDERS)}) nor by one named package.module:function, so a "
                "trace cannot rebuild it: build the job with absnb.build_job or "
                "absnb.jobs.custom.build_custom"
            )
        return cls(
            job=job.builder,
            params=dict(job.params),
            protocol=world.protocol.name,
            checkpoint_interval=world.checkpoint_interval,
            allow_deadlock=world.allow_deadlock,
            alignment_timeout=getattr(world.protocol, "alignment_timeout", None),
        )

    def to_json(self) -> dict[str, Any]:
        """The header line as a JSON object."""
        obj = {
            "absnb": FORMAT,
            "version": VERSION,
            "job": self.job,
            "params": self.params,
            "protocol": self.protocol,
            "checkpoint_interval": self.checkpoint_interval,
            "allow_deadlock": self.allow_deadlock,
        }
        if self.alignment_timeout is not None:
            obj["alignment_timeout"] = self.alignment_timeout
        return obj

    def build_world(self) -> World:
        """A fresh world for this job and protocol.

        Raises:
            AbsnbError: the job, its parameters or the protocol are not valid.
        """
        try:
            build = build_custom if is_custom(self.job) else build_job
            job = build(self.job, **self.params)
        except AbsnbError:
            raise
        except (TypeError, ValueError, AttributeError, KeyError) as e:
            raise TraceFormatError(
                f"the parameters {self.params} do not fit job {self.job!r} ({e}): use the "
                "parameter names of absnb.build_job"
            ) from None
        return World(
            job,
            self.protocol,
            checkpoint_interval=self.checkpoint_interval,
            allow_deadlock=self.allow_deadlock,
            alignment_timeout=self.alignment_timeout,
        )


@dataclass
class Trace:
    """A loaded trace: its header, the starting world, the actions and their line numbers."""

    path: str
    header: TraceHeader
    world: World
    actions: list[Action]
    lines: list[int]
    times: list[float] | None = None
    """Each action's time (in order of time), when the trace gives times; else None."""


# -- files -------------------------------------------------------------------------------------
def save_trace(
    path: str | Path,
    source: World | TraceHeader,
    actions: Sequence[Action],
    events: Sequence[Event] | None = None,
    *,
    info: Mapping[str, Any] | None = None,
    times: Sequence[float] | None = None,
) -> None:
    """Write a trace: the header of ``source`` (a world of the run, or a header), then one
    line per action. With ``events`` (the run's trace), every line also gets its ``step``
    and a ``note`` (the event's description). ``info`` adds keys to the header (how the
    run was scheduled, say); readers ignore them. ``times`` gives every action its time.
    """
    header = source if isinstance(source, TraceHeader) else TraceHeader.of(source)
    if events is not None and len(events) != len(actions):
        raise ValueError(f"{len(actions)} actions but {len(events)} events: pass the same run's")
    lines = [_dumps({**header.to_json(), **(info or {})}, "the header")]
    for i, action in enumerate(actions):
        obj = action_to_json(action)
        if events is not None:
            obj["step"] = events[i].step
            obj["note"] = events[i].describe()
        if times is not None:
            obj["time"] = times[i]
        lines.append(_dumps(obj, f"action {i}"))
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _dumps(obj: Mapping[str, Any], what: str) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise TraceFormatError(f"{what} cannot be written as JSON ({e})") from None


def load_trace(path: str | Path) -> Trace:
    """Read a trace file and build its starting world.

    Raises:
        TraceFormatError: the file cannot be read, or a line is not valid (the message
            names the file, the line, what was wrong and what to do).
    """
    lines = iter(_json_lines(path))
    first = next(lines, None)
    if first is None:
        raise TraceFormatError(
            f"{path}: the file holds no trace: its first line must be a header such as "
            f"{HEADER_EXAMPLE}"
        )
    n, obj = first
    header = _at(path, n, lambda: parse_header(obj))
    world = _at(path, n, header.build_world)
    actions: list[Action] = []
    numbers: list[int] = []
    times: list[float] = []
    timed = False
    for n, obj in lines:
        actions.append(_at(path, n, partial(action_from_json, obj, world.graph)))
        numbers.append(n)
        if isinstance(obj, Mapping) and "time" in obj:
            timed = True
            times.append(_at(path, n, partial(parse_time, obj["time"])))
        else:
            times.append(times[-1] if times else 0)
    if not timed:
        return Trace(str(path), header, world, actions, numbers)
    order = sorted(range(len(actions)), key=lambda i: times[i])  # stable: ties as written
    return Trace(
        str(path),
        header,
        world,
        [actions[i] for i in order],
        [numbers[i] for i in order],
        [times[i] for i in order],
    )


def parse_time(value: Any) -> float:
    """An action's ``time``: a number >= 0.

    Raises:
        TraceFormatError: anything else (the message names the value).
    """
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not value >= 0
        or value == float("inf")
    ):
        raise TraceFormatError(
            f"'time' must be a number >= 0 without quotes (when the action happens), not {value!r}"
        )
    return value


HEADER_KEYS = (
    "absnb",
    "version",
    "job",
    "params",
    "protocol",
    "checkpoint_interval",
    "allow_deadlock",
    "alignment_timeout",
)
"""The keys of a trace header (:meth:`TraceHeader.to_json` writes them). Others are
information for readers (``save_trace(info=...)``), ignored."""
UNREAD_SETTINGS = (
    "seed",
    "crash",
    "crash_at",
    "recovery",
    "max_checkpoints",
    "notify_steps",
    "checkpoint_timeout",
    "min_pause",
    "max_concurrent",
    "interval",
)
"""Settings of a run that a header does not take: one given there would be ignored
silently, so it is refused."""


def parse_header(obj: Any) -> TraceHeader:
    """The header a trace's first JSON line describes.

    Raises:
        TraceFormatError: it is not a header, or a key is missing or mistyped.
    """
    if not isinstance(obj, dict) or obj.get("absnb") != FORMAT:
        raise TraceFormatError(
            f"the first line must be the trace header, such as {HEADER_EXAMPLE}; "
            f"found {json.dumps(obj)[:80]}"
        )
    if obj.get("version") != VERSION:
        raise TraceFormatError(
            f"trace version {obj.get('version')!r} is not supported: this absnb reads "
            f"version {VERSION}"
        )
    unread = sorted(set(obj) & set(UNREAD_SETTINGS))
    if unread:
        raise TraceFormatError(
            f"the header sets {', '.join(map(repr, unread))}, which a trace does not read (it "
            "replays its actions, which fix the schedule, crashes and recovery): remove it; "
            f"the settings a header takes are {', '.join(HEADER_KEYS[2:])}"
        )
    for key in ("job", "protocol"):
        if not isinstance(obj.get(key), str):
            raise TraceFormatError(
                f"the header needs {key!r} as a name in quotes, as in {HEADER_EXAMPLE}"
            )
    params = obj.get("params", {})
    interval = obj.get("checkpoint_interval")
    if not isinstance(params, dict):
        raise TraceFormatError(f"'params' must be a JSON object, not {params!r}")
    if interval is not None and (not isinstance(interval, int) or isinstance(interval, bool)):
        raise TraceFormatError(
            f"'checkpoint_interval' must be a whole number or null, not {interval!r}"
        )
    allow_deadlock = obj.get("allow_deadlock", False)
    if not isinstance(allow_deadlock, bool):
        raise TraceFormatError(
            f"'allow_deadlock' must be true or false, not {json.dumps(allow_deadlock)}"
        )
    timeout = obj.get("alignment_timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool)):
        raise TraceFormatError(f"'alignment_timeout' must be a number or null, not {timeout!r}")
    return TraceHeader(
        obj["job"],
        params,
        obj["protocol"],
        interval,
        allow_deadlock,
        timeout,
    )


def _json_lines(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for every line that is not blank or a comment."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TraceFormatError(f"cannot read trace file {path}: {e}") from None
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            yield n, json.loads(stripped)
        except json.JSONDecodeError as e:
            raise TraceFormatError(
                f"{path}, line {n}: not valid JSON ({e.msg} at column {e.colno}): write one "
                "JSON object per line, and start comment lines with '#'"
            ) from None


def _at(path: str | Path, line: int, read: Callable[[], Any]) -> Any:
    """Run ``read``; an absnb error it raises becomes a TraceFormatError naming the line."""
    try:
        return read()
    except AbsnbError as e:
        raise TraceFormatError(f"{path}, line {line}: {e}") from None


def replay(path: str | Path, *, history: bool = False) -> Stepper:
    """Load a trace and run its actions; returns the stepper (its ``trace`` holds the events).

    Raises:
        TraceFormatError: the file is not a valid trace, or an action is not enabled when
            its turn comes (the message names its line and says what is enabled).
    """
    trace = load_trace(path)
    return run_trace(trace, history=history)


def run_trace(trace: Trace, *, history: bool = False) -> Stepper:
    """Run a loaded trace's actions on its world with a
    :class:`~absnb.sim.schedulers.ScriptedScheduler`."""
    stepper = Stepper(trace.world, ScriptedScheduler(trace.actions), history=history)
    try:
        stepper.run()
    except ActionNotEnabledError as e:
        line = trace.lines[len(stepper.trace)]
        raise TraceFormatError(
            f"{trace.path}, line {line}: {e}. Change or remove this line so that the script "
            "only takes enabled actions"
        ) from None
    return stepper
