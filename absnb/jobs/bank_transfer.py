"""The bank of seed 001: accounts are processes that transfer money over FIFO channels."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from absnb.core import validate
from absnb.core.errors import GraphError, InvalidTypeError, TransferRefusedError
from absnb.core.graph import JobGraph
from absnb.core.job import Job
from absnb.operators import Account

MAX_TRANSFERS = 1_000_000
"""The most random transfers a bank makes: the simulator delivers about 100 k messages a
second, so a million transfers already take minutes."""

SEED_001 = {"A": 10_000, "B": 5_000}
"""Seed 001's two accounts."""


def bank_transfer(
    accounts: Mapping[str, int] | Iterable[tuple[str, int]] | None = None,
    links: Iterable[tuple[str, str]] | None = None,
    transfers: int | Sequence[tuple[str, str, int]] = 0,
    seed: int = 1,
    max_amount: int = 1_000,
) -> Job:
    """A bank: one process per account and a channel per directed link.

    Args:
        accounts: account name -> initial balance (or ``(name, balance)`` pairs, each name
            once); by default seed 001's A=10,000, B=5,000.
        links: directed (src, dst) pairs money can flow along; by default every pair, both
            ways.
        transfers: how many random transfers to put in the accounts' input logs (seeded),
            or the transfers themselves as ``(src, dst, amount)`` (e.g.
            ``absnb.datasets.bank_transfers()``); more can be made step by step with
            ``Transfer`` actions.
        seed: the seed of those transfers.
        max_amount: the largest random transfer (amounts are multiples of 100).

    No overdraft: every log is feasible in the order the transfers were made (random
    ones are drawn so; given ones are checked), and in the simulator an account's next
    transfer waits until its balance covers it (``Account.waits``). Taken in that order
    the transfers never wait for good: the earliest one not yet made always has its money
    once the channels drain. The total of all balances plus the money in transit never
    changes.

    Raises:
        GraphError: fewer than two accounts, a name given twice, a bad balance, or a
            transfer along a missing link.
        TransferRefusedError: a given transfer of more than its account's balance at that
            point, or of an amount that is not a positive whole number.
    """
    accounts = _checked_accounts(accounts)
    _check_transfers(transfers)
    validate.whole("seed", seed)
    validate.whole("max_amount", max_amount, minimum=100)
    names = list(accounts)
    if len(names) < 2:
        raise GraphError(
            f"a bank needs at least two accounts, not {accounts!r}: add another account"
        )
    pairs = [(a, b) for a in names for b in names if a != b] if links is None else _links(links)
    g = JobGraph("bank_transfer")
    for name, balance in accounts.items():
        g.add(name, "process", Account(balance, name))
    for a, b in pairs:
        g.connect(a, b)
    graph = g.compile()
    outgoing = {n: [b for a, b in pairs if a == n] for n in names}
    if isinstance(transfers, int):
        logs = _random_logs(accounts, outgoing, transfers, random.Random(seed), max_amount)
    else:
        logs = _given_logs(accounts, outgoing, transfers)
    inputs = {graph.task(n): tuple(logs[n]) for n in names}
    params: dict[str, object] = {
        "accounts": accounts,
        "links": [list(p) for p in pairs],
        "transfers": transfers if isinstance(transfers, int) else [list(t) for t in transfers],
        "seed": seed,
        "max_amount": max_amount,
    }
    return Job("bank_transfer", params, graph, inputs, total=sum(accounts.values()))


def _checked_accounts(
    accounts: Mapping[str, int] | Iterable[tuple[str, int]] | None,
) -> dict[str, int]:
    """The accounts as a dict (seed 001's by default), each a non-empty name with a whole
    balance."""
    if accounts is not None and (
        isinstance(accounts, str | bytes) or not isinstance(accounts, Mapping | Iterable)
    ):
        raise InvalidTypeError(
            f"accounts must map account names to balances, e.g. {{'A': 10000, 'B': 5000}}, "
            f"or list (name, balance) pairs, not {accounts!r}"
        )
    checked = _accounts(SEED_001 if accounts is None else accounts)
    for name, balance in checked.items():
        if not isinstance(name, str) or not name:
            raise InvalidTypeError(f"account name {name!r} must be a non-empty string")
        if not isinstance(balance, int) or isinstance(balance, bool):
            raise InvalidTypeError(
                f"the balance of account {name!r} must be a whole number, not {balance!r}"
            )
    return checked


def _links(links: object) -> list[tuple[str, str]]:
    """``links`` as (src, dst) pairs; anything else (a string, a 1- or 3-tuple) refused."""
    if isinstance(links, str) or not isinstance(links, Iterable):
        raise InvalidTypeError(f"links must be a list of (src, dst) pairs, not {links!r:.80}")
    pairs = []
    for i, pair in enumerate(links):
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise InvalidTypeError(
                f"links[{i}] is {pair!r:.80}, not a (src, dst) pair: write ('A', 'B')"
            )
        pairs.append((pair[0], pair[1]))
    return pairs


def _check_transfers(transfers: int | Sequence[tuple[str, str, int]]) -> None:
    """Refuse anything but a whole number of transfers or a list of (src, dst, amount)."""
    if isinstance(transfers, int):
        validate.whole("transfers", transfers, maximum=MAX_TRANSFERS)
        return
    if isinstance(transfers, str) or not isinstance(transfers, Sequence):
        raise InvalidTypeError(
            f"transfers must be a number of random transfers or a list of (src, dst, amount), "
            f"not {transfers!r}"
        )
    for i, t in enumerate(transfers):
        if isinstance(t, str) or not isinstance(t, Sequence) or len(t) != 3:
            raise InvalidTypeError(
                f"transfers[{i}] is {t!r:.80}, not a (src, dst, amount) triple: write "
                "('A', 'B', 100)"
            )


Logs = dict[str, list[tuple[str, int]]]
"""Each account's input log: the (dst, amount) transfers it makes, in order."""


def _random_logs(
    accounts: dict[str, int],
    outgoing: dict[str, list[str]],
    transfers: int,
    rng: random.Random,
    max_amount: int,
) -> Logs:
    """``transfers`` random transfers, each from an account that holds at least 100 at that
    point along one of its links, of a multiple of 100 it can afford (no overdraft)."""
    logs: Logs = {n: [] for n in accounts}
    balances = dict(accounts)  # as the transfers are made one after another
    linked = [n for n in accounts if outgoing[n]]
    if transfers > 0 and not linked:
        raise GraphError(
            f"the bank has no links, so it cannot make {transfers} transfer(s): "
            "add links or pass transfers=0"
        )
    for i in range(transfers):
        senders = [n for n in linked if balances[n] >= 100]
        if not senders:
            raise GraphError(
                f"no linked account holds 100 after {i} transfer(s), so transfer {i} "
                "cannot be made: give the accounts larger balances"
            )
        src = rng.choice(senders)
        dst = rng.choice(outgoing[src])
        amount = 100 * rng.randint(1, max(1, min(max_amount, balances[src]) // 100))
        _transfer(balances, logs, src, dst, amount)
    return logs


def _given_logs(
    accounts: dict[str, int],
    outgoing: dict[str, list[str]],
    transfers: Sequence[tuple[str, str, int]],
) -> Logs:
    """The given transfers, each checked along a link and affordable in that order."""
    logs: Logs = {n: [] for n in accounts}
    balances = dict(accounts)  # as the transfers are made one after another
    for i, (src, dst, amount) in enumerate(transfers):
        if dst not in outgoing.get(src, ()):
            raise GraphError(
                f"transfer {i} sends {amount!r} from {src!r} to {dst!r}, but there is no "
                f"link {src}->{dst}: add the link or fix the transfer"
            )
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            raise TransferRefusedError(
                f"transfer {i} ({src}->{dst}) has amount {amount!r}: "
                "amounts must be positive whole numbers"
            )
        if amount > balances[src]:
            raise TransferRefusedError(
                f"transfer {i}: account {src} has a balance of {balances[src]:,} after the "
                f"transfers before it, less than the {amount:,} it would send to {dst}: "
                "no overdraft; lower the amount or reorder the transfers"
            )
        _transfer(balances, logs, src, dst, amount)
    return logs


def _transfer(balances: dict[str, int], logs: Logs, src: str, dst: str, amount: int) -> None:
    """Make one transfer: move ``amount`` from ``src`` to ``dst`` and log it at ``src``."""
    balances[src] -= amount
    balances[dst] += amount
    logs[src].append((dst, amount))


def _accounts(accounts: Mapping[str, int] | Iterable[tuple[str, int]]) -> dict[str, int]:
    """The accounts as a dict, refusing a name given twice."""
    if isinstance(accounts, Mapping):
        return dict(accounts)
    out: dict[str, int] = {}
    for entry in accounts:
        if not isinstance(entry, tuple | list) or len(entry) != 2:
            raise InvalidTypeError(
                f"accounts lists (name, balance) pairs such as ('A', 10000), not {entry!r}"
            )
        name, balance = entry
        if name in out:
            raise GraphError(
                f"account {name!r} is given twice (balances {out[name]!r} and {balance!r}): "
                "give each account once"
            )
        out[name] = balance
    return out
