"""A dataflow with a real feedback loop: the Collatz iteration.

source -> head -> step -> head (the back-edge) and step -> sink. Every number travels the
loop until it reaches 1; the sink gets ``(number, steps)``. The loop makes ABS Algorithm 1
deadlock (the head waits for a barrier that must first pass through itself) and needs
Algorithm 2, whose backup log holds the records in transit on the back-edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

from absnb.core.errors import GraphError
from absnb.core.graph import Hash, JobGraph
from absnb.core.job import Job
from absnb.operators import CollectSink, Operator, Source, To

DEFAULT_NUMBERS = (3, 5, 6, 7)


def loop_key(value: int | tuple[int, int, int]) -> int:
    """Records are partitioned by the number they started from."""
    return value if isinstance(value, int) else value[0]


class LoopHead(Operator[int]):
    """Where new numbers enter the loop and iterations come back. State: numbers admitted."""

    def initial_state(self) -> int:
        return 0

    def process(
        self, state: int, value: int | tuple[int, int, int]
    ) -> tuple[int, Sequence[object]]:
        if isinstance(value, int):
            return state + 1, ((value, value, 0),)
        return state, (value,)


class CollatzStep(Operator[int]):
    """One iteration: n/2 or 3n+1, back to the head until 1, then out. State: iterations."""

    def initial_state(self) -> int:
        return 0

    def process(self, state: int, value: tuple[int, int, int]) -> tuple[int, Sequence[object]]:
        start, n, steps = value
        if n == 1:
            return state, (To("sink", (start, steps)),)
        nxt = n // 2 if n % 2 == 0 else 3 * n + 1
        return state + 1, (To("head", (start, nxt, steps + 1)),)


def cyclic(numbers: Sequence[int] | None = None, parallelism: int = 1, sources: int = 1) -> Job:
    """The cyclic job.

    Args:
        numbers: the numbers to iterate, dealt out to the sources; default 3, 5, 6, 7.
        parallelism: tasks of the head, the step and the sink.
        sources: source tasks.
    """
    numbers = list(DEFAULT_NUMBERS if numbers is None else numbers)
    bad = [n for n in numbers if not isinstance(n, Integral) or isinstance(n, bool) or n < 1]
    if bad:
        raise GraphError(
            "the cyclic job iterates every number until it reaches 1, so each must be a whole "
            f"number of at least 1, not {bad[0]!r}: pass positive integers"
        )
    g = JobGraph("cyclic")
    g.add("source", "source", Source(), sources)
    g.add("head", "operator", LoopHead(), parallelism)
    g.add("step", "operator", CollatzStep(), parallelism)
    g.add("sink", "sink", CollectSink(), parallelism)
    g.connect("source", "head", Hash(loop_key))
    g.connect("head", "step")
    g.connect("step", "head", Hash(loop_key))
    g.connect("step", "sink")
    graph = g.compile()
    inputs = {t: tuple(numbers[t.subtask :: sources]) for t in graph.tasks_of("source")}
    params = {"numbers": numbers, "parallelism": parallelism, "sources": sources}
    return Job("cyclic", params, graph, inputs)
