"""The job a command line names: a built-in builder with its options, or a user's own."""

from __future__ import annotations

import argparse

from absnb.core.job import Job
from absnb.jobs import build_job
from absnb.jobs.custom import build_custom, is_custom

DEFAULT_PROTOCOL = {
    "bank_transfer": "chandy-lamport",
    "word_count": "abs",
    "cyclic": "abs-cyclic",
    "paper_topology": "abs",
}


def make_job(args: argparse.Namespace, lines: list[list[str]] | None = None) -> Job:
    """The job of ``run`` or ``explore``; ``lines`` replaces word count's default lines.

    Raises:
        UnknownJobError: a custom builder cannot be imported or does not return a Job.
    """
    if is_custom(args.job):
        options = ("--transfers", "--accounts", "--parallelism", "--sink")
        for option in options:
            if getattr(args, option[2:]) is not None:
                args.subparser.error(f"{option} applies to the built-in jobs only, not {args.job}")
        return build_custom(args.job)
    params = job_params(args)
    if lines is not None and args.job == "word_count":
        n = args.parallelism or len(lines)
        params["lines"] = [lines[i % len(lines)] for i in range(n)]
        params.pop("sources", None)
    return build_job(args.job, **params)


def job_params(args: argparse.Namespace) -> dict[str, object]:
    """The builder arguments the options give a built-in job."""
    if args.sink is not None and args.job != "word_count":
        args.subparser.error("--sink applies to --job word_count only")
    if args.parallelism is not None and args.job not in ("word_count", "cyclic"):
        args.subparser.error("--parallelism applies to --job word_count and cyclic only")
    if args.job != "bank_transfer":
        for option, value in (("--transfers", args.transfers), ("--accounts", args.accounts)):
            if value is not None:
                args.subparser.error(f"{option} applies to --job bank_transfer only")
        params: dict[str, object] = {} if args.sink is None else {"sink": args.sink}
        n = args.parallelism
        if n is not None and args.job == "word_count":
            params.update(sources=n, counters=n, sinks=n)
        elif n is not None:
            params.update(sources=n, parallelism=n)
        return params
    params = {"transfers": 20 if args.transfers is None else args.transfers, "seed": args.seed}
    if args.accounts is not None:
        params["accounts"] = args.accounts
    return params


def default_protocol(job: Job) -> str:
    """The protocol a job runs under when none is named: Chandy-Lamport for processes (the
    bank), Alg. 2 for a cyclic graph, else ABS Alg. 1."""
    if job.builder in DEFAULT_PROTOCOL:
        return DEFAULT_PROTOCOL[job.builder]
    graph = job.graph
    if any(graph.kind(t) == "process" for t in graph.tasks):
        return "chandy-lamport"
    return "abs-cyclic" if graph.is_cyclic else "abs"
