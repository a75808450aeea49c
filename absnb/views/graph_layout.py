"""Where the tasks of an execution graph sit in its DOT text, and how they are named there.

Graphviz lays the graph out; these lines only quote task names and keep an operator's tasks
side by side in index order.
"""

from __future__ import annotations

from collections.abc import Iterable

from absnb.core.ids import TaskId


def quote(name: str) -> str:
    """A DOT quoted identifier."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def in_order(tasks: Iterable[TaskId | str]) -> str:
    """Tasks side by side in index order, whatever the labels: without it dot may swap
    ``count[0]`` and ``count[1]`` from one step to the next."""
    names = [quote(str(t)) for t in tasks]
    return f"    {{ rank=same; {' -> '.join(names)} [style=invis]; }}"
