"""The driver on Spark: :class:`~absnb.runtime.SparkRuntime` runs a job as one barrier stage and
recovers after failures (:mod:`.recovery`); :func:`~absnb.runtime.spark.session.default_session`
makes a small, quick session (:mod:`.session`), with Spark's Python daemon (:mod:`.daemon`) and the
JVM's class-data archive (:mod:`.jvm_archive`); job inputs from DataFrames and files
(:mod:`.inputs`); the Structured Streaming file sink (:mod:`.structured_streaming`); and Spark's own
word count, the oracle (:mod:`.answers`). The only package that imports pyspark, and only when it
runs.
"""

from absnb.runtime.spark.answers import final_counts, word_count_answer, word_count_answer_from
from absnb.runtime.spark.result import SparkRun
from absnb.runtime.spark.runtime import ClusterTooSmallError, SparkRuntime
from absnb.runtime.spark.session import default_session, quiet_task_failures

__all__ = [
    "ClusterTooSmallError",
    "SparkRun",
    "SparkRuntime",
    "default_session",
    "final_counts",
    "quiet_task_failures",
    "word_count_answer",
    "word_count_answer_from",
]
