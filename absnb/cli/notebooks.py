"""``absnb notebooks [DIR] [--lang ko] [--force]``: the course, written where a student can
open it.

Writes ``DIR/notebooks/`` (the eight notebooks, stored with their outputs, the labs in
``DIR/notebooks/labs/``, and nbval's sanitize rules; with ``--lang ko`` or ``--lang zh`` the
Korean or Chinese ones, in ``DIR/notebooks/ko/`` or ``DIR/notebooks/zh/``, their labs in
``labs/`` there) and
``DIR/datasets/`` (the samples and trace files they read), laid out as in the repository so
that every relative path in a notebook holds. The course comes from the installed package (a
wheel carries it in ``absnb/_course/``) or, in an editable install, from the repository's
own folders. A file already in DIR that differs from the course's (a student's edits) is
never overwritten without ``--force``: the command then names the files and writes nothing."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from absnb.core.errors import AbsnbError
from absnb.datasets import COURSE
from absnb.views.prose import counted

PARTS = ("notebooks", "datasets")
"""The course's two folders, written side by side."""

LABS = "labs"
"""The labs' folder, inside the notebooks' folder of each language (:func:`labs_dir`)."""


class CourseNotFoundError(AbsnbError, FileNotFoundError):
    """This absnb carries no course (neither a wheel's copy nor a repository beside it)."""


def course_root() -> Path:
    """The folder holding the course's ``notebooks/`` and ``datasets/``.

    Raises:
        CourseNotFoundError: neither the package's copy nor a repository beside it is there.
    """
    repository = Path(__file__).resolve().parents[2]
    for root in (COURSE, repository):
        if all((root / part).is_dir() for part in PARTS) and any(
            (root / "notebooks").glob("*.ipynb")
        ):
            return root
    raise CourseNotFoundError(
        f"this absnb carries no course (looked in {COURSE} and {repository}): install it from "
        "its wheel (pip install absnb) or from a clone of its repository"
    )


def notebooks_dir(lang: str) -> Path:
    """Where the notebooks in ``lang`` are, relative to the course's root."""
    return Path("notebooks") if lang == "en" else Path("notebooks") / lang


def labs_dir(lang: str) -> Path:
    """Where the labs in ``lang`` are, relative to the course's root."""
    return notebooks_dir(lang) / LABS


def course_files(root: Path, lang: str = "en") -> list[Path]:
    """The course's files in ``lang``, relative to ``root``: notebooks, the labs, sanitize
    rules and datasets."""
    folder = root / notebooks_dir(lang)
    files = [p.relative_to(root) for p in sorted(folder.glob("*.ipynb"))]
    files += [p.relative_to(root) for p in sorted((root / labs_dir(lang)).glob("*.ipynb"))]
    files.append(Path("notebooks") / "nbval_sanitize.cfg")
    for p in sorted((root / "datasets").rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
            files.append(p.relative_to(root))
    return files


def write_course(
    target: Path, force: bool = False, lang: str = "en"
) -> tuple[list[Path], list[Path]]:
    """Copy the course in ``lang`` into ``target``; returns (files written, files already
    the same).

    Raises:
        NotADirectoryError: ``target`` (or a folder inside it) is a file.
        FileExistsError: files in ``target`` differ from the course's and ``force`` is False;
            nothing was written.
    """
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{target} is a file: name a folder to write the course into")
    root = course_root()
    files = course_files(root, lang)
    same = [f for f in files if (target / f).is_file() and _same(root / f, target / f)]
    changed = [f for f in files if (target / f).exists() and f not in same]
    if changed and not force:
        names = ", ".join(str(target / f) for f in changed[:5])
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        raise FileExistsError(
            f"{names}{more} {'differs' if len(changed) == 1 else 'differ'} from the course's: "
            "nothing was written; move them away, write into another folder, or pass --force "
            "to overwrite them"
        )
    written = [f for f in files if f not in same]
    for f in written:
        (target / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / f, target / f)
    return written, same


def _same(a: Path, b: Path) -> bool:
    return a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()


def cmd_notebooks(args: argparse.Namespace) -> int:
    """``absnb notebooks``."""
    target = Path(args.dir)
    written, same = write_course(target, force=args.force, lang=args.lang)
    if written:
        print(f"wrote {counted(len(written), 'file')} into {target} (notebooks/ and datasets/)")
    else:
        print(f"{target} holds the course already, unchanged ({counted(len(same), 'file')})")
    start = target / notebooks_dir(args.lang) / "00_start_here.ipynb"
    print(f"open it with: jupyter lab {start}")
    print(f"the labs, where you write the protocols: {target / labs_dir(args.lang)}")
    return 0
