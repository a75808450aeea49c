"""The teaching jobs as builders: word count, bank transfer, and a cyclic dataflow."""

from __future__ import annotations

from collections.abc import Callable

from absnb.core.errors import UnknownJobError
from absnb.core.job import Job
from absnb.jobs.bank_transfer import bank_transfer
from absnb.jobs.cyclic import cyclic
from absnb.jobs.paper_topology import paper_topology
from absnb.jobs.word_count import word_count

BUILDERS: dict[str, Callable[..., Job]] = {
    "word_count": word_count,
    "bank_transfer": bank_transfer,
    "cyclic": cyclic,
    "paper_topology": paper_topology,
}


def build_job(name: str, **params: object) -> Job:
    """Build the job ``name`` (``word_count``, ``bank_transfer``, ``cyclic`` or
    ``paper_topology``)."""
    key = name.replace("-", "_")
    if key == "bank":
        key = "bank_transfer"
    if key not in BUILDERS:
        raise UnknownJobError(f"unknown job {name!r}: choose one of {', '.join(BUILDERS)}")
    return BUILDERS[key](**params)


__all__ = [
    "BUILDERS",
    "Job",
    "bank_transfer",
    "build_job",
    "cyclic",
    "paper_topology",
    "word_count",
]
