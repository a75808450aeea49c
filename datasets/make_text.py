"""Write the word-count text partitions: ``text/small/`` and ``text/large/``.

    python datasets/make_text.py            # rewrites datasets/text/ next to this script
    python datasets/make_text.py OUT_DIR    # writes OUT_DIR/text/ instead

Deterministic: the same seed gives byte-identical files on every machine and Python 3.10+.

* ``text/small/part-0.txt``, ``part-1.txt``: the opening ten lines of Hamlet's soliloquy
  (Shakespeare, public domain), five lines per partition.
* ``text/large/part-0.txt`` .. ``part-3.txt``: 2,000 lines (500 per partition) sampled from a
  seeded bigram ("Markov-ish") model of the whole soliloquy.

Every line is normalized for ``str.split()``: lower case, letters and inner apostrophes
only, one space between words.
"""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path

from _cli import arguments

SEED = 2015  # the year of the ABS paper
SMALL_PARTITIONS = 2
LARGE_PARTITIONS = 4
LARGE_LINES = 2_000

# Hamlet, Act III, Scene 1 (Shakespeare, 1603; public domain), typed in.
SOLILOQUY = """\
To be, or not to be, that is the question:
Whether 'tis nobler in the mind to suffer
The slings and arrows of outrageous fortune,
Or to take arms against a sea of troubles
And by opposing end them. To die: to sleep;
No more; and by a sleep to say we end
The heart-ache and the thousand natural shocks
That flesh is heir to, 'tis a consummation
Devoutly to be wish'd. To die, to sleep;
To sleep: perchance to dream: ay, there's the rub;
For in that sleep of death what dreams may come
When we have shuffled off this mortal coil,
Must give us pause: there's the respect
That makes calamity of so long life;
For who would bear the whips and scorns of time,
The oppressor's wrong, the proud man's contumely,
The pangs of despised love, the law's delay,
The insolence of office and the spurns
That patient merit of the unworthy takes,
When he himself might his quietus make
With a bare bodkin? who would fardels bear,
To grunt and sweat under a weary life,
But that the dread of something after death,
The undiscover'd country from whose bourn
No traveller returns, puzzles the will
And makes us rather bear those ills we have
Than fly to others that we know not of?
Thus conscience does make cowards of us all;
And thus the native hue of resolution
Is sicklied o'er with the pale cast of thought,
And enterprises of great pith and moment
With this regard their currents turn awry,
And lose the name of action.
"""


def normalize(line: str) -> str:
    """Lower case, words of letters and inner apostrophes, single spaces."""
    words = re.sub(r"[^a-z']+", " ", line.lower()).split()
    return " ".join(w.strip("'") for w in words if w.strip("'"))


def source_lines() -> list[str]:
    return [normalize(line) for line in SOLILOQUY.splitlines() if line.strip()]


def small_partitions() -> list[list[str]]:
    lines = source_lines()[:10]
    size = len(lines) // SMALL_PARTITIONS
    return [lines[i * size : (i + 1) * size] for i in range(SMALL_PARTITIONS)]


def large_partitions(seed: int) -> list[list[str]]:
    """Sample lines from the soliloquy's bigrams: start with a word that starts a line,
    then follow a successor seen in the text (lists keep their order, so the choices are
    reproducible), for 3 to 9 words."""
    successors: dict[str, list[str]] = {}
    starts: list[str] = []
    for line in source_lines():
        words = line.split()
        starts.append(words[0])
        for a, b in itertools.pairwise(words):
            successors.setdefault(a, []).append(b)
    rng = random.Random(seed)
    lines = []
    for _ in range(LARGE_LINES):
        word = rng.choice(starts)
        words = [word]
        for _ in range(rng.randint(2, 8)):
            word = rng.choice(successors.get(word) or starts)
            words.append(word)
        lines.append(" ".join(words))
    size = LARGE_LINES // LARGE_PARTITIONS
    return [lines[i * size : (i + 1) * size] for i in range(LARGE_PARTITIONS)]


def write_partitions(folder: Path, partitions: list[list[str]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("part-*.txt"):
        old.unlink()
    for i, lines in enumerate(partitions):
        with open(folder / f"part-{i}.txt", "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(line + "\n" for line in lines))


def main(argv: list[str] | None = None) -> None:
    args = arguments(__doc__, "text/", SEED, argv)
    write_partitions(args.out_dir / "text" / "small", small_partitions())
    write_partitions(args.out_dir / "text" / "large", large_partitions(args.seed))
    print(f"wrote {args.out_dir / 'text'}")


if __name__ == "__main__":
    main()
