"""Views of jobs, worlds and traces: they observe and never mutate.

- :mod:`absnb.views.graph`: the execution graph and its state as DOT (pure) and SVG.
- :mod:`absnb.views.graph_text`: the words in that picture (a task's state and status, a
  channel's messages, a sink's transactions), cut and wrapped to fit.
- :mod:`absnb.views.timeline`: the space-time diagram (plotly) with snapshot cuts;
  :mod:`absnb.views.timeline_static` draws the same geometry as a static SVG, and
  :mod:`absnb.views.cut` composes cuts by hand and classifies messages against them.
- :mod:`absnb.views.tables`: snapshots as pandas tables, and the diff of two.
- :mod:`absnb.views.transactions`: a two-phase-commit sink's external system: its
  transactions and committed output as tables, and drawn beside the graph.
- :mod:`absnb.views.widgets`: the stepper widget (its controls in
  :mod:`absnb.views.controls`); :mod:`absnb.views.side_by_side`: protocols compared.
- :mod:`absnb.views.prose`: sentences about a run, formatted by the cell that computes
  their numbers (:func:`say`).
- :mod:`absnb.views.pictures`: static pictures (``<img>`` of SVG) for untrusted notebooks.

The names below are imported from their module when first used (PEP 562), so that
``import absnb.views`` and a DOT rendering pull in neither pandas, plotly nor ipywidgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from absnb.core.lazy import lazy_names

if TYPE_CHECKING:
    from absnb.views.cut import Cut
    from absnb.views.graph import graph_svg, show_graph, to_dot
    from absnb.views.prose import counted, say
    from absnb.views.run_view import RunView, show_run
    from absnb.views.side_by_side import SideBySide, compare
    from absnb.views.tables import snapshot_diff, snapshot_tables, task_table
    from absnb.views.timeline import message_arrows, show_timeline, space_time
    from absnb.views.timeline_static import timeline_svg
    from absnb.views.transactions import (
        committed_table,
        output_copies,
        show_transactions,
        transaction_table,
        transactions_dot,
    )
    from absnb.views.widgets import StepperWidget, stepper_widget

_HOME = {
    "Cut": "cut",
    "graph_svg": "graph",
    "show_graph": "graph",
    "to_dot": "graph",
    "snapshot_diff": "tables",
    "snapshot_tables": "tables",
    "task_table": "tables",
    "message_arrows": "timeline",
    "space_time": "timeline",
    "show_timeline": "timeline",
    "timeline_svg": "timeline_static",
    "committed_table": "transactions",
    "output_copies": "transactions",
    "show_transactions": "transactions",
    "transaction_table": "transactions",
    "transactions_dot": "transactions",
    "SideBySide": "side_by_side",
    "StepperWidget": "widgets",
    "compare": "side_by_side",
    "stepper_widget": "widgets",
    "RunView": "run_view",
    "counted": "prose",
    "say": "prose",
    "show_run": "run_view",
}
"""Each public name and the module of :mod:`absnb.views` that defines it."""

__all__ = [
    "Cut",
    "RunView",
    "SideBySide",
    "StepperWidget",
    "committed_table",
    "compare",
    "counted",
    "graph_svg",
    "message_arrows",
    "output_copies",
    "say",
    "show_graph",
    "show_run",
    "show_timeline",
    "show_transactions",
    "snapshot_diff",
    "snapshot_tables",
    "space_time",
    "stepper_widget",
    "task_table",
    "timeline_svg",
    "to_dot",
    "transaction_table",
    "transactions_dot",
]


__getattr__, __dir__ = lazy_names(__name__, _HOME)
