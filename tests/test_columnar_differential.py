"""The columnar path and the per-record paths of word count agree (issue 37): on random
lines (words with quotes, backslashes, non-ASCII letters, Unicode spaces between them),
random interleavings, checkpoints and crash points, the job run one record at a time (as
the simulator moves records), a batch of Python values at a time, and as Arrow columns (the
real runtime's columnar path, :mod:`absnb.core.columns`) gives the same outputs, the same
snapshots per checkpoint and task (state, offsets, channel counters, recorded channel
state) and the same recovered outputs, which are exactly once. Driven through the
:class:`~absnb.task.StreamTask` objects every runtime hosts (:mod:`tests.differential.pipeline`),
messages pickled between tasks as between hosts."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from absnb.core.graph import Hash, JobGraph
from absnb.core.job import Job
from absnb.experiments.paper import FinalCountSink
from absnb.jobs.word_count import split_words, word
from absnb.operators import KeyedCount, Source
from absnb.operators.library import CollectSink
from tests.differential.pipeline import MODES, run

WORDS = ("to", "be", "or", "not", "don't", 'say"', "a\\b", "café", "日本", "x'y\"z", "1")
SPACES = (" ", "  ", "\t", "\u3000", "\xa0", "\n", "\x1c")


def job(lines: list[list[str]], counters: int, array: bool, final: bool) -> Job:
    """Word count with ``counters`` counters and sinks, its counts in a dict or an array
    (whole snapshots, which the test restores itself), its sinks collecting every pair or
    keeping each word's latest count."""
    g = JobGraph("word_count")
    g.add("source", "source", Source(split=split_words), len(lines))
    g.add("count", "operator", KeyedCount(key=word, array=array), counters)
    g.add("sink", "sink", FinalCountSink() if final else CollectSink(), counters)
    g.connect("source", "count", Hash(word))
    g.connect("count", "sink")
    graph = g.compile()
    return Job(
        "word_count", {}, graph, {t: tuple(lines[t.subtask]) for t in graph.tasks_of("source")}
    )


line = st.lists(st.tuples(st.sampled_from(SPACES), st.sampled_from(WORDS)), max_size=6).map(
    lambda parts: "".join(s + w for s, w in parts) + " "
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("emit"), st.integers(0, 1), st.integers(1, 3)),
        st.tuples(st.just("trigger")),
        st.tuples(st.just("deliver"), st.integers(0, 7)),
        st.tuples(st.just("deliver"), st.integers(0, 7)),
        st.tuples(st.just("crash")),
    ),
    max_size=30,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(st.lists(line, min_size=1, max_size=5), min_size=1, max_size=2),
    counters=st.integers(1, 3),
    array=st.booleans(),
    final=st.booleans(),
    protocol=st.sampled_from(("abs", "chandy-lamport")),
    script=steps,
)
def test_columnar_and_per_record_paths_agree(
    lines: list[list[str]],
    counters: int,
    array: bool,
    final: bool,
    protocol: str,
    script: list[tuple[Any, ...]],
) -> None:
    j = job(lines, counters, array, final)
    runs = {mode: run(j, protocol, mode, script) for mode in MODES}
    record = runs["record"]
    for mode in ("batch", "columnar"):
        assert runs[mode].snapshots == record.snapshots, mode
        assert runs[mode].complete.keys() == record.complete.keys(), mode
        assert runs[mode].states() == record.states(), mode
    # the columnar run did run columnar
    words = Counter(w for part in lines for entry in part for w in entry.split())
    if words:
        assert runs["columnar"].columnar_batches > 0
    # recovered outputs are exactly once
    sinks = [s for t, s in record.states().items() if t.startswith("sink")]
    if final:
        latest = {w: n for s in sinks for w, n in s}
        assert latest == dict(words)
    else:
        seen: dict[str, list[int]] = {}
        for s in sinks:
            for w, n in s:
                seen.setdefault(w, []).append(n)
        assert seen == {w: list(range(1, n + 1)) for w, n in words.items()}
