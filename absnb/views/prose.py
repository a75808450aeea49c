"""Sentences about a run, written by the cell that computes their numbers.

A number typed into a notebook's text drifts from the run it describes; a sentence that a
cell formats from the values it has just computed cannot. :func:`say` returns such a
sentence: JupyterLab (trusted or not), GitHub, nbviewer and the book render it as
Markdown, and its plain-text form is the same sentence, so nbval compares it exactly with
the stored one and a changed number fails the notebook's test.

The template is English; in another language (:func:`absnb.set_language`) the sentence is
formatted from the template's reviewed translation in the notebooks' catalogs
(:mod:`absnb.i18n`), so a notebook's code stays the same in every language.

>>> say("{steps} steps, {done}.", steps=33, done=counted(1, "checkpoint"))
33 steps, 1 checkpoint.
"""

from __future__ import annotations

from absnb.i18n import get_language, gettext

__all__ = ["Sentence", "counted", "say"]


class Sentence(str):
    """Markdown text shown as itself: rendered where Markdown is, read as text elsewhere."""

    __slots__ = ()

    def _repr_markdown_(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return str(self)


def say(template: str, /, **values: object) -> Sentence:
    """``template`` (Markdown with ``str.format`` fields) filled in from ``values``.

    Raises:
        KeyError: the template names a field that ``values`` does not give (a sentence
            with a missing number is never shown).
        ValueError: a value is given that the template never uses (so that a renamed field
            cannot leave a number out of the sentence unnoticed).
    """
    text = gettext(template).format(**values)
    unused = sorted(name for name in values if "{" + name not in template)
    if unused:
        raise ValueError(f"say(): the template never uses {', '.join(unused)}; drop them")
    return Sentence(text)


_COUNTED = {"ko": "{noun} {n:,}개", "zh": "{n:,} 个{noun}"}


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 checkpoint"``, ``"3 checkpoints"``: ``n`` and ``noun``, plural unless ``n == 1``
    (``plural`` where adding an "s" is wrong). ``n`` is written with thousands separators.
    In Korean and Chinese, which have no plural, the noun's translation with a counter."""
    pattern = _COUNTED.get(get_language())
    if pattern is not None:
        return pattern.format(noun=gettext(noun), n=n)
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"
