"""Two-phase commit seen from outside the job: the external system's transactions.

- :func:`transaction_table`: every transaction in the external system (pandas), with its
  status: ``open``, ``pre-committed``, ``committed`` or ``aborted``.
- :func:`committed_table`: the committed (visible) output, each record with its copies.
- :func:`output_copies`: how often each record appears in several outputs, side by side
  (exactly-once beside at-least-once).
- :func:`transactions_dot` / :func:`show_transactions`: the execution graph with the
  external system drawn beside it, one coloured row per transaction.
- :func:`transactions_html`: the transactions as a small HTML table (the stepper widget).

A *store* is anything with ``name``, ``rows`` (the committed records) and ``table()`` (the
transactions, each with ``name``, ``task``, ``status``, ``rows`` and ``checkpoint_id``), as
:class:`~absnb.sinks.memory.TransactionStore`; a sink's store is its ``store`` attribute. A
sink that lists its own transactions (``transactions()`` and ``committed()``, as
:class:`~absnb.sinks.files.FileSink` and :class:`~absnb.sinks.postgres.PostgresSink`) is
seen as a store too; their transactions do not say their records (``rows`` is a dash).
Everything here only reads; the output depends only on the stores and the world, so
notebooks can compare it exactly. pandas is imported when a table is made.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from absnb.core.format import show_value
from absnb.i18n import gettext as _
from absnb.views.graph import DotOptions, GraphView, to_dot
from absnb.views.graph_frame import escape
from absnb.views.graph_layout import quote
from absnb.views.graph_text import NONE, short_state

if TYPE_CHECKING:
    import pandas as pd
    from typing_extensions import Unpack

    from absnb.core.graph import ExecutionGraph
    from absnb.core.ids import TaskId
    from absnb.sim.stepper import Stepper
    from absnb.sim.world import World

TXN_COLOURS: dict[str, str] = {
    "open": "#fff2cc",
    "pre-committed": "#dae8fc",
    "committed": "#d5e8d4",
    "aborted": "#f8cecc",
}
"""Fill colour of a transaction per status (the graph view's palette)."""

TRANSACTION_COLUMNS = ["transaction", "task", "status", "checkpoint", "rows", "records"]
LINK_COLOUR = "#999999"


# -- finding the stores --------------------------------------------------------------------
class Txn(Protocol):
    """A transaction as an external system lists it (a ``rows`` attribute, if it has one,
    holds its records)."""

    @property
    def name(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def checkpoint_id(self) -> int | None: ...


class Store(Protocol):
    """An external system: its name, committed rows and transactions
    (:class:`~absnb.sinks.memory.TransactionStore`, or a :class:`SinkStore`)."""

    @property
    def name(self) -> str: ...
    @property
    def rows(self) -> tuple[object, ...]: ...
    def table(self) -> Sequence[Txn]: ...


class TransactionLister(Protocol):
    """A sink that lists its own transactions (files, PostgreSQL)."""

    def committed(self) -> Iterable[object]: ...
    def transactions(self) -> Iterable[Txn]: ...


def _is_store(obj: object) -> TypeGuard[Store]:
    return callable(getattr(obj, "table", None)) and hasattr(obj, "rows")


def _lists_transactions(obj: object) -> TypeGuard[TransactionLister]:
    return callable(getattr(obj, "transactions", None)) and callable(
        getattr(obj, "committed", None)
    )


class SinkStore:
    """A sink that lists its own transactions (files, PostgreSQL), seen as a store."""

    def __init__(self, sink: TransactionLister) -> None:
        self.sink = sink
        self.name = type(sink).__name__

    @property
    def rows(self) -> tuple[object, ...]:
        return tuple(self.sink.committed())

    def table(self) -> list[Txn]:
        return list(self.sink.transactions())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SinkStore) and other.sink is self.sink

    def __hash__(self) -> int:
        return id(self.sink)


def _store(obj: object) -> Store | None:
    """``obj`` as a store, or its ``store``, or None."""
    if _is_store(obj):
        return obj
    if _is_store(store := getattr(obj, "store", None)):
        return store
    if _lists_transactions(obj):
        return SinkStore(obj)
    return None


def _records(txn: Txn) -> list[object] | None:
    """A transaction's records, None when it does not say."""
    rows = getattr(txn, "rows", None)
    return None if rows is None else list(rows)


def _is_graph(obj: object) -> TypeGuard[ExecutionGraph]:
    return obj is not None and hasattr(obj, "operators")


def _graph(source: object) -> ExecutionGraph | None:
    """The execution graph of a Stepper, World or Job (None for anything else)."""
    source = getattr(source, "world", source)  # a Stepper
    graph = getattr(source, "graph", None)  # a World or a Job
    return graph if _is_graph(graph) else None


def stores_of(source: object) -> list[Store]:
    """The external systems behind ``source``: a store itself, a sink (its ``store``), or
    every sink's store of a Stepper, World or Job, in graph order, each once."""
    store = _store(source)
    if store is not None:
        return [store]
    graph = _graph(source)
    if graph is None:
        raise TypeError(
            f"cannot find an external system in {source!r}: pass a Stepper, World, Job, "
            "sink or store"
        )
    stores = (_store(op.function) for op in graph.operators.values())
    return list(dict.fromkeys(s for s in stores if s is not None))


def _writers(world: World, store: Store) -> list[TaskId]:
    """The tasks of ``world`` whose sink writes to ``store``, in graph order."""
    graph = world.graph
    return [
        t
        for name, op in graph.operators.items()
        if _store(op.function) == store
        for t in graph.tasks_of(name)
    ]


# -- tables --------------------------------------------------------------------------------
def transaction_table(source: object, *, max_records: int | None = 4) -> pd.DataFrame:
    """One row per transaction in the external system, oldest first.

    Columns: ``transaction``, ``task``, ``status`` (open, pre-committed, committed,
    aborted), ``checkpoint`` (the one it was pre-committed for; a dash,
    :data:`~absnb.views.graph_text.NONE`, while open), ``rows`` (records written; a dash
    when the system does not list them) and ``records`` (shown, ``max_records`` of them;
    None: all). With several stores behind ``source`` a first column ``store`` names each
    one's.
    """
    import pandas as pd

    stores = stores_of(source)
    rows: list[list[object]] = []
    for store in stores:
        for txn in store.table():
            records = _records(txn)
            rows.append(
                [
                    store.name,
                    str(txn.name),
                    str(txn.task),
                    txn.status,
                    txn.checkpoint_id,
                    None if records is None else len(records),
                    short_state(records, max_records) if records else "",
                ]
            )
    frame = pd.DataFrame(rows, columns=["store", *TRANSACTION_COLUMNS])
    for column, i in (("checkpoint", 4), ("rows", 5)):
        frame[column] = pd.Series([NONE if r[i] is None else r[i] for r in rows], dtype="object")
    return frame if len(stores) > 1 else frame.drop(columns="store")


def committed_table(source: object) -> pd.DataFrame:
    """The committed output: one row per distinct visible record, in the order it first
    became visible, with ``copies`` (more than 1: a duplicate)."""
    import pandas as pd

    counts: Counter[object] = Counter()
    for store in stores_of(source):
        counts.update(store.rows)
    return pd.DataFrame(
        {
            "record": [show_value(r) for r in counts],
            "copies": pd.Series(list(counts.values()), dtype="int64"),
        },
        columns=["record", "copies"],
    )


def _order(records: Iterable[Hashable]) -> list[object]:
    # the records, of whatever types: sorted when they compare (else as shown)
    unique: list[Any] = list(dict.fromkeys(records))
    try:
        return sorted(unique)
    except TypeError:  # values of mixed types: order them by how they are shown
        return sorted(unique, key=show_value)


def output_copies(outputs: Mapping[str, Iterable[Hashable]]) -> pd.DataFrame:
    """How many times each record appears in each of ``outputs`` (name -> records).

    One row per record of any output, sorted; column ``record`` (the value itself),
    then one count column per output, in the mapping's order.
    """
    import pandas as pd

    counts = {name: Counter(records) for name, records in outputs.items()}
    order = _order(r for c in counts.values() for r in c)
    frame = pd.DataFrame({"record": pd.Series(order, dtype="object")})
    for name, c in counts.items():
        frame[name] = pd.Series([c[r] for r in order], dtype="int64")
    return frame


def transactions_html(source: object, *, max_records: int | None = 4) -> str:
    """The transactions as an HTML table with coloured statuses, then the committed
    record count, per store (for the stepper widget)."""
    parts: list[str] = []
    for store in stores_of(source):
        table = store.table()
        parts.append(f"<div><b>{html.escape(str(store.name))}</b></div>")
        if table:
            names = (_("transaction"), _("status"), _("checkpoint"), _("records"))
            head = "".join(f"<th>{c}</th>" for c in names)
            body = []
            for txn in table:
                colour = TXN_COLOURS.get(txn.status, "#ffffff")
                ckpt = "" if txn.checkpoint_id is None else str(txn.checkpoint_id)
                records = _records(txn)
                shown = (
                    "?"
                    if records is None
                    else f"{len(records)}: {html.escape(short_state(records, max_records))}"
                )
                body.append(
                    f"<tr><td>{html.escape(str(txn.name))}</td>"
                    f"<td style='background:{colour}'>{html.escape(status_word(txn.status))}</td>"
                    f"<td>{ckpt}</td><td>{shown}</td></tr>"
                )
            parts.append(
                "<table style='font-size:11px'><tr>" + head + "</tr>" + "".join(body) + "</table>"
            )
        else:
            empty = _("no transactions")
            parts.append(f"<i>{empty}</i>")
        n = len(store.rows)
        committed = _("committed: 1 record") if n == 1 else _("committed: {n} records")
        parts.append(f"<div>{committed.format(n=n)}</div>")
    none = _("no external system")
    return "\n".join(parts) if parts else f"<i>{none}</i>"


def status_word(status: str) -> str:
    """A transaction's status as shown, in the language set."""
    words = {
        "open": _("open"),
        "pre-committed": _("pre-committed"),
        "committed": _("committed"),
        "aborted": _("aborted"),
    }
    return words.get(status, status)


# -- drawing -------------------------------------------------------------------------------
def _store_label(store: Store, max_transactions: int, max_records: int) -> str:
    table = store.table()
    cells = 'BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3"'
    rows = [
        f'<TR><TD COLSPAN="4"><B>{escape(str(store.name))}</B></TD></TR>',
        "".join(
            f"<TD><I>{name}</I></TD>"
            for name in (_("transaction"), _("status"), _("for"), _("records"))
        ).join(("<TR>", "</TR>")),
    ]
    if len(table) > max_transactions:
        earlier = len(table) - max_transactions
        more = _("{n} earlier").format(n=earlier)
        rows.append(f'<TR><TD COLSPAN="4">… {more}</TD></TR>')
        table = table[-max_transactions:]
    if not table:
        none = _("no transactions")
        rows.append(f'<TR><TD COLSPAN="4"><I>{none}</I></TD></TR>')
    for txn in table:
        colour = TXN_COLOURS.get(txn.status, "#ffffff")
        ckpt = "" if txn.checkpoint_id is None else f"ckpt {txn.checkpoint_id}"
        records = _records(txn)
        rows.append(
            f"<TR><TD>{escape(str(txn.name))}</TD>"
            f'<TD BGCOLOR="{colour}">{escape(status_word(txn.status))}</TD>'
            f"<TD>{ckpt}</TD><TD>{'?' if records is None else len(records)}</TD></TR>"
        )
    visible = list(store.rows)
    n = len(visible)
    text = (
        _("committed output: 1 record") if n == 1 else _("committed output: {n} records")
    ).format(n=n)
    if visible:
        text += "<BR/>" + escape(short_state(visible, max_records))
    rows.append(f'<TR><TD COLSPAN="4" BGCOLOR="#f5f5f5">{text}</TD></TR>')
    return f"<TABLE {cells}>" + "".join(rows) + "</TABLE>"


def transactions_dot(
    world: World,
    *,
    max_transactions: int = 12,
    max_records: int = 4,
    **kw: Unpack[DotOptions],
) -> str:
    """DOT source of ``world``'s graph (:func:`~absnb.views.graph.to_dot`, keywords as
    there) with each external system its sinks write to drawn beside it: a table of its
    transactions, newest ``max_transactions``, coloured by status
    (:data:`~absnb.views.transactions.TXN_COLOURS`), and its committed output; dashed edges lead
    from the sink tasks to it."""
    dot = to_dot(world, **kw)
    stores = stores_of(world)
    if not stores:
        return dot
    body = dot.rstrip()
    assert body.endswith("}"), "to_dot output ends with the graph's closing brace"
    out = [body[:-1].rstrip("\n")]
    outside = _("external system (outside the job)")
    for i, store in enumerate(stores):
        node = quote(f"external:{i}")
        label = _store_label(store, max_transactions, max_records)
        out += [
            f"  subgraph cluster_external_{i} {{",
            f'    label=<{outside}>; style="rounded,dashed"; color="{LINK_COLOUR}"; fontsize=10;',
            f'    {node} [shape=plain style="" label=<{label}>];',
            "  }",
        ]
        out += [
            f'  {quote(str(t))} -> {node} [style=dashed color="{LINK_COLOUR}" arrowhead=vee];'
            for t in _writers(world, store)
        ]
    out.append("}")
    return "\n".join(out) + "\n"


class TransactionsOptions(DotOptions, total=False):
    """The keywords of :func:`transactions_dot`."""

    max_transactions: int
    max_records: int


class TransactionsView(GraphView):
    """The graph with its external systems beside it, at one moment (SVG in a notebook)."""

    def __init__(self, world: World, **kw: Unpack[TransactionsOptions]) -> None:
        self.dot = transactions_dot(world, **kw)
        self._name = f"{world.graph.name} {world.protocol.name} step={world.clock}"

    def __repr__(self) -> str:
        return f"<TransactionsView {self._name}>"


def show_transactions(
    world: World | Stepper, **kw: Unpack[TransactionsOptions]
) -> TransactionsView:
    """The execution graph of ``world`` (or a Stepper's world) with the transactions of
    the external systems beside it, for display in a notebook."""
    from absnb.sim.world import World

    return TransactionsView(world if isinstance(world, World) else world.world, **kw)
