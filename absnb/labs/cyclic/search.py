"""Part c of the ABS lab's extension: every interleaving of small Collatz loops.

The checks are the ABS lab's (:class:`~absnb.labs.search.Search`): no decision raised,
every completed snapshot a consistent cut (a record on a back-edge in the receiver's state
copy or its backup log, once), nothing left blocked, no checkpoint left pending, the output
the failure-free one; under the extension's protocol, with its counterexamples told by
:func:`~absnb.labs.cyclic.story.cyclic_words`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from absnb.core.job import Job
from absnb.jobs.cyclic import cyclic
from absnb.labs.cyclic.handler import CyclicLabProtocol
from absnb.labs.cyclic.story import cyclic_words
from absnb.labs.search import Search


@cache
def one_number() -> Job:
    """The loop with one number, 2: it goes round twice (2, then 1) and leaves."""
    return cyclic([2])


@cache
def two_numbers() -> Job:
    """The loop with two numbers, 2 and 1."""
    return cyclic([2, 1])


@cache
def two_heads() -> Job:
    """The loop of 1 and 2 at parallelism 2: each head has two loop inputs, one from each
    step task, whose logs end each at its own barrier."""
    return cyclic([1, 2], parallelism=2)


def _search(
    title: str,
    job: Callable[[], Job],
    max_checkpoints: int = 1,
    crashes: bool = False,
    max_depth: int | None = None,
    ends: bool = False,
) -> Search:
    return Search(
        title,
        job,
        max_checkpoints=max_checkpoints,
        crashes=crashes,
        ends=ends,
        max_depth=max_depth,
        protocol=CyclicLabProtocol,
        words=cyclic_words,
    )


SEARCHES = (
    _search("the Collatz loop of 2", one_number),
    _search("the Collatz loop of 2", one_number, max_checkpoints=2),
    _search("the Collatz loop of 2 and 1", two_numbers),
    _search("the Collatz loop of 1 and 2 at parallelism 2", two_heads),
    _search("the Collatz loop of 2", one_number, crashes=True, max_depth=10),
    _search("the Collatz loop of 2", one_number, max_checkpoints=2, ends=True),
)
"""Part c's explorations, smallest first; the first violation stops the part."""
