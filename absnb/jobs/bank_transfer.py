"""The bank of seed 001: accounts are processes that transfer money over FIFO channels."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from absnb.core import validate
from absnb.core.errors import GraphError, InvalidTypeError
from absnb.core.graph import JobGraph
from absnb.jobs.base import Job
from absnb.operators import Account

SEED_001 = {"A": 10_000, "B": 5_000}
"""Seed 001's two accounts."""


def bank_transfer(
    accounts: Mapping[str, int] | None = None,
    links: Iterable[tuple[str, str]] | None = None,
    transfers: int | Sequence[tuple[str, str, int]] = 0,
    seed: int = 1,
    max_amount: int = 1_000,
) -> Job:
    """A bank: one process per account and a channel per directed link.

    Args:
        accounts: account name -> initial balance; by default seed 001's A=10,000, B=5,000.
        links: directed (src, dst) pairs money can flow along; by default every pair, both
            ways.
        transfers: how many random transfers to put in the accounts' input logs (seeded),
            or the transfers themselves as ``(src, dst, amount)`` (e.g.
            ``absnb.datasets.bank_transfers()``); more can be made step by step with
            ``Transfer`` actions.
        seed: the seed of those transfers.
        max_amount: the largest random transfer (amounts are multiples of 100).

    The total of all balances plus the money in transit never changes.
    """
    if accounts is not None and not isinstance(accounts, Mapping):
        raise InvalidTypeError(
            f"accounts must map account names to balances, e.g. {{'A': 10000, 'B': 5000}}, "
            f"not {accounts!r}"
        )
    accounts = dict(SEED_001 if accounts is None else accounts)
    for name, balance in accounts.items():
        if not isinstance(name, str) or not name:
            raise InvalidTypeError(f"account name {name!r} must be a non-empty string")
        if not isinstance(balance, int) or isinstance(balance, bool):
            raise InvalidTypeError(
                f"the balance of account {name!r} must be a whole number, not {balance!r}"
            )
    if isinstance(transfers, int):
        validate.whole("transfers", transfers)
    elif isinstance(transfers, str) or not isinstance(transfers, Sequence):
        raise InvalidTypeError(
            f"transfers must be a number of random transfers or a list of (src, dst, amount), "
            f"not {transfers!r}"
        )
    validate.whole("seed", seed)
    validate.whole("max_amount", max_amount, minimum=100)
    names = list(accounts)
    if len(names) < 2:
        raise GraphError(
            f"a bank needs at least two accounts, not {accounts!r}: add another account"
        )
    pairs = (
        [(a, b) for a in names for b in names if a != b]
        if links is None
        else [tuple(pair) for pair in links]
    )
    g = JobGraph("bank_transfer")
    for name, balance in accounts.items():
        g.add(name, "process", Account(int(balance)))
    for a, b in pairs:
        g.connect(a, b)
    graph = g.compile()
    rng = random.Random(seed)
    logs: dict[str, list[tuple[str, int]]] = {n: [] for n in names}
    outgoing = {n: [b for a, b in pairs if a == n] for n in names}
    if isinstance(transfers, int):
        senders = [n for n in names if outgoing[n]]
        if transfers > 0 and not senders:
            raise GraphError(
                f"the bank has no links, so it cannot make {transfers} transfer(s): "
                "add links or pass transfers=0"
            )
        for _ in range(transfers):
            src = rng.choice(senders)
            dst = rng.choice(outgoing[src])
            logs[src].append((dst, 100 * rng.randint(1, max(1, max_amount // 100))))
    else:
        for i, (src, dst, amount) in enumerate(transfers):
            if dst not in outgoing.get(src, ()):
                raise GraphError(
                    f"transfer {i} sends {amount!r} from {src!r} to {dst!r}, but there is no "
                    f"link {src}->{dst}: add the link or fix the transfer"
                )
            if not isinstance(amount, int) or amount <= 0:
                raise GraphError(
                    f"transfer {i} ({src}->{dst}) has amount {amount!r}: "
                    "amounts must be positive whole numbers"
                )
            logs[src].append((dst, amount))
    inputs = {graph.task(n): tuple(logs[n]) for n in names}
    params = {
        "accounts": accounts,
        "links": [list(p) for p in pairs],
        "transfers": transfers if isinstance(transfers, int) else [list(t) for t in transfers],
        "seed": seed,
        "max_amount": max_amount,
    }
    return Job("bank_transfer", params, graph, inputs, total=sum(accounts.values()))
