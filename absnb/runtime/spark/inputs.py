"""Job inputs prepared by Spark: a DataFrame of lines, or text files read with ``spark.read.text``.

DESIGN.md, "The two runtimes": input datasets are prepared and read with Spark. Here the
rows are numbered (``zipWithIndex``) and dealt round-robin to the job's source tasks, row
``k`` going to source ``k mod S`` at offset ``k div S`` (as ``word_count`` deals its default
lines). One shuffle puts each source's rows into the partition of the host that runs the
source (``partition = host``), sorted by (offset, source), and the result is persisted.
That RDD *is* the barrier stage's RDD: a host receives its partition's rows from Spark
itself, never through the driver, and each of its sources reads them lazily, by offset.

Rewinding: a restarted stage reads the same persisted partitions, so a source restored
at offset ``k`` skips ``k`` rows and goes on with exactly the rows it would have read.
Should the cached blocks be lost (an executor died), Spark recomputes them from the
DataFrame; the numbering and the sort make that identical as long as the DataFrame yields
its rows in the same order again (a file read does; sort a computed DataFrame first).

No pyspark import here: only methods of the DataFrame and SparkSession passed in.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast, overload

from absnb.core.errors import AbsnbError
from absnb.core.ids import TaskId
from absnb.core.job import Job
from absnb.runtime.plan import HostPlan, host_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Row = tuple[tuple[int, int], str]
"""One row of a prepared partition: ``((offset, source index), line)``."""


class SparkInputError(AbsnbError, ValueError):
    """Job inputs given to the Spark runtime that it cannot read as lines."""


def lines_frame(spark: SparkSession, inputs: object) -> DataFrame:
    """``inputs`` as a DataFrame of one string column: a DataFrame checked to be one, or
    a path (or glob, or Hadoop/fsspec URL) of text files read with ``spark.read.text``.

    Raises:
        SparkInputError: not a Spark DataFrame or path, a DataFrame without exactly one
            string column, or a path Spark cannot read; the message says what to pass.
    """
    if isinstance(inputs, (str, os.PathLike)):
        where = os.fspath(inputs)
        try:
            return spark.read.text(where)
        except Exception as e:  # AnalysisException: PATH_NOT_FOUND and the like
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise SparkInputError(
                f"Spark cannot read the text files at {where!r} ({first[:200]}): pass a "
                "folder, file or glob that exists; on a cluster use a URL every executor "
                "can read (hdfs://..., s3a://...)"
            ) from e
    schema = getattr(inputs, "schema", None)
    if schema is None or not hasattr(inputs, "rdd"):
        hint = (
            "convert it with spark.createDataFrame(...) first"
            if hasattr(inputs, "columns")
            else "for Python lists of lines use absnb.word_count(lines=...) without inputs="
        )
        raise SparkInputError(
            f"inputs must be a Spark DataFrame of one string column or a path of text "
            f"files, not {type(inputs).__name__}: {hint}"
        )
    fields = list(schema.fields)
    strings = [f.name for f in fields if f.dataType.typeName() == "string"]
    if len(fields) == 1 and strings:
        return cast("DataFrame", inputs)  # checked above: a DataFrame of one string column
    described = ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in fields) or "none"
    if not strings:
        fix = (
            f"cast one to a string, e.g. df.select(df[{fields[0].name!r}].cast('string'))"
            if fields
            else "read lines with spark.read.text(path)"
        )
        what = "no string column"
    else:
        fix = f"select the column of lines, e.g. df.select({strings[0]!r})"
        what = f"{len(fields)} columns"
    raise SparkInputError(
        f"inputs must be a DataFrame of exactly one string column (one line per row); this "
        f"one has {what} ({described}): {fix}"
    )


def source_tasks(job: Job) -> tuple[TaskId, ...]:
    """The tasks that read the input, in order: the tasks of the job's source operators.

    Raises:
        SparkInputError: the job has no source operator, or has processes that read their
            own input logs (the cyclic and bank jobs), which a DataFrame cannot feed.
    """
    graph = job.graph
    sources = tuple(t for t in graph.tasks if graph.kind(t) == "source")
    processes = [t for t in graph.tasks if graph.kind(t) == "process"]
    if not sources or processes:
        raise SparkInputError(
            f"job {graph.name!r} has no source operator to read a DataFrame (its inputs are "
            f"read by {', '.join(map(str, processes)) or 'no task'}): inputs= feeds jobs "
            "with sources, such as absnb.word_count(sources=...); run this job without it"
        )
    return tuple(sorted(sources))


@dataclass(frozen=True)
class InputBinding:
    """The picklable part of prepared inputs, shipped to every host: which sources read
    which rows, and how many rows each has."""

    sources: tuple[TaskId, ...]
    lengths: tuple[int, ...]

    def bind(self, plan: HostPlan, rows: Iterator[Row]) -> HostPlan:
        """``plan`` with its sources reading ``rows``, its barrier partition, by offset."""
        mine = {t: j for j, t in enumerate(self.sources) if t in plan.tasks}
        reader = PartitionReader(rows, mine.values())
        logs = {t: PartitionLog(reader, j, self.lengths[j]) for t, j in mine.items()}
        return replace(plan, job=replace(plan.job, inputs=logs))


@dataclass
class PreparedInput:
    """Inputs ready for a run: the persisted RDD of one partition per host, the binding
    its hosts use, and the number of rows."""

    rdd: Any
    binding: InputBinding
    rows: int

    def release(self) -> None:
        """Drop the persisted partitions (when the run is over)."""
        self.rdd.unpersist()


def prepare(spark: SparkSession, inputs: object, job: Job, hosts: int) -> PreparedInput:
    """Number ``inputs``' lines, deal them to the job's sources and shuffle them into one
    persisted partition per host (see the module docstring)."""
    frame = lines_frame(spark, inputs)
    sources = source_tasks(job)
    n = len(sources)
    home = [host_of(t, hosts) for t in sources]

    def number(pair: tuple[Any, int]) -> Row:
        row, k = pair
        return (k // n, k % n), row[0] if row[0] is not None else ""

    def partition(key: tuple[int, int]) -> int:
        return home[key[1]]

    data = (
        frame.rdd.zipWithIndex()
        .map(number)
        .repartitionAndSortWithinPartitions(hosts, partition)
        .persist()
    )

    def count(rows: Iterable[Row]) -> Iterator[tuple[int, int]]:
        per: dict[int, int] = {}
        for (_, j), _line in rows:
            per[j] = per.get(j, 0) + 1
        yield from per.items()

    # Counting also fills the cache before the barrier stage reads it.
    lengths = [0] * n
    for j, c in data.mapPartitions(count).collect():
        lengths[j] += c
    return PreparedInput(data, InputBinding(sources, tuple(lengths)), sum(lengths))


class PartitionReader:
    """Reads one host's partition forward, once, for all of the host's sources: rows of a
    source that is behind wait in a small look-ahead buffer."""

    def __init__(self, rows: Iterator[Row], sources: Iterable[int]) -> None:
        self.rows = iter(rows)
        self.ahead: dict[int, deque[tuple[int, str]]] = {j: deque() for j in sources}

    def read(self, source: int, offset: int) -> str:
        """The line of ``source`` at ``offset``; earlier rows of that source are skipped."""
        buffer = self.ahead[source]
        while True:
            while buffer and buffer[0][0] < offset:
                buffer.popleft()
            if buffer:
                if buffer[0][0] == offset:
                    return buffer[0][1]
                raise RuntimeError(
                    f"source {source} asked for offset {offset} after reading past it: "
                    "a partition is read forward only"
                )
            try:
                (at, j), line = next(self.rows)
            except StopIteration:
                raise IndexError(f"source {source} has no row at offset {offset}") from None
            if j in self.ahead:
                self.ahead[j].append((at, line))


class PartitionLog(Sequence[str]):
    """A source's input log backed by its host's partition: ``len`` is the number of rows
    (counted when the input was prepared), ``log[i]`` reads forward to offset ``i``."""

    def __init__(self, reader: PartitionReader, source: int, length: int) -> None:
        self.reader, self.source, self.length = reader, source, length

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, offset: int) -> str: ...

    @overload
    def __getitem__(self, offset: slice) -> list[str]: ...

    def __getitem__(self, offset: int | slice) -> str | list[str]:
        if isinstance(offset, slice):  # a host emits a batch of lines
            return [self[i] for i in range(*offset.indices(self.length))]
        if not 0 <= offset < self.length:
            raise IndexError(f"offset {offset} is outside source {self.source}'s rows")
        return self.reader.read(self.source, offset)


# -- text files read by the sources themselves ----------------------------------------------
def local_files(inputs: object) -> list[str] | None:
    """The text files a plain local path names (a file, a folder's visible files, or a
    glob), sorted; None for anything else (a DataFrame, a URL such as ``file://``,
    ``hdfs://`` or ``s3a://``, which Spark reads) or a path that names no file (Spark then
    says why)."""
    import glob

    if not isinstance(inputs, (str, os.PathLike)):
        return None
    where = os.fspath(inputs)
    if "://" in where:
        return None
    if os.path.isdir(where):
        names = [os.path.join(where, n) for n in os.listdir(where) if n[0] not in "._"]
        files = [f for f in names if os.path.isfile(f)]
    elif os.path.isfile(where):
        files = [where]
    else:
        files = [f for f in glob.glob(where) if os.path.isfile(f)]
    return sorted(files) or None


Segment = tuple[str, int, int]
"""Bytes ``[start, end)`` of one file, starting at the start of a line."""


def _line_start(path: str, at: int, size: int) -> int:
    """The first line start at or after byte ``at`` of ``path`` (``size`` at the end)."""
    if at <= 0:
        return 0
    with open(path, "rb") as f:
        f.seek(at - 1)
        while at < size:
            chunk = f.read(65536)
            if not chunk:
                return size
            newline = chunk.find(b"\n")
            if newline >= 0:
                return min(size, at + newline)
            at += len(chunk)
    return size


def splits(files: list[str], sources: int) -> list[list[Segment]]:
    """``files`` cut into ``sources`` shares of about equal bytes, every cut at a line
    start (Flink's file source reads splits the same way; a line belongs to the share its
    first byte is in)."""
    sizes = [os.path.getsize(f) for f in files]
    total = sum(sizes)
    cuts = [round(total * j / sources) for j in range(sources + 1)]
    shares: list[list[Segment]] = [[] for _ in range(sources)]
    base = 0
    for path, size in zip(files, sizes, strict=True):
        for j in range(sources):
            lo, hi = cuts[j] - base, cuts[j + 1] - base
            if hi <= 0 or lo >= size:
                continue
            start = _line_start(path, max(0, lo), size)
            end = _line_start(path, min(size, hi), size) if hi < size else size
            if start < end:
                shares[j].append((path, start, end))
        base += size
    return shares


class FileLines(Sequence[str]):
    """A source's share of text files as its input log: line ``i`` of the share, read
    from the files by the host itself on first use (no Spark in between). Small to pickle
    (the segments); the offset into it is the source's state, so recovery rewinds by
    reading the same bytes again."""

    def __init__(self, segments: list[Segment]) -> None:
        self.segments = list(segments)
        self._text: bytes | None = None
        self._starts: Any = None

    def _load(self) -> None:
        import numpy as np

        parts = []
        for path, start, end in self.segments:
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read(end - start)
            parts.append(data if data.endswith(b"\n") or not data else data + b"\n")
        text = b"".join(parts)
        ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 10)
        self._starts = np.concatenate(([0], ends + 1))  # line i: starts[i] .. starts[i+1]-1
        self._text = text

    def __len__(self) -> int:
        if self._text is None:
            self._load()
        return len(self._starts) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        n = len(self)
        assert self._text is not None
        if isinstance(index, slice):
            lo, hi, step = index.indices(n)
            if step != 1:
                return [self[i] for i in range(lo, hi, step)]
            if hi <= lo:
                return []
            chunk = self._text[self._starts[lo] : self._starts[hi] - 1]
            return [line.rstrip("\r") for line in chunk.decode("utf-8").split("\n")]
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"line {index} is outside this share's {n} lines")
        return self._text[self._starts[index] : self._starts[index + 1] - 1].decode().rstrip("\r")

    def __reduce__(self) -> tuple[type[FileLines], tuple[list[Segment]]]:
        return FileLines, (self.segments,)

    def __repr__(self) -> str:
        return f"FileLines({self.segments!r})"


def file_logs(inputs: object, job: Job) -> dict[TaskId, FileLines] | None:
    """The job's sources reading ``inputs``' files directly, one share each (see
    :func:`splits`), if ``inputs`` is a plain local path of files; None otherwise."""
    files = local_files(inputs)
    if files is None:
        return None
    sources = source_tasks(job)
    return {
        t: FileLines(share) for t, share in zip(sources, splits(files, len(sources)), strict=True)
    }
