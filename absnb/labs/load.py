"""A student's handler class, read from a Python file or a lab notebook, for grading outside
the notebook (``absnb lab grade``).

A ``.py`` file runs whole, as a module of its own. Of a notebook, only the definitions run:
from each code cell its imports, classes, functions and constants, never its calls (a
``check(...)`` the student left in a cell, a stepper) nor IPython's ``%`` and ``!`` lines.
Each definition keeps its cell and line (``abs_lab.ipynb, cell 18``), so an error names the
line of the student's code. The handler is the class the student defined last that the lab
checks (its base class excepted), or the one named.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import types
from pathlib import Path

from absnb.core.errors import InvalidTypeError, InvalidValueError
from absnb.labs.registry import LABS, lab_for

KEPT = (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef)
"""The statements of a notebook cell that run, with assignments of literals: definitions,
never calls."""


class StudentCodeError(InvalidValueError):
    """The student's file does not run, or defines no handler of the lab: the message says
    where and what."""


def sources(path: Path) -> list[tuple[str, str]]:
    """``(where, code)`` to run from ``path``: the file, or the definitions of each code cell
    of a notebook (``where``: ``FILE, cell K``)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return [(str(path), text)]
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError) as e:
        raise StudentCodeError(f"{path} is no notebook ({type(e).__name__}: {e})") from e
    out = []
    for k, cell in enumerate(cells, 1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        code = "".join(source) if isinstance(source, list) else str(source)
        lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n")]
        out.append((f"{path}, cell {k}", "\n".join(lines)))
    return out


def _definitions(where: str, code: str) -> ast.Module:
    try:
        tree = ast.parse(code, filename=where)
    except SyntaxError as e:
        raise StudentCodeError(f"{where}, line {e.lineno}: {e.msg}") from e
    if where.endswith(".py"):
        return tree
    tree.body = [node for node in tree.body if _kept(node)]
    return tree


def _kept(node: ast.stmt) -> bool:
    """Whether a notebook's statement ``node`` runs: a definition, or an assignment of a
    literal (a constant the classes use)."""
    if isinstance(node, KEPT):
        return True
    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        try:
            ast.literal_eval(node.value)
        except ValueError:
            return False
        return True
    return False


def load(path: str | Path) -> types.ModuleType:
    """Run the student's ``path`` (a ``.py`` file, or a notebook's definitions) as a module
    of its own.

    Raises:
        StudentCodeError: the code does not parse, or raises; the message names its line.
        OSError: ``path`` cannot be read.
    """
    path = Path(path)
    module = types.ModuleType("absnb_student_" + re.sub(r"\W", "_", path.stem))
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # classes pickle and repr by their module
    for where, code in sources(path):
        tree = _definitions(where, code)
        try:
            exec(compile(tree, where, "exec"), module.__dict__)
        except Exception as e:
            raise StudentCodeError(f"{where}{_line(e, where)}: {type(e).__name__}: {e}") from e
    return module


def _line(error: BaseException, where: str) -> str:
    """``, line N``: the last line of ``where`` in the traceback of ``error``."""
    tb = error.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == where:
            line = tb.tb_lineno
        tb = tb.tb_next
    return "" if line is None else f", line {line}"


def handler_class(path: str | Path, lab: str, name: str | None = None) -> type:
    """The handler class to grade in ``path`` for ``lab``: the class ``name``, or the last
    one defined there that the lab checks (its base excepted).

    Raises:
        InvalidValueError: an unknown lab; StudentCodeError: the file does not run, or has
            no such class.
        InvalidTypeError: the class ``name`` is no handler of the lab.
    """
    if lab not in LABS:
        names = ", ".join(repr(n) for n in LABS)
        raise InvalidValueError(f"unknown lab {lab!r}: choose one of {names}")
    chosen = LABS[lab]
    module = load(path)
    if name is not None:
        found = module.__dict__.get(name)
        if not isinstance(found, type):
            raise StudentCodeError(f"{path} defines no class {name!r}")
        if not chosen.takes(found):
            raise InvalidTypeError(f"{name} in {path} does not subclass {chosen.base_name}")
        return found
    mine = [
        c
        for c in _classes(module)
        if chosen.takes(c) and c is not chosen.base and lab_for(c, None) is chosen
    ]
    if not mine:
        raise StudentCodeError(
            f"{path} defines no class that subclasses {chosen.base_name} (lab {lab!r}): "
            "write one, or name it with --handler"
        )
    return mine[-1]


def _classes(module: types.ModuleType) -> list[type]:
    """The classes ``module`` defines, in the order defined."""
    return [
        c
        for c in module.__dict__.values()
        if isinstance(c, type) and c.__module__ == module.__name__
    ]


__all__ = ["StudentCodeError", "handler_class", "load", "sources"]
