"""Fixtures of the sink tests: a sink factory per external system, a throwaway PostgreSQL
server (:mod:`tests.sinks.pg`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from absnb.operators.base import Operator
from absnb.sinks import MemorySink
from tests.sinks.harness import file_sinks, file_stores, postgres_sinks
from tests.sinks.pg import pg_server  # noqa: F401 (a fixture)

SINK_KINDS = ("memory", "files", "file-store", "postgres")


@pytest.fixture(scope="session")
def files_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("file-sinks")


@pytest.fixture(params=SINK_KINDS)
def make_sink(request: pytest.FixtureRequest, files_base: Path) -> Callable[[], Operator]:
    """A factory of fresh two-phase-commit sinks: in memory, files, the memory sink on a
    file store, PostgreSQL."""
    if request.param == "memory":
        return MemorySink
    if request.param == "files":
        return file_sinks(files_base)
    if request.param == "file-store":
        return file_stores(files_base)
    return postgres_sinks(request.getfixturevalue("pg_server").dsn)
