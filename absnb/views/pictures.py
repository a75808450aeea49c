"""Static pictures of views: SVG sized for a notebook cell, and as an ``<img>`` that an
untrusted notebook still shows.

JupyterLab renders neither raw ``image/svg+xml`` nor widget or plotly mimetypes for an
untrusted notebook (a fresh clone; jupyterlab issues 9650 and 10464); it renders PNG and
sanitized ``text/html``, in which an ``<img>`` whose ``src`` is a ``data:`` URL survives.
So every stored graph and widget frame carries :func:`img_html` of its SVG.

Sizes: a Graphviz SVG measures itself in points (``width="493pt"``). Drawn at one pixel
per point (:func:`fit_svg`), a label of :data:`~absnb.views.palette.FONT_SIZE` points is that
many pixels high; narrower cells scale the picture down to their width (never wider, so a
small graph is not blown up past the screen's height).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping

_VIEWBOX = re.compile(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+) ([\d.]+)"')
_WIDTH_HEIGHT = re.compile(r'\s(?:width|height)="[^"]*"')


def svg_size(svg: str) -> tuple[float, float]:
    """``(width, height)`` of an SVG's viewBox.

    Raises:
        ValueError: the text has no ``viewBox``.
    """
    m = _VIEWBOX.search(svg)
    if m is None:
        raise ValueError(f"not an SVG with a viewBox: {svg[:60]!r}")
    return float(m[1]), float(m[2])


def fit_svg(svg: str) -> str:
    """``svg`` (Graphviz's) drawn to the width of its container, at most one pixel per
    viewBox unit; the viewBox is kept, so it scales as a whole. For inline display (the
    XML prologue and doctype are dropped). An SVG without a viewBox is returned as it is."""
    if _VIEWBOX.search(svg) is None:
        return svg
    width, _ = svg_size(svg)
    start = svg.find("<svg")
    end = svg.find(">", start)
    tag = _WIDTH_HEIGHT.sub("", svg[start:end])
    sized = (
        f' width="100%" style="max-width:{width:.0f}px;height:auto;display:block"'
        ' preserveAspectRatio="xMinYMin meet"'
    )
    return "<svg" + sized + tag[len("<svg") :] + svg[end:]


def data_url(svg: str) -> str:
    """``data:image/svg+xml;base64,...`` of ``svg``."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def img_html(svg: str, alt: str, *, css_class: str = "absnb-picture") -> str:
    """``svg`` as an ``<img>`` (one pixel per viewBox unit, scaled down to the cell by
    JupyterLab's ``max-width: 100%`` for images): what an untrusted notebook shows."""
    width, height = svg_size(svg)
    return (
        f'<img class="{css_class}" alt="{html.escape(alt)}" width="{width:.0f}" '
        f'height="{height:.0f}" style="max-width:100%;height:auto" src="{data_url(svg)}"/>'
    )


def picture_bundle(
    svg: str, alt: str, extra: Mapping[str, object] | None = None
) -> dict[str, object]:
    """A mimebundle that every front end shows as the picture: ``text/html`` (the
    ``<img>``) and ``text/plain`` (``alt``, never a Python repr), plus ``extra``."""
    return {"text/html": img_html(svg, alt), "text/plain": alt, **(extra or {})}
