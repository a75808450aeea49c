"""Sphinx configuration of absnb's book: the notebooks as chapters, the user guide, the API.

Build it (warnings are errors, every cross-reference must resolve), in English and then in
Korean and Chinese beside it (every page links to the same page in the other two):

    python -m sphinx -W --keep-going -n -b html docs docs/_build/html
    python -m sphinx -W --keep-going -n -b html -D language=ko docs docs/_build/html/ko
    python -m sphinx -W --keep-going -n -b html -D language=zh_CN docs docs/_build/html/zh

In Korean and Chinese the chapters are the translated notebooks (``notebooks/ko``,
``notebooks/zh``) and the other pages are translated from the catalogs in ``docs/locales``
(``sphinx-intl update -p docs/_build/gettext -d docs/locales -l ko -l zh_CN`` after
``python -m sphinx -b gettext docs docs/_build/gettext``). The API reference is the
docstrings, in English.
"""

from __future__ import annotations

import functools
import importlib
import shutil
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
BOOKS = {"en": "", "ko": "ko", "zh_CN": "zh"}
"""Each language of the book (Sphinx's code) and its folder under the English book and
under ``notebooks/``."""
NAMES = {"en": "English", "ko": "한국어", "zh_CN": "中文"}


def _copy_notebooks(app: object, config: object) -> None:
    """The course lives in notebooks/ at the repository's top (the translations in
    notebooks/ko and notebooks/zh, each with its labs/); the book takes a fresh copy of
    the language's notebooks and labs as its chapters (docs/notebooks/, ignored by git),
    so links between notebooks resolve inside the book as they do in JupyterLab."""
    language = getattr(config, "language", None) or "en"
    source = _HERE.parent / "notebooks" / BOOKS[language]
    shutil.rmtree(_HERE / "notebooks", ignore_errors=True)
    (_HERE / "notebooks").mkdir()
    for notebook in sorted(source.glob("*.ipynb")):
        shutil.copy2(notebook, _HERE / "notebooks" / notebook.name)
    # The labs in the language, beside its chapters (notebooks/labs/, notebooks/ko/labs/),
    # as they are linked from notebook 00.
    (_HERE / "notebooks" / "labs").mkdir()
    for notebook in sorted((source / "labs").glob("*.ipynb")):
        shutil.copy2(notebook, _HERE / "notebooks" / "labs" / notebook.name)


project = "absnb"
author = "the absnb authors"
copyright = "2026, the absnb authors"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
]

# The notebooks are chapters with the outputs they are stored with: the build runs nothing
# (no Spark, no kernel), so it takes seconds and shows exactly what a reader of the
# repository sees.
nb_execution_mode = "off"
# Widgets are shown as the static picture stored beside them (an <img> in text/html).
# Plotly charts likewise: their stored output carries the chart's picture as text/html.
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
# MyST-NB names each mime type it cannot render (a chart's plotly JSON) while it picks the
# stored picture beside it; that is the intended choice, not a problem.
suppress_warnings = ["mystnb.unknown_mime_type"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

exclude_patterns = ["_build", "**/.ipynb_checkpoints"]

# The Korean and Chinese books: the catalogs of docs/locales (sphinx-intl's layout).
locale_dirs = ["locales/"]
gettext_compact = False
# A paragraph whose English changed is shown in English until its translation is reviewed.
gettext_allow_fuzzy_translations = False

html_theme = "furo"
templates_path = ["_templates"]
html_sidebars = {
    "**": [
        "sidebar/brand.html",
        "sidebar/search.html",
        "languages.html",
        "sidebar/scroll-start.html",
        "sidebar/navigation.html",
        "sidebar/scroll-end.html",
    ]
}
html_context = {"books": [(BOOKS[code], NAMES[code]) for code in BOOKS]}
html_title = "absnb"
html_static_path: list[str] = ["_static"]

autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": False}
autosummary_generate = False
napoleon_google_docstring = True
# A class's "Attributes:" section as fields of the class, not a second description of each.
napoleon_use_ivar = True
# Every document link, heading anchor and label must resolve (nitpicky, -n), and so must
# every Python reference to absnb's own names: docs/api.md documents the public names and
# docs/api/ every module. The exception is other packages' names (the standard library's,
# pandas', pyspark's, ...): their inventories cannot be read by the offline build, so a
# reference to one stays plain text. ``pd``, ``go``, ``np`` and ``npt`` are the names
# pandas, plotly.graph_objects, numpy and numpy.typing are imported as, which annotations
# of imports made only for type checking keep.
EXTERNAL = (
    *sorted(sys.stdlib_module_names),
    *("babel", "fsspec", "go", "graphviz", "ipywidgets", "pandas", "pd", "plotly"),
    *("psycopg", "pyarrow", "pa", "pyspark", "numpy", "np", "npt"),
)
nitpick_ignore_regex = [
    ("py:.*", rf"({'|'.join(EXTERNAL)})(\..+)?"),
    # Type variables (one capital letter: an operator's state S, keys K and values V, a
    # wrapped method's parameters P and result R), which autodoc shows in the signatures of
    # generic classes and functions, qualified or not: they are no class to link to.
    ("py:class", r"~?([\w.]+\.)?[A-Z]"),
]
# Type hints autodoc shows as written (their module imports the names only for type
# checking, so they are not evaluated), whose names no page documents as a class: the type
# aliases Action (a union), RecoveryMode (a Literal) and ProgressFn (a Callable), documented
# as data or not at all; collections.deque as imported; private classes and type variables.
nitpick_ignore = [
    ("py:class", name)
    for name in (
        "Action",
        "RecoveryMode",
        "ProgressFn",
        "paper.ProgressFn",
        "deque",
        # other packages' classes, as a module imports them for type checking only
        "DataFrame",
        "SparkSession",
        "w.VBox",
        # pyspark's session, as absnb.runtime.spark.session names it for type checking only
        "Session",
        "absnb.experiments.events_overhead._HotPath",
        "absnb.runtime.data_plane.channel_ends._Input",
        "absnb.runtime.data_plane.channel_ends._Output",
        "absnb.sim.state._S",
        "absnb.task._Part",
    )
]


PUBLIC_PACKAGES = ("absnb", "absnb.runtime", "absnb.sinks", "absnb.views")
"""The packages whose public names (their ``__all__``) the API reference's first page
documents; the pages of every module (``docs/api/``) document the modules' internals."""


@functools.cache
def _public_classes() -> frozenset[type]:
    """The classes the API reference documents under a public name (``absnb.World``): those
    autodoc finds in a public package. A name a package's ``__getattr__`` imports on first
    use (``absnb.sinks.PostgresSink``) is documented on its module's page."""
    packages = [importlib.import_module(name) for name in PUBLIC_PACKAGES]
    found = (vars(package).get(name) for package in packages for name in package.__all__)
    return frozenset(obj for obj in found if isinstance(obj, type))


def _skip_member(
    app: object, what: str, name: str, obj: object, skip: bool, options: object
) -> bool:
    """Whether autodoc leaves a member out. A slotted dataclass's fields are described by
    its docstring's "Attributes:" section; autodoc would describe each a second time from
    its slot. A public class is described once, under its public name: a module's page
    (``:ignore-module-all:``, docs/api/) leaves it out, and its defining name
    (``absnb.sim.world.World``) still resolves, to the public one, which autodoc gives it
    as its canonical name."""
    if skip or type(obj).__name__ == "member_descriptor":
        return True
    internals = what == "module" and bool(getattr(options, "ignore_module_all", False))
    return internals and isinstance(obj, type) and obj in _public_classes()


PROSE = frozenset({"attribute", "data", "property"})
"""What autodoc documents whose docstring is prose only: its type is its annotation."""
_prose: dict[str, list[str]] = {}


def _keep_prose(
    app: object, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    """Napoleon reads an attribute's first line as Google style's "type: description", so
    "Point size: ..." would become a type "Point size" (and a reference to it). absnb's
    attributes take their type from their annotation and their docstring is prose: it is
    kept as written before napoleon reads it (priority 400, napoleon's is 500) ..."""
    if what in PROSE:
        _prose[name] = list(lines)


def _restore_prose(
    app: object, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    """... and put back after (priority 600)."""
    if what in PROSE and name in _prose:
        lines[:] = _prose.pop(name)


def setup(app: object) -> None:
    app.connect("autodoc-skip-member", _skip_member)  # type: ignore[attr-defined]
    app.connect("autodoc-process-docstring", _keep_prose, priority=400)  # type: ignore[attr-defined]
    app.connect("autodoc-process-docstring", _restore_prose, priority=600)  # type: ignore[attr-defined]
    app.connect("config-inited", _copy_notebooks)  # type: ignore[attr-defined]
