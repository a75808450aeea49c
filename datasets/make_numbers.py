"""Write ``numbers.txt``: the starting numbers of the cyclic (Collatz) job, one per line.

    python datasets/make_numbers.py            # rewrites datasets/numbers.txt
    python datasets/make_numbers.py OUT_DIR    # writes OUT_DIR/numbers.txt instead

Deterministic: the same seed gives byte-identical files on every machine and Python 3.10+.

16 distinct numbers from 2 to 40, in seeded random order. Each one travels the loop
(n/2 or 3n+1) until it reaches 1: with the default seed 315 iterations in all, the
longest 106 (for 31). That suits a run to completion; to step by hand, take a few of
them (the cyclic job's default is 3, 5, 6, 7).
"""

from __future__ import annotations

import random

from _cli import arguments

SEED = 3
COUNT = 16
LOW, HIGH = 2, 40


def numbers(seed: int) -> list[int]:
    return random.Random(seed).sample(range(LOW, HIGH + 1), COUNT)


def main(argv: list[str] | None = None) -> None:
    args = arguments(__doc__, "numbers.txt", SEED, argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / "numbers.txt"
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(f"{n}\n" for n in numbers(args.seed)))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
