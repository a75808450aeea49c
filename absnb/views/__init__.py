"""Views of jobs, worlds and traces: they observe and never mutate.

- :mod:`absnb.views.graph`: the execution graph and its state as DOT (pure) and SVG.
- :mod:`absnb.views.timeline`: the space-time diagram (plotly) with snapshot cuts.
- :mod:`absnb.views.tables`: snapshots as pandas tables, and the diff of two.
- :mod:`absnb.views.transactions`: a two-phase-commit sink's external system: its
  transactions and committed output as tables, and drawn beside the graph.
- :mod:`absnb.views.widgets`: the stepper widget (its controls in
  :mod:`absnb.views.controls`); :mod:`absnb.views.side_by_side`: protocols compared.
- :mod:`absnb.views.pictures`: static pictures (``<img>`` of SVG) for untrusted notebooks.
"""

from absnb.views.graph import graph_svg, show_graph, to_dot
from absnb.views.side_by_side import SideBySide, compare
from absnb.views.tables import snapshot_diff, snapshot_tables, task_table
from absnb.views.timeline import message_arrows, space_time
from absnb.views.transactions import (
    committed_table,
    output_copies,
    show_transactions,
    transaction_table,
    transactions_dot,
)
from absnb.views.widgets import StepperWidget, show_diagram, stepper_widget

__all__ = [
    "SideBySide",
    "StepperWidget",
    "committed_table",
    "compare",
    "graph_svg",
    "message_arrows",
    "output_copies",
    "show_diagram",
    "show_graph",
    "show_transactions",
    "snapshot_diff",
    "snapshot_tables",
    "space_time",
    "stepper_widget",
    "task_table",
    "to_dot",
    "transaction_table",
    "transactions_dot",
]
