"""A throwaway PostgreSQL server for tests, as a session fixture (imported by the conftest
files of the tests that need it).

The PostgreSQL tests need Debian's ``postgresql`` package (``initdb``, ``postgres``) and
psycopg 3. Without them they skip, saying what is missing, unless ABSNB_REQUIRE_POSTGRES=1
(set by .ci/run): then they fail, so CI never passes by skipping.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from absnb.sinks.pg_server import PostgresServer, find_bin_dir

REQUIRE_POSTGRES = os.environ.get("ABSNB_REQUIRE_POSTGRES", "") not in ("", "0")


def postgres_missing() -> str | None:
    """Why no throwaway PostgreSQL server can run here (None: it can)."""
    missing = []
    if find_bin_dir() is None:
        missing.append("the PostgreSQL server binaries (Debian: apt-get install postgresql)")
    if importlib.util.find_spec("psycopg") is None:
        missing.append("psycopg 3 (pip install -e '.[test]')")
    return " and ".join(missing) + " not installed" if missing else None


def skip_or_fail(reason: str) -> None:
    if REQUIRE_POSTGRES:
        pytest.fail(f"ABSNB_REQUIRE_POSTGRES is set but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server for the whole run (each test uses its own tables)."""
    reason = postgres_missing()
    if reason is not None:
        skip_or_fail(reason)
    with PostgresServer(max_prepared_transactions=50) as server:
        yield server
