"""Word count, the paper's Figure 3: sources -> counters (hash by word) -> sinks."""

from __future__ import annotations

from collections.abc import Sequence

from absnb.core import validate
from absnb.core.errors import InvalidValueError
from absnb.core.graph import MAX_PARALLELISM, Hash, JobGraph, identity
from absnb.core.job import Job
from absnb.operators import KeyedCount, Operator, Source
from absnb.sinks import make_sink

DEFAULT_LINES: tuple[tuple[str, ...], ...] = (
    ("to be or", "not to be"),
    ("be quick", "or be still"),
)
"""Two source partitions of two lines each (what the notebooks step through)."""


split_words = str.split
"""The words of a line: ``str.split`` itself, so that a source splitting a batch of lines
makes a C call per line, not a Python one."""


word = identity
"""The key a word is partitioned by: itself (the identity, which ``Hash`` and
``KeyedCount`` recognise and do not call once a record)."""


def word_count(
    lines: Sequence[Sequence[str]] | None = None,
    sources: int | None = None,
    counters: int = 2,
    sinks: int = 2,
    sink: str | Operator = "collect",
    array: bool = False,
) -> Job:
    """The word count job.

    Args:
        lines: one list of lines per source task; by default
            :data:`~absnb.jobs.word_count.DEFAULT_LINES` (when ``sources`` differs from its length,
            the default lines are dealt out).
        sources, counters, sinks: the parallelism of each operator (at most
            :data:`~absnb.core.graph.MAX_PARALLELISM`); counters and sinks are joined by a
            forward edge, so they must be equal. ``sources`` defaults to 2, or to one per
            list of ``lines``; given with ``lines`` it must match them.
        sink: what the sinks write to: ``collect`` (their state), ``two-phase-commit``
            (exactly-once into a :class:`~absnb.sinks.TransactionStore`),
            ``at-least-once`` (the same store, written at once), or a sink operator such
            as :class:`~absnb.sinks.files.FileSink`.
        array: the counters hold their counts in an array
            (:class:`~absnb.operators.array_state.ArrayKeyedState`), count a batch at once,
            and snapshot only the words added since the last completed checkpoint besides
            the counts: for the Spark runtime, whose checkpoint storage reads their chains
            (the simulator restores whole snapshots only).

    Raises:
        InvalidValueError: ``sources`` that contradicts ``lines``, or a size out of range.

    Each source emits the words of its lines; counters count per word and emit
    ``(word, count so far)``; sinks collect those pairs.
    """
    for name, value in (("sources", sources), ("counters", counters), ("sinks", sinks)):
        if value is not None:
            validate.whole(name, value, minimum=1, maximum=MAX_PARALLELISM)
    if lines is None:
        sources = 2 if sources is None else sources
        flat = [line for part in DEFAULT_LINES for line in part]
        lines = [flat[i::sources] for i in range(sources)]
    else:
        lines = validate.lines_per_source("lines", lines)
        if sources is not None and sources != len(lines):
            raise InvalidValueError(
                f"word_count got lines for {len(lines)} source(s) and sources={sources}: "
                "lines holds one list of lines per source, so give one or the other"
            )
        sources = len(lines)
    g = JobGraph("word_count")
    g.add("source", "source", Source(split=split_words), sources)
    g.add("count", "operator", KeyedCount(key=word, array=array, incremental=array), counters)
    function, sink_name = make_sink(sink)
    g.add("sink", "sink", function, sinks)
    g.connect("source", "count", Hash(word))
    g.connect("count", "sink")
    graph = g.compile()
    inputs = {t: tuple(lines[t.subtask]) for t in graph.tasks_of("source")}
    params: dict[str, object] = {
        "lines": [list(p) for p in lines],
        "counters": counters,
        "sinks": sinks,
    }
    if sink_name is not None:
        params["sink"] = sink_name
    if array:
        params["array"] = True
    return Job("word_count", params, graph, inputs)
