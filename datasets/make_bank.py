"""Write the bank: ``bank/accounts.csv`` (initial balances) and ``bank/transfers.csv``.

    python datasets/make_bank.py            # rewrites datasets/bank/ next to this script
    python datasets/make_bank.py OUT_DIR    # writes OUT_DIR/bank/ instead

Deterministic: the same seed gives byte-identical files on every machine and Python 3.10+.

* ``accounts.csv`` (``account,balance``): A=10,000 and B=5,000 as in seed 001, plus
  C=8,000 and D=2,000; 25,000 in all.
* ``transfers.csv`` (``src,dst,amount``): 40 seeded transfers between distinct accounts,
  amounts in multiples of 100 from 100 to 1,000. Applied one after another in file order,
  no account ever goes below zero (a transfer the sender cannot afford is redrawn).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

from _cli import arguments

SEED = 1
ACCOUNTS = {"A": 10_000, "B": 5_000, "C": 8_000, "D": 2_000}
TRANSFERS = 40
MAX_AMOUNT = 1_000


def transfers(seed: int, count: int = TRANSFERS) -> list[tuple[str, str, int]]:
    rng = random.Random(seed)
    balances = dict(ACCOUNTS)
    names = sorted(balances)
    rows: list[tuple[str, str, int]] = []
    while len(rows) < count:
        src, dst = rng.sample(names, 2)
        amount = 100 * rng.randint(1, MAX_AMOUNT // 100)
        if amount > balances[src]:
            continue
        balances[src] -= amount
        balances[dst] += amount
        rows.append((src, dst, amount))
    return rows


def write_csv(path: Path, header: tuple[str, ...], rows: list[tuple]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> None:
    args = arguments(__doc__, "bank/", SEED, argv)
    bank = args.out_dir / "bank"
    write_csv(bank / "accounts.csv", ("account", "balance"), sorted(ACCOUNTS.items()))
    write_csv(bank / "transfers.csv", ("src", "dst", "amount"), transfers(args.seed))
    print(f"wrote {bank}")


if __name__ == "__main__":
    main()
