"""Repository-wide pytest configuration: how nbval checks the notebooks.

``python3 -m pytest`` runs ``tests/`` and ``notebooks/`` (pyproject.toml ``testpaths``) with
``--nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg``: every
code cell of every notebook is run in a kernel of this interpreter and its outputs must
equal the outputs stored in the notebook, after sanitizing (memory addresses, UUIDs,
wall-clock times, Spark app ids and UI links, temporary names).

What is compared, as measured with nbval 0.11, ipywidgets 8.1.9, plotly 7.1, graphviz 0.21
and dot 2.43 (two executions of the same notebook):

* graphs (``show_graph``, ``show_transactions``): ``text/html`` holding an ``<img>`` whose
  ``data:`` URL is graphviz's SVG (a fresh ``dot`` each time), byte-identical, compared;
  their ``text/plain`` is one line (``execution graph: word_count abs, step 8``).
* ``application/vnd.plotly.v1+json`` (plotly's default ``plotly_mimetype`` renderer in a
  kernel): identical, compared (nbval does not sanitize it; it is not a string).
* ``text/html`` of pandas tables: identical, compared. ``text/html`` is therefore NOT
  skipped; plotly only produces it with the ``notebook``/``notebook_connected`` renderers,
  whose random div ids the UUID rule sanitizes (keep the default renderer anyway: the
  ``notebook`` one embeds plotly.js, megabytes per notebook, and ``notebook_connected``
  needs a CDN).
* widgets (stepper, compare): stored as their current frame's picture (``text/html``) and
  one line of ``text/plain``; their cells are marked ``NBVAL_IGNORE_OUTPUT`` (a widget
  shown twice gets another CSS class number).
* widget model references (below): random model ids, never comparable, skipped.
* ``image/png`` / ``image/jpeg``: nbval skips them itself unless ``--nbdime`` is given.
"""

from __future__ import annotations

from pathlib import Path

# Mimetypes that name a widget model by a random id: the view only says "show model X".
# nbval 0.11 already skips the first; it is listed so that the policy does not depend on
# nbval's defaults. The second appears when a notebook embeds widget state in an output.
SKIP_COMPARE = (
    "application/vnd.jupyter.widget-view+json",
    "application/vnd.jupyter.widget-state+json",
)


def pytest_configure(config):
    # addopts gives the sanitize file relative to the repository root; make it work when
    # pytest is started from another directory (``cd tests && pytest``) as well.
    option = config.option
    name = getattr(option, "nbval_sanitize_with", None)
    if name and not Path(name).is_absolute() and not Path(name).exists():
        candidate = Path(config.rootpath) / name
        if candidate.exists():
            option.nbval_sanitize_with = str(candidate)


def pytest_collectstart(collector):
    """nbval's documented hook for extending what it does not compare."""
    path = getattr(collector, "path", None)
    if path is not None and path.suffix == ".ipynb" and hasattr(collector, "skip_compare"):
        collector.skip_compare = tuple(dict.fromkeys((*collector.skip_compare, *SKIP_COMPARE)))
