"""The soak's reference answers (benchmarks/soak/run.py) are computed on Spark apart from
the dataflow; they must be the jobs' answers, or every trial reads as lost and duplicated
output."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from absnb.jobs.paper_topology import expected_output, paper_topology

_RUN = Path(__file__).resolve().parents[2] / "benchmarks" / "soak" / "run.py"
_spec = importlib.util.spec_from_file_location("soak_run", _RUN)
assert _spec is not None
assert _spec.loader is not None
soak = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = soak  # its dataclasses look their module up there
_spec.loader.exec_module(soak)


def test_the_soak_counts_the_figure_5_job_s_groups_as_the_job_groups_them(spark: Any) -> None:
    size = soak.PAPER
    job = paper_topology(size["parallelism"], size["records"], size["keys"], size["groups"])
    answer = soak.paper_answer(spark, job)
    assert answer == Counter(dict(expected_output(job)))
    assert sum(answer.values()) == size["records"]
    assert len(answer) == size["groups"]
