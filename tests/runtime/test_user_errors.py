"""The user's error, not the restart loop's (issue 12, item 7): an error on an executor
before its host connects (every port of the range taken, a ``ValueError`` in a user
operator, a user module the executors cannot import) reaches ``SparkRuntime.run`` as
that error, with its message, at once; not as a ``RestartLimitError`` after every restart,
nor as a Spark stack trace. An error of a user operator while the job runs is restarted
like any failure, and once the restarts are used up it too is raised as itself."""

from __future__ import annotations

import importlib
import sys
import textwrap
from typing import Any

import pytest

from absnb.core.graph import Hash, JobGraph
from absnb.core.job import Job
from absnb.jobs.word_count import split_words, word
from absnb.operators import KeyedCount, Operator, Source
from absnb.runtime import RestartLimitError
from absnb.runtime.connections.wire import NoFreePortError
from absnb.runtime.spark import SparkRuntime
from absnb.sinks import make_sink
from tests.runtime.test_ports import free_range

LINES = [["to be or not to be"] * 20, ["be quick or be still"] * 20]


def counting_job(counter: Operator) -> Job:
    """Word count with ``counter`` as its counting operator."""
    g = JobGraph("user_job")
    g.add("source", "source", Source(split=split_words), 2)
    g.add("count", "operator", counter, 2)
    g.add("sink", "sink", make_sink("collect")[0], 2)
    g.connect("source", "count", Hash(word))
    g.connect("count", "sink")
    graph = g.compile()
    inputs = {t: tuple(LINES[t.subtask]) for t in graph.tasks_of("source")}
    return Job("user_job", {}, graph, inputs)


class BadStart(KeyedCount):
    """A counter whose initial state cannot be made (a bad configuration, say)."""

    def initial_state(self) -> Any:
        raise ValueError("the counter needs a positive window, not -1")


class BadRecord(KeyedCount):
    """A counter that fails on the word 'quick' (a bug in the user's function)."""

    def process_batch(self, state: Any, values: Any) -> Any:
        if "quick" in values:
            raise ValueError("cannot count 'quick'")
        return super().process_batch(state, values)


@pytest.fixture
def runtime(spark, tmp_path) -> SparkRuntime:
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path / "checkpoints"))


def test_a_value_error_setting_up_an_operator_is_raised_as_itself(runtime) -> None:
    with pytest.raises(ValueError, match="positive window, not -1") as raised:
        runtime.run(counting_job(BadStart()), "abs", max_restarts=3)
    assert not isinstance(raised.value, RestartLimitError)
    if sys.version_info >= (3, 11):  # add_note
        assert "not restarted" in " ".join(raised.value.__notes__)


def test_a_value_error_while_running_is_raised_as_itself_after_the_restarts(runtime) -> None:
    with pytest.raises(ValueError, match="cannot count 'quick'") as raised:
        runtime.run(counting_job(BadRecord()), "abs", max_restarts=1)
    assert isinstance(raised.value.__cause__, RestartLimitError)
    assert "failed 2 times" in str(raised.value.__cause__)


def test_a_full_port_range_on_the_executors_is_raised_as_itself(spark, tmp_path) -> None:
    ports = free_range(1)  # the coordinator takes the only port: no host finds one
    runtime = SparkRuntime(spark, checkpoint_dir=str(tmp_path), ports=ports)
    with pytest.raises(NoFreePortError, match=rf"every port from {ports.start} to"):
        runtime.run(counting_job(KeyedCount(key=word)), "abs", max_restarts=3)


def test_a_user_module_the_executors_cannot_import_is_raised_as_itself(
    runtime, tmp_path, monkeypatch
) -> None:
    """The module is on the driver's path only (as a notebook's own folder may be)."""
    (tmp_path / "absnb_users_counter.py").write_text(
        textwrap.dedent(
            """
            from absnb.operators import KeyedCount

            class MyCounter(KeyedCount):
                pass
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("absnb_users_counter")
    try:
        job = counting_job(module.MyCounter(key=word))
        with pytest.raises(ModuleNotFoundError, match="absnb_users_counter"):
            runtime.run(job, "abs", max_restarts=3)
    finally:
        sys.modules.pop("absnb_users_counter", None)
