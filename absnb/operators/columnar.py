"""Vectorised kernels of word count's columnar path (:mod:`absnb.core.columns`).

- :func:`words_of_lines`: ``str.split`` of every line, the words of a batch of lines as one
  Arrow array. The split is Python's own: pyarrow 26's ``utf8_split_whitespace`` now and
  then keeps a separator on a word (65 of 20,000 random batches of ASCII lines kept a
  trailing newline, U+001F or the like), and ``ascii_split_whitespace`` does not split on
  U+001C to U+001F, which ``str.split`` does.
- :func:`encode`: a batch's keys as codes into its distinct keys, in order of first
  appearance (Arrow's dictionary encoding).
- :func:`running_counts`: the count so far of every record of a batch, in input order (a
  stable group-by-code and cumulative count), from the counts before the batch.
- :func:`last_rows`: the last row of each code (what a sink keeping the latest value per key
  keeps of a batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa


def words_of_lines(lines: Sequence[str]) -> pa.Array | None:
    """The words of ``lines``, in order, as ``str.split`` gives them; None when a line is no
    str Arrow can hold (not a str, or a lone surrogate): the caller splits in Python."""
    import pyarrow as pa

    if not all(type(line) is str for line in lines):
        return None
    try:
        return pa.array([w for line in lines for w in line.split()], pa.string())
    except (pa.ArrowException, UnicodeEncodeError):
        return None


def encode(keys: pa.Array) -> tuple[npt.NDArray[np.intp], pa.Array]:
    """``(codes, distinct)``: ``keys[i] == distinct[codes[i]]``, the distinct keys in order of
    first appearance."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(keys)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.intp, copy=False)
    return codes, encoded.dictionary


def _groups(
    codes: npt.NDArray[np.intp],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """``(order, starts, ends)``: a stable sort of the rows by code, and where each code's
    run of rows begins and ends in it."""
    import numpy as np

    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    first = np.empty(len(codes), bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], len(codes))
    return order, starts, ends


def running_counts(codes: npt.NDArray[np.intp], before: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """The count so far of each row's code just after the row (``before[code]`` plus its
    occurrences up to and including it), in input order."""
    import numpy as np

    n = len(codes)
    if n == 0:
        return np.zeros(0, np.int64)
    order, starts, ends = _groups(codes)
    rank = np.arange(n, dtype=np.int64) - np.repeat(starts, ends - starts)
    counts = np.empty(n, np.int64)
    counts[order] = rank + 1 + np.asarray(before, np.int64)[codes[order]]
    return counts


def last_rows(codes: npt.NDArray[np.intp], distinct: int) -> npt.NDArray[np.intp]:
    """The last row of each of the ``distinct`` codes (each occurs in ``codes``)."""
    import numpy as np

    if len(codes) == 0:
        return np.zeros(0, np.intp)
    order, _, ends = _groups(codes)
    last: npt.NDArray[np.intp] = np.empty(distinct, np.intp)
    last[codes[order[ends - 1]]] = order[ends - 1]
    return last
