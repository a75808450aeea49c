"""Where the tasks of an execution graph sit in its DOT text: rank constraints only.

Graphviz lays the graph out; these lines only keep an operator's tasks side by side in
index order and put a process graph's tasks two to a row.
"""

from __future__ import annotations

from collections.abc import Iterable

from absnb.core.graph import ExecutionGraph
from absnb.core.ids import TaskId


def quote(name: str) -> str:
    """A DOT quoted identifier."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def in_order(tasks: Iterable[TaskId]) -> str:
    """Tasks side by side in index order, whatever the labels: without it dot may swap
    ``count[0]`` and ``count[1]`` from one step to the next."""
    names = [quote(str(t)) for t in tasks]
    return f"    {{ rank=same; {' -> '.join(names)} [style=invis]; }}"


def rows_of_two(graph: ExecutionGraph) -> list[str]:
    """A process graph (no sources: the bank) of more than two tasks drawn two tasks to a
    row, in order: as a chain, four accounts are taller than a projector's screen."""
    tasks = list(graph.tasks)
    if len(tasks) <= 2 or any(graph.kind(t) == "source" for t in tasks):
        return []
    return [in_order(tasks[i : i + 2]) for i in range(0, len(tasks) - 1, 2)]
