"""Ready-made real runs for the notebooks: word count on Spark (``local[2]``), a few seconds
each, with what a cell needs to show and assert its claims, read from the run's own log.

* :func:`aligned_run` (notebook 02): ABS; ``blocked`` lists every alignment that blocked a
  channel, and ``window`` is checkpoint ``shown`` close up, the one whose longest
  alignment took the largest share of it.
* :func:`crash_run` (04): a failure after checkpoint k; ``restored`` is the checkpoint
  the restart restored.
* :func:`two_phase_commit_run` (05): a file sink; its pre-commits at the snapshots, commits
  at notify, the abort of the failed attempt's transaction and the commit on restore.
* :func:`unaligned_beside_aligned` (07): unaligned checkpoints, whose barriers overtook
  records, and aligned ones, which blocked, on the same input.

Each returns a :class:`RealRun`: the run, its facts, and ``show()`` (``absnb.views.show_run``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from absnb import datasets
from absnb.jobs.word_count import word_count

if TYPE_CHECKING:
    import pandas as pd

    from absnb.core.job import Job
    from absnb.runtime.failures import Failure
    from absnb.runtime.spark import SparkRun, SparkRuntime
    from absnb.views.run_view import RunView

INTERVAL = 0.3
"""Seconds between checkpoints: several checkpoints in a run of about two seconds."""
RATE = 500
"""Lines a second each source reads: the 1,000 lines of each source last two seconds."""
BUSY_RATE = 40_000
"""Lines a second each source reads in :func:`unaligned_beside_aligned`: fast enough that
records queue on the channels (the unaligned run's ``overtaken`` count shows them)."""

_RUNTIMES: dict[str, SparkRuntime] = {}


@dataclass
class RealRun:
    """A real run and the facts its cells assert (each computed from the run's own log)."""

    run: SparkRun
    facts: dict[str, Any] = field(default_factory=dict)

    def show(self, **kwargs: Any) -> RunView:
        """The run drawn (:func:`absnb.views.show_run`); ``window=self.facts['window']``
        for the close up."""
        from absnb.views import show_run

        return show_run(self.run, **kwargs)


def runtime(master: str = "local[2]") -> SparkRuntime:
    """One :class:`~absnb.runtime.SparkRuntime` per master, made on first use."""
    if master not in _RUNTIMES:
        from absnb.runtime.spark import SparkRuntime

        _RUNTIMES[master] = SparkRuntime(master=master)
    return _RUNTIMES[master]


def lines() -> list[list[str]]:
    """The large text sample as two sources' lines (1,000 each)."""
    parts = datasets.text_partitions("large")
    return [parts[0] + parts[2], parts[1] + parts[3]]


def _run(job: Job, protocol: str, failures: Sequence[Failure] = (), **kwargs: Any) -> SparkRun:
    from absnb.runtime.spark import quiet_task_failures

    rt = kwargs.pop("rt", None) or runtime()
    kwargs.setdefault("checkpoint_interval", INTERVAL)
    kwargs.setdefault("source_rate", RATE)
    with quiet_task_failures(rt.spark):
        run = rt.run(job, protocol, failures=list(failures), **kwargs)
    if run.failures_not_fired:  # the facts read from the failure would not exist
        raise RuntimeError("; ".join(run.failures_not_fired.values()))
    return run


def _first_window(df: pd.DataFrame) -> tuple[float, float]:
    """From the first checkpoint's trigger to its completion, a little on either side."""
    return _window(df, int(df[df.kind == "completed"].checkpoint.min()))


def aligned_run(**kwargs: Any) -> RealRun:
    """Word count under ABS (Alg. 1): facts ``blocked`` (checkpoint, task, channel) for
    every block, ``completed`` checkpoints, ``cut_problems`` (empty), ``window`` (the
    checkpoint ``shown``, whose longest alignment took the largest share of it)."""
    run = _run(word_count(lines()), "abs", **kwargs)
    df = run.events
    blocks = df[df.kind == "block"]
    checkpoint_of = _checkpoint_at(df)
    blocked = [(checkpoint_of(r.time, r.task), r.task, r.channel) for r in blocks.itertuples()]
    return RealRun(
        run,
        {
            "blocked": blocked,
            "completed": list(run.checkpoints),
            "cut_problems": run.check_cuts(),
            **_widest_alignment(df, checkpoint_of),
        },
    )


def _widest_alignment(df: Any, checkpoint_of: Any) -> dict[str, Any]:
    """``shown``: the completed checkpoint whose longest alignment (a block to its unblock)
    took the largest share of it, and ``window``, it close up: there the alignment band is
    widest in the drawing."""
    spans: dict[int, float] = {}
    began: dict[tuple[int, str, str], float] = {}
    for r in df[df.kind.isin(["block", "unblock"])].itertuples():
        key = (r.attempt, r.task, r.channel)
        if r.kind == "block":
            began[key] = r.time
        elif key in began:
            n = checkpoint_of(began[key], r.task)
            if n is not None:
                spans[n] = max(spans.get(n, 0.0), r.time - began.pop(key))
    windows = {n: _window(df, n) for n in spans if n in set(df[df.kind == "completed"].checkpoint)}
    if not windows:
        n = int(df[df.kind == "completed"].checkpoint.min())
        return {"shown": n, "window": _window(df, n)}
    n = max(windows, key=lambda n: spans[n] / (windows[n][1] - windows[n][0]))
    return {"shown": n, "window": windows[n]}


def _window(df: pd.DataFrame, n: int) -> tuple[float, float]:
    """Checkpoint ``n`` from its trigger to its completion, a little on either side."""
    began = float(df[(df.kind == "triggered") & (df.checkpoint == n)].time.min())
    ended = float(df[(df.kind == "completed") & (df.checkpoint == n)].time.min())
    return began - 0.002, ended + 0.002


def _checkpoint_at(df: pd.DataFrame) -> Any:
    """``(time, task) -> the checkpoint whose snapshot the task took next``."""
    snaps = df[df.kind == "snapshot"]

    def at(time: float, task: str) -> int | None:
        later = snaps[(snaps.task == task) & (snaps.time >= time)]
        return int(later.checkpoint.iloc[0]) if len(later) else None

    return at


def crash_run(after_checkpoint: int = 2, task: str = "count[1]", **kwargs: Any) -> RealRun:
    """ABS with ``Failure(task, after_checkpoint=k)``: facts ``failed_task``, ``failed_at``
    (seconds), ``completed_before`` (checkpoints completed before the failure),
    ``restored`` (the checkpoint the restart restored), ``cut_problems``."""
    from absnb.runtime.failures import Failure

    failure = Failure(task, after_checkpoint=after_checkpoint)
    # half the rate: the hosts start in about a second, so checkpoint 2 completed near the
    # end of a two-second input (the sources hold half their input back for it, HOLD_SECONDS)
    kwargs.setdefault("source_rate", RATE // 2)
    run = _run(word_count(lines()), "abs", [failure], **kwargs)
    df = run.events
    failed = df[df.kind == "failure"].iloc[0]
    done = df[(df.kind == "completed") & (df.time < failed.time)]
    restored = df[df.kind == "restored"]
    return RealRun(
        run,
        {
            "failed_task": failed.task,
            "failed_at": float(failed.time),
            "completed_before": [int(n) for n in done.checkpoint],
            "restored": int(restored.checkpoint.iloc[0]),
            "cut_problems": run.check_cuts(),
        },
    )


def two_phase_commit_run(
    directory: str | None = None, after_checkpoint: int = 2, **kwargs: Any
) -> RealRun:
    """Word count into a :class:`~absnb.sinks.files.FileSink` (two-phase commit), with
    ``sink[0]`` failing after checkpoint k: facts ``pre_commits`` and ``commits``
    (checkpoint -> seconds, sink[0], first attempt), ``snapshots`` (checkpoint -> seconds
    of sink[0]'s snapshot), ``completed`` (checkpoint -> seconds), ``aborted`` (the failed
    attempt's transactions aborted on restore), ``committed_on_restore``, ``restored``,
    ``exactly_once`` (the committed files hold each running count once)."""
    from absnb.runtime.failures import Failure
    from absnb.sinks.files import FileSink

    folder = directory or tempfile.mkdtemp(prefix="absnb-2pc-")
    job = word_count(lines(), sink=FileSink(folder, columns=("word", "count")))
    run = _run(job, "abs", [Failure("sink[0]", after_checkpoint=after_checkpoint)], **kwargs)
    df = run.events
    mine = df[(df.task == "sink[0]") & (df.attempt == 0)]

    def times(frame: pd.DataFrame) -> dict[int, float]:
        return {int(r.checkpoint): float(r.time) for r in frame.itertuples()}

    commits = mine[(mine.kind == "commit")]
    restart = df[(df.attempt == 1) & (df.task == "sink[0]")]
    expected = sorted((w, i) for w, n in _answer().items() for i in range(1, n + 1))
    return RealRun(
        run,
        {
            "pre_commits": times(mine[mine.kind == "pre_commit"]),
            "snapshots": times(mine[mine.kind == "snapshot"]),
            "commits": times(commits),
            "completed": times(df[(df.kind == "completed") & (df.attempt == 0)]),
            "aborted": list(restart[restart.kind == "abort_txn"].detail),
            "committed_on_restore": [
                d for d in restart[restart.kind == "commit"].detail if d.endswith("(on restore)")
            ],
            "restored": run.restored[1] if len(run.restored) > 1 else None,
            "exactly_once": sorted(tuple(x) for x in run.output) == expected,
            "directory": folder,
        },
    )


def _answer() -> dict[str, int]:
    counts: dict[str, int] = {}
    for part in lines():
        for line in part:
            for w in line.split():
                counts[w] = counts.get(w, 0) + 1
    return counts


def unaligned_beside_aligned(**kwargs: Any) -> tuple[RealRun, RealRun]:
    """The same word count under ``unaligned`` and under ``abs``, records queued on the
    channels: facts ``overtaken`` (records the barriers overtook, all told) and ``blocks``
    for each, ``window`` and ``cut_problems``.

    Each source reads the sample 32 times (32,000 lines) at :data:`BUSY_RATE` lines a
    second, so that it reads for at least 0.8 s: both sources are still reading when
    the first checkpoint (0.1 s after the start) reaches them, and an aligned counter has
    two inputs to align. Unthrottled, a source could send its whole input before the
    first trigger (a run on a fast machine did): its channels ended, every counter then
    had a single input to align and ``abs`` blocked nothing."""
    kwargs.setdefault("source_rate", BUSY_RATE)
    kwargs.setdefault("checkpoint_interval", 0.1)
    out = []
    for protocol in ("unaligned", "abs"):
        run = _run(word_count([part * 32 for part in lines()]), protocol, **kwargs)
        df = run.events
        out.append(
            RealRun(
                run,
                {
                    "overtaken": int(df[df.kind == "overtaken"]["count"].sum()),
                    "blocks": int((df.kind == "block").sum()),
                    "window": _first_window(df),
                    "cut_problems": run.check_cuts(),
                },
            )
        )
    return out[0], out[1]
