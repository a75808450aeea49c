"""Spark's own batch answers for word count: the oracle a real run's output is checked
against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def word_count_answer(spark: SparkSession, lines: Sequence[Sequence[str]]) -> dict[str, int]:
    """Spark's own batch answer for word count on the same input: the oracle."""
    rows = [(line,) for part in lines for line in part]
    return word_count_answer_from(spark, spark.createDataFrame(rows, "line string"))


def word_count_answer_from(spark: SparkSession, inputs: object) -> dict[str, int]:
    """Spark's batch answer, ``groupBy(word).count()``, for word count on ``inputs``: a
    DataFrame of one string column or a path of text files, as ``run(..., inputs=)`` takes."""
    from pyspark.sql import functions as F

    from absnb.runtime.spark.inputs import lines_frame

    df = lines_frame(spark, inputs)
    line = F.col(df.columns[0])
    words = df.select(F.explode(F.split(line, r"\s+")).alias("word")).where("word != ''")
    return {r["word"]: r["count"] for r in words.groupBy("word").count().collect()}


def final_counts(output: Sequence[tuple[str, int]]) -> dict[str, int]:
    """The last count of every word in a word count output."""
    counts: dict[str, int] = {}
    for word, n in output:
        counts[word] = max(n, counts.get(word, 0))
    return counts
