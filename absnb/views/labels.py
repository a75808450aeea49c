"""Labels of the space-time diagram, placed in pixels so that none overlaps another.

:func:`~absnb.views.timeline.layout` places every label with a :class:`Placer`: each takes
the first of its candidate positions (nearest first, :func:`around` a point) whose
estimated box (:func:`text_box`) overlaps no label placed before it and no obstacle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple
from unicodedata import east_asian_width

LABEL_PX = 18
"""Font size of every label on the diagram: readable on a projector at 1280 px wide."""
CHAR_EM = 0.62
"""Width of one character in ems, a generous estimate for a sans-serif font."""


class Box(NamedTuple):
    """A label's bounding box in pixels."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return (
            self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1
        )


class Label(NamedTuple):
    """A text label, centred on ``(x, y)`` in pixels, with its bounding box."""

    text: str
    x: float
    y: float
    kind: str
    box: Box


def wide(text: str) -> int:
    """How many of ``text``'s characters are wide (Korean, Chinese and Japanese: East
    Asian width W or F), each a whole em where others take :data:`CHAR_EM`."""
    return sum(east_asian_width(c) in "WF" for c in text)


def text_box(text: str, x: float, y: float, size: float = LABEL_PX) -> Box:
    """The bounding box of ``text`` centred on ``(x, y)`` (estimated, generously)."""
    k = wide(text)
    w = ((len(text) - k) * size * CHAR_EM + k * size) / 2 + 4
    h = size * 0.7
    return Box(x - w, y - h, x + w, y + h)


class Placer:
    """Greedy label placement: a label takes the first candidate position whose box
    overlaps no label placed before it and no obstacle (arrowheads, snapshot points)."""

    def __init__(self, left: float, right: float, top: float) -> None:
        self.left, self.right, self.top = left, right, top
        self.labels: list[Label] = []
        self.obstacles: list[Box] = []

    def place(
        self, text: str, kind: str, candidates: Sequence[tuple[float, float]]
    ) -> Label | None:
        for x, y in candidates:
            box = text_box(text, x, y)
            if box.x0 < self.left:
                x += self.left - box.x0
            elif box.x1 > self.right:
                x -= box.x1 - self.right
            box = text_box(text, x, y)
            if box.y0 < self.top:
                continue
            if not any(box.overlaps(other.box) for other in self.labels) and not any(
                box.overlaps(o) for o in self.obstacles
            ):
                label = Label(text, x, y, kind, box)
                self.labels.append(label)
                return label
        return None


def around(x: float, y: float, far: int) -> list[tuple[float, float]]:
    """Candidate label centres around a point, nearest first."""
    out = []
    for r in range(1, far + 1):
        d = 16.0 * r
        out += [
            (x, y - d),
            (x, y + d),
            (x + 3 * d, y - d),
            (x - 3 * d, y - d),
            (x + 3 * d, y + d),
            (x - 3 * d, y + d),
        ]
    return out
