"""default_session's Python workers run the driver's interpreter (a virtual environment's),
not whatever ``python3`` comes first on the PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import absnb

CHILD = """
import json, sys
import absnb
from absnb.runtime.spark import default_session
spark = default_session("local[1]")
ran = spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).collect()
print(json.dumps({"exec": spark.sparkContext.pythonExec, "ran": ran, "file": absnb.__file__}))
spark.stop()
"""


@pytest.mark.skipif(shutil.which("java") is None, reason="Java is not installed")
def test_local_workers_run_the_drivers_interpreter(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    # the package under test, from a directory that does not hold it
    env["PYTHONPATH"] = str(Path(absnb.__file__).parent.parent)
    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["file"] == absnb.__file__
    assert result["exec"] == sys.executable
    assert Path(result["ran"][0]).resolve() == Path(sys.executable).resolve()
