"""The wheel carries the course: setuptools' build_py also copies the repository's
``datasets/`` and ``notebooks/`` (with ``notebooks/ko``, ``notebooks/zh`` and the labs,
``notebooks/labs``, ``notebooks/ko/labs`` and ``notebooks/zh/labs``) into the
package (``absnb/_course/``), so that an absnb installed anywhere finds its samples
(:mod:`absnb.datasets`) and writes its notebooks out (``absnb notebooks DIR``). An
editable install reads the repository's folders instead. Everything else about the
package is in pyproject.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


class BuildWithCourse(build_py):
    """build_py, then the datasets and the notebooks into ``absnb/_course/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        course = Path(self.build_lib) / "absnb" / "_course"
        shutil.rmtree(course, ignore_errors=True)
        shutil.copytree(ROOT / "datasets", course / "datasets", ignore=SKIP)
        # the English course, the Korean and Chinese, and the labs in each language
        for folder in ("", "ko", "zh", "labs", "ko/labs", "zh/labs"):
            (course / "notebooks" / folder).mkdir(parents=True, exist_ok=True)
            for notebook in sorted((ROOT / "notebooks" / folder).glob("*.ipynb")):
                shutil.copy2(notebook, course / "notebooks" / folder / notebook.name)
        shutil.copy2(ROOT / "notebooks" / "nbval_sanitize.cfg", course / "notebooks")


setup(cmdclass={"build_py": BuildWithCourse})
