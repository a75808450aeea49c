"""One SparkSession for the whole test run (starting one takes seconds)."""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def spark():
    # The end-to-end Spark tests pass, but a run of them hangs now and then (under
    # investigation), so they run only on request until that is fixed.
    if os.environ.get("ABSNB_SPARK_TESTS") != "1":
        pytest.skip("end-to-end Spark tests run with ABSNB_SPARK_TESTS=1")
    if shutil.which("java") is None:
        pytest.skip("Java is not installed (PySpark needs it)")
    from absnb.runtime.spark import default_session

    session = default_session("local[2]")
    yield session
    session.stop()
