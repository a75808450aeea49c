"""Draws the README's and the book's picture from a real run of the simulator.

    python docs/make_picture.py        # writes docs/_static/word_count_abs.svg

Word count under ABS (Algorithm 1), seeded: the graph after the eighth step, where
``count[0]`` has barrier 1 on one input, has blocked it and is buffering what arrives on
it (notebook 00 stops at the same moment).
"""

from __future__ import annotations

from pathlib import Path

import absnb
from absnb.views import graph_svg

PICTURE = Path(__file__).resolve().parent / "_static" / "word_count_abs.svg"


def picture() -> str:
    """The SVG of word count under ABS after 8 steps of seed 1, checkpoint interval 4."""
    world = absnb.World(absnb.word_count(), "abs", checkpoint_interval=4)
    stepper = absnb.Stepper(world, absnb.RandomScheduler(seed=1))
    stepper.run(8)
    return graph_svg(stepper.world)


if __name__ == "__main__":
    PICTURE.write_text(picture(), encoding="utf-8")
    print(f"wrote {PICTURE.name}")
