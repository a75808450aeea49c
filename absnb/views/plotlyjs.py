"""plotly.js itself, for a page that must draw plotly figures without the network."""

from __future__ import annotations


def plotly_js() -> str:
    """The plotly.js bundle of the installed plotly, to inline in a self-contained page."""
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())
