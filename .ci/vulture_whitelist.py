"""Names vulture cannot see used: module hooks, pyspark callbacks, documented constants and
what the notebooks call. Each entry says why; nothing dead is listed here."""

import argparse

from absnb import views
from absnb.experiments import paper, sessions
from absnb.protocols.base import SnapshotProtocol
from absnb.runtime.spark import structured_streaming
from absnb.views import charts

# Module-level __getattr__ / __dir__ (PEP 562): Python calls them.
_ = views.__getattr__  # absnb.views's names, imported on first use
_ = views.__dir__
_ = structured_streaming.__getattr__  # the pyspark subclasses, made on first use
_ = structured_streaming.FileSinkDataSource.streamWriter  # called by pyspark
_ = _.__qualname__  # set so that pickle finds the classes made on first use

# The columns of the experiments' rows, named in their docstrings (data documented by value).
_ = paper.RUN_COLUMNS

# Called from notebooks/06_performance.ipynb, which vulture does not read.
_ = charts.figure6_chart
_ = charts.channel_state_chart
_ = charts.figure7_chart
_ = charts.alignment_chart
_ = charts.figure6_picture
_ = charts.figure7_picture
_ = charts.job_picture
_ = sessions.quiet_session

# argparse reads the attribute: a subcommand is required (``absnb`` alone is a usage error).
_ = argparse.ArgumentParser().add_subparsers().required

# Read by name, through views/tables.py's _capability(protocol, "short_title", ""): the
# heading a protocol gives its snapshot table.
_ = SnapshotProtocol.short_title

# ipywidgets reads a button's style attributes (font_size, font_weight) in the browser.
from absnb.views import controls  # noqa: E402

_ = controls.w.ButtonStyle().font_size
_ = controls.w.ButtonStyle().font_weight

# pytest-xdist's scheduler calls it (conftest.py's FileScheduling overrides it).
_ = _._split_scope

# http.server calls it for every request (tests/e2e/test_book.py serves the book quietly).
_.log_message

# plotly reads every key of a space-time annotation (views/timeline_figure.py's Annotation).
from absnb.views import timeline_figure  # noqa: E402

_ = timeline_figure.Annotation
_ = (_.xref, _.yref, _.showarrow, _.bgcolor)
