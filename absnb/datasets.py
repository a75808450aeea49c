"""The small shipped samples under ``datasets/``, read with the standard library only.

>>> from absnb import datasets
>>> [len(part) for part in datasets.text_partitions()]
[5, 5]
>>> datasets.bank_accounts()
{'A': 10000, 'B': 5000, 'C': 8000, 'D': 2000}

Where ``datasets/`` is looked for, first match wins:

1. the folder named by the environment variable ``ABSNB_DATASETS``;
2. the copy the package carries, ``absnb/_course/datasets/`` (an installed wheel);
3. ``datasets/`` beside the ``absnb`` package (the repository, when installed editable);
4. ``datasets/`` in the current directory or one of its parents (a notebook that runs in
   ``notebooks/`` of a checkout, or of a folder ``absnb notebooks`` wrote).

For 2 to 4 a folder counts only if it holds ``make_text.py``, so that another package's
``datasets/`` folder is never taken for absnb's.

Each sample is written by a seeded script beside it (``python datasets/make_text.py`` and
so on); a missing file raises :class:`DatasetNotFoundError` saying which script rewrites it.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from absnb.core.errors import DatasetNotFoundError

ENV_VAR = "ABSNB_DATASETS"
"""The environment variable that points at a ``datasets/`` folder."""

_MARKER = "make_text.py"
_MAKERS = {"text": "make_text.py", "bank": "make_bank.py", "numbers.txt": "make_numbers.py"}


COURSE = Path(__file__).resolve().parent / "_course"
"""Where a wheel carries the course: ``datasets/`` and ``notebooks/`` (setup.py copies them
there when the wheel is built; an editable install has no such folder)."""


def _candidates() -> list[Path]:
    here = Path(__file__).resolve().parent.parent / "datasets"
    cwd = Path.cwd().resolve()
    return [COURSE / "datasets", here, *(folder / "datasets" for folder in (cwd, *cwd.parents))]


def datasets_dir() -> Path:
    """The ``datasets/`` folder in use (see the module docstring for the search order).

    Raises:
        DatasetNotFoundError: ``ABSNB_DATASETS`` names no folder, or no candidate folder
            holds absnb's samples.
    """
    chosen = os.environ.get(ENV_VAR)
    if chosen:
        # An explicit choice is never silently replaced by another folder.
        folder = Path(chosen).expanduser()
        if not folder.is_dir():
            raise DatasetNotFoundError(
                f"{ENV_VAR} is {chosen!r}, which is not a folder: point it at absnb's "
                "datasets/ folder, or unset it to use the one in the checkout"
            )
        return folder
    candidates = _candidates()
    for folder in candidates:
        # The marker tells absnb's folder from another one called datasets/ (for example
        # site-packages/datasets, Hugging Face's package, beside a non-editable absnb).
        if (folder / _MARKER).is_file():
            return folder
    raise DatasetNotFoundError(
        f"no absnb datasets/ folder found (looked in {', '.join(map(str, candidates[:2]))} "
        f"and in datasets/ of {Path.cwd()} and its parents): install absnb from its wheel, run "
        f"from a checkout of absnb, or set {ENV_VAR} to the folder that holds the samples"
    )


def _regenerate(maker: str, folder: Path) -> str:
    """The command that rewrites ``maker``'s samples into ``folder``."""
    for script in (folder / maker, *(c / maker for c in _candidates())):
        if script.is_file():
            if script.parent.resolve() == folder.resolve():
                return f"python {script}"
            return f"python {script} {folder}"
    return f"python datasets/{maker} {folder} (the script is in absnb's repository)"


def path(relative: str) -> Path:
    """The path of a sample, e.g. ``path("bank/transfers.csv")``, checked to exist.

    Raises:
        DatasetNotFoundError: the file or folder is missing; the message names the script
            that writes it.
    """
    folder = datasets_dir()
    target = folder / relative
    if not target.exists():
        maker = _MAKERS.get(Path(relative).parts[0])
        how = (
            f"regenerate it with: {_regenerate(maker, folder)}"
            if maker
            else "it is not one of the generated samples; check the name"
        )
        raise DatasetNotFoundError(f"dataset {relative!r} is missing from {folder}: {how}")
    return target


def text_names() -> list[str]:
    """The names of the text samples (``large``, ``small``)."""
    return sorted(p.name for p in path("text").iterdir() if p.is_dir())


def text_partitions(name: str = "small") -> list[list[str]]:
    """The word-count input: one list of lines per partition file ``part-<i>.txt``.

    ``small`` is two partitions of five lines from Hamlet's soliloquy; ``large`` is four
    partitions of 500 sampled lines. The result fits ``absnb.word_count(lines=...)``.
    """
    folder = path("text")
    if not (folder / name).is_dir():
        raise DatasetNotFoundError(
            f"no text sample {name!r} in {folder}: choose one of {', '.join(text_names())}, "
            f"or regenerate them with: {_regenerate(_MAKERS['text'], folder.parent)}"
        )
    parts = sorted((folder / name).glob("part-*.txt"), key=lambda p: int(p.stem.split("-")[1]))
    if not parts:
        raise DatasetNotFoundError(
            f"text sample {name!r} in {folder} has no part-*.txt files: regenerate it with: "
            f"{_regenerate(_MAKERS['text'], folder.parent)}"
        )
    return [
        [line for line in p.read_text(encoding="utf-8").splitlines() if line.strip()] for p in parts
    ]


def _rows(relative: str) -> list[dict[str, str]]:
    with open(path(relative), encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def bank_accounts() -> dict[str, int]:
    """Account name -> initial balance, from ``bank/accounts.csv``.

    The result fits ``absnb.bank_transfer(accounts=...)``.
    """
    return {row["account"]: int(row["balance"]) for row in _rows("bank/accounts.csv")}


def bank_transfers() -> list[tuple[str, str, int]]:
    """The ``(src, dst, amount)`` transfers of ``bank/transfers.csv``, in file order.

    Applied one after another from :func:`bank_accounts`, no balance goes below zero.
    """
    return [(row["src"], row["dst"], int(row["amount"])) for row in _rows("bank/transfers.csv")]


def numbers() -> list[int]:
    """The cyclic (Collatz) job's starting numbers, from ``numbers.txt``.

    The result fits ``absnb.cyclic(numbers=...)``.
    """
    text = path("numbers.txt").read_text(encoding="utf-8")
    return [int(line) for line in text.split()]


__all__ = [
    "ENV_VAR",
    "DatasetNotFoundError",
    "bank_accounts",
    "bank_transfers",
    "datasets_dir",
    "numbers",
    "path",
    "text_names",
    "text_partitions",
]
