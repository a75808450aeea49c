"""``absnb explore``: every interleaving of a small job (:mod:`absnb.sim.explore`), with the
invariants checked after every step and exactly-once at every end, and a progress bar;
``--crashes`` adds a crash of every task at every step, ``--ends`` a finished sender ending
each of its channels wherever it may (the ``ended`` count says how many transitions did)."""

from __future__ import annotations

import argparse
import json

from absnb.cli.jobs import default_protocol, make_job
from absnb.cli.progress import Progress
from absnb.cli.run import steps
from absnb.sim.actions import EndInput
from absnb.sim.checks import reference_output
from absnb.sim.events import Event
from absnb.sim.explore import (
    Exploration,
    Invariant,
    explore,
    feasible_snapshots,
    money_conserved,
    no_deadlock,
    output_is_exactly_once,
)
from absnb.sim.trace import TraceHeader, save_trace
from absnb.sim.world import World

EXPLORE_TRANSFERS = 2
"""The bank's random transfers when ``--transfers`` is not given: few, so that the search
is exhaustive."""
EXPLORE_LINES = [["a b"], ["b a"]]
"""Word count's input in an exploration: one line of two words per source."""
CRASH_DEPTH = 10
"""The depth bound with ``--crashes`` when none is given: a crash is always possible, so
the search never ends on its own."""


def cmd_explore(args: argparse.Namespace) -> int:
    """``absnb explore``: exit 0 when no invariant is violated, 1 when one is."""
    if args.job == "bank_transfer" and args.transfers is None:
        args.transfers = EXPLORE_TRANSFERS
    job = make_job(args, lines=EXPLORE_LINES)
    if args.crashes and args.max_depth is None:
        args.max_depth = CRASH_DEPTH
    world = World(
        job,
        args.protocol or default_protocol(job),
        max_checkpoints=args.checkpoints,
        allow_deadlock=args.allow_deadlock,
        alignment_timeout=steps(args, "alignment_timeout"),
        checkpoint_timeout=steps(args, "checkpoint_timeout"),
    )
    ended = 0
    with Progress("explore", "transitions") as progress:

        def count(world: World, event: Event) -> None:
            nonlocal ended
            progress.update()
            ended += type(event.action) is EndInput

        invariants: list[Invariant] = [feasible_snapshots, count]
        if job.total is not None:
            invariants.insert(1, money_conserved)
        result = explore(
            world,
            invariants,
            [no_deadlock, output_is_exactly_once(reference_output(job))],
            max_states=args.max_states,
            max_depth=args.max_depth,
            crashes=args.crashes,
            ends=args.ends,
        )
    if result.violation is not None and args.save_trace:
        save_trace(args.save_trace, TraceHeader.of(world), result.counterexample)
    if args.json:
        print(json.dumps({**exploration_json(world, result, args), "ended": ended}, indent=2))
    else:
        g = world.graph
        print(
            f"{job.builder} with {world.protocol.name}: {len(g.tasks)} tasks, "
            f"{len(g.channels)} channels; at most {args.checkpoints} checkpoint(s)"
            + (f", crashes at every step to depth {args.max_depth}" if args.crashes else "")
            + (
                f"; ends of input explored ({ended:,} transitions end a channel)"
                if args.ends
                else ""
            )
        )
        print(result)
        if result.violation is not None and args.save_trace:
            print(f"counterexample saved to {args.save_trace}: absnb replay {args.save_trace}")
    return 0 if result.ok else 1


def exploration_json(
    world: World, result: Exploration, args: argparse.Namespace
) -> dict[str, object]:
    """The exploration as one JSON object."""
    return {
        "job": world.job.builder,
        "protocol": world.protocol.name,
        "checkpoints": args.checkpoints,
        "crashes": args.crashes,
        "ends": args.ends,
        "states": result.states,
        "transitions": result.transitions,
        "terminal": result.terminal,
        "max_depth": result.max_depth,
        "complete": result.complete,
        "violation": result.violation,
        "counterexample": [str(a) for a in result.counterexample],
    }
