"""Sphinx configuration of absnb's book: the notebooks as chapters, the user guide, the API.

Build it (warnings are errors, every cross-reference must resolve):

    python -m sphinx -W --keep-going -n -b html docs docs/_build/html
"""

from __future__ import annotations

import shutil
from pathlib import Path

# The course lives in notebooks/ at the repository's top; the book takes a fresh copy of
# it as its chapters (docs/notebooks/, ignored by git), so links between notebooks resolve
# inside the book as they do in JupyterLab.
_HERE = Path(__file__).resolve().parent
shutil.rmtree(_HERE / "notebooks", ignore_errors=True)
shutil.copytree(
    _HERE.parent / "notebooks",
    _HERE / "notebooks",
    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.cfg"),
)

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

html_theme = "furo"
html_title = "absnb"
html_static_path: list[str] = ["_static"]

autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": False}
autosummary_generate = False
napoleon_google_docstring = True
# A class's "Attributes:" section as fields of the class, not a second description of each.
napoleon_use_ivar = True
# Every document link, heading anchor and label must resolve (nitpicky, -n). Python
# references inside docstrings are the exception: they name the modules' own internals
# (absnb.core.messages.RecordBatch, ...), which this reference does not document page by
# page, and other packages' names, whose inventories the offline build cannot read.
nitpick_ignore_regex = [("py:.*", ".*")]


def _skip_slot_fields(
    app: object, what: str, name: str, obj: object, skip: bool, options: object
) -> bool:
    """A slotted dataclass's fields are described by its docstring's "Attributes:" section;
    autodoc would describe each a second time from its slot."""
    return skip or type(obj).__name__ == "member_descriptor"


def setup(app: object) -> None:
    app.connect("autodoc-skip-member", _skip_slot_fields)  # type: ignore[attr-defined]
