"""Vectorised kernels of word count's columnar path (:mod:`absnb.core.columns`).

- :func:`words_of_lines`: ``str.split`` of every line, the words of a batch of lines as one
  Arrow array. An ASCII batch is split by NumPy over its bytes (the ten ASCII bytes
  ``str.isspace`` accepts), without a Python object per word; any other batch by
  ``str.split`` itself. Not by Arrow: pyarrow 26's ``utf8_split_whitespace`` now and then
  keeps a separator on a word (65 of 20,000 random batches of ASCII lines kept a trailing
  ``\\n``, ``\\x1f`` or the like), and ``ascii_split_whitespace`` does not split on
  ``\\x1c``-``\\x1f``, which ``str.split`` does.
- :func:`encode`: a batch's keys as codes into its distinct keys (Arrow's dictionary
  encoding, or the codes of a dictionary array as they come).
- :func:`group`: the rows of a batch grouped by key, the groups in order of first
  appearance (:class:`Groups`): every record's count or running total so far (a stable
  group and cumulative count or sum) and each key's last row.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

_ASCII_SPACES = (9, 10, 11, 12, 13, 28, 29, 30, 31, 32)
"""The ASCII bytes ``str.isspace`` accepts (``str.split`` splits on them)."""


@cache
def _spaces() -> npt.NDArray[np.bool_]:
    import numpy as np

    table = np.zeros(256, bool)
    table[list(_ASCII_SPACES)] = True
    return table


def words_of_lines(lines: Sequence[str]) -> pa.Array | None:
    """The words of ``lines``, in order, as ``str.split`` gives them; None when a line is no
    str Arrow can hold (not a str, or a lone surrogate): the caller splits in Python."""
    import pyarrow as pa

    try:
        text = "\n".join(lines)
    except TypeError:
        return None
    if text.isascii() and len(text) < 1 << 31:
        return _split_ascii(text.encode("ascii"))
    try:
        return pa.array([w for line in lines for w in line.split()], pa.string())
    except (pa.ArrowException, UnicodeEncodeError):
        return None


def _split_ascii(text: bytes) -> pa.Array:
    """The words of ASCII ``text`` (split at runs of ASCII whitespace) as a string array
    whose data is ``text`` without its whitespace."""
    import numpy as np
    import pyarrow as pa

    data = np.frombuffer(text, np.uint8)
    word = ~_spaces()[data]
    padded = np.zeros(len(data) + 2, np.int8)  # 1 in a word, 0 between words and around
    padded[1:-1] = word
    edges = padded[1:] - padded[:-1]  # 1 where a word starts, -1 just after it ends
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    offsets = np.zeros(len(starts) + 1, np.int32)
    np.cumsum(ends - starts, out=offsets[1:])
    return pa.StringArray.from_buffers(
        len(starts), pa.py_buffer(offsets), pa.py_buffer(data[word].tobytes())
    )


def encode(keys: pa.Array) -> tuple[npt.NDArray[np.intp], pa.Array]:
    """``(codes, dictionary)``: ``keys[i] == dictionary[codes[i]]``. Keys not yet encoded
    are dictionary-encoded (every entry of the dictionary occurs, in order of first
    appearance); a dictionary array's codes and dictionary are taken as they are."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.types as types

    encoded = keys if types.is_dictionary(keys.type) else pc.dictionary_encode(keys)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.intp, copy=False)
    return codes, encoded.dictionary


def key_type(keys: pa.Array) -> pa.DataType:
    """The type of the keys ``keys`` holds (a dictionary array's value type)."""
    import pyarrow.types as types

    return keys.type.value_type if types.is_dictionary(keys.type) else keys.type


def ints(values: pa.Array) -> npt.NDArray[np.int64] | None:
    """The int64 values of an Arrow array of ints (or a dictionary array of them) without
    nulls, or None when it holds another type, a null or an int out of int64's range."""
    import numpy as np
    import pyarrow.types as types

    if values.null_count:
        return None
    if types.is_dictionary(values.type):
        decoded = ints(values.dictionary)
        indices = values.indices.to_numpy(zero_copy_only=False)
        return None if decoded is None else decoded[indices]
    if not types.is_integer(values.type):
        return None
    array = values.to_numpy(zero_copy_only=False)
    if array.dtype == np.uint64 and len(array) and int(array.max()) >= 1 << 63:
        return None
    out: npt.NDArray[np.int64] = array.astype(np.int64, copy=False)
    return out


def counted(state: MutableMapping[Any, int], keys: pa.Array) -> npt.NDArray[np.int64]:
    """Each record's count so far of its key in ``keys``, counted into the dict ``state``
    as one at a time would (new keys added in order of first appearance)."""
    import numpy as np

    groups = group(keys)
    uniques = groups.distinct.to_pylist()
    get = state.get
    before = np.fromiter((get(k, 0) for k in uniques), np.int64, len(uniques))
    counts = groups.running_counts(before)
    state.update(zip(uniques, (before + groups.sizes).tolist(), strict=True))
    return counts


class Groups(NamedTuple):
    """The rows of a batch grouped by key, the groups numbered in order of first
    appearance (the order the per-record path adds new keys to a dict in)."""

    codes: npt.NDArray[np.intp]
    """Each row's group."""
    distinct: pa.Array
    """Each group's key."""
    order: npt.NDArray[np.intp]
    """The rows stably sorted by group."""
    starts: npt.NDArray[np.intp]
    """Where each group's rows begin in ``order``."""
    sizes: npt.NDArray[np.intp]
    """The rows of each group."""

    def running_counts(self, before: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """The count so far of each row's key just after the row (``before[group]`` plus
        the group's rows up to and including it), in input order."""
        import numpy as np

        n = len(self.codes)
        order = self.order
        rank = np.arange(1, n + 1, dtype=np.int64) - np.repeat(self.starts, self.sizes)
        counts = np.empty(n, np.int64)
        counts[order] = rank + np.asarray(before, np.int64)[self.codes[order]]
        return counts

    def running_sums(
        self, amounts: npt.NDArray[np.int64], before: npt.NDArray[Any]
    ) -> npt.NDArray[np.int64]:
        """The running total of each row's key just after the row (``before[group]`` plus
        the group's ``amounts`` up to and including it), in input order (int64: the caller
        keeps the totals in range)."""
        import numpy as np

        order, starts = self.order, self.starts
        step = amounts[order]
        run = np.cumsum(step)
        run += np.repeat(np.asarray(before, np.int64) - (run[starts] - step[starts]), self.sizes)
        totals = np.empty(len(run), np.int64)
        totals[order] = run
        return totals

    def last_rows(self) -> npt.NDArray[np.intp]:
        """The last row of each group."""
        last: npt.NDArray[np.intp] = self.order[self.starts + self.sizes - 1]
        return last


def _sorted(
    codes: npt.NDArray[np.intp], d: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """``(order, starts, sizes)`` of codes below ``d``: the rows stably sorted by code (a
    radix sort of 16-bit codes when they fit), where each present code's rows begin in it
    and how many they are."""
    import numpy as np

    n = len(codes)
    order = np.argsort(codes.astype(np.uint16) if d <= 1 << 16 else codes, kind="stable")
    ordered = codes[order]
    first = np.empty(n, bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    sizes = np.empty_like(starts)
    sizes[:-1] = starts[1:] - starts[:-1]
    sizes[-1:] = n - starts[-1:]
    return order, starts, sizes


def group(keys: pa.Array) -> Groups:
    """The rows of ``keys`` (an Arrow array, or a dictionary array) grouped by key."""
    import numpy as np

    codes, dictionary = encode(keys)
    d = len(dictionary)
    order, starts, sizes = _sorted(codes, d)
    firsts = order[starts]  # the first row of each present code, by code
    if len(starts) == d and bool(np.all(firsts[1:] > firsts[:-1])):
        return Groups(codes, dictionary, order, starts, sizes)  # every code, by appearance
    present = codes[firsts]
    by_appearance = present[np.argsort(firsts)]
    renumber = np.zeros(d, np.intp)
    renumber[by_appearance] = np.arange(len(by_appearance))
    codes = renumber[codes]
    order, starts, sizes = _sorted(codes, d)
    return Groups(codes, dictionary.take(by_appearance), order, starts, sizes)
