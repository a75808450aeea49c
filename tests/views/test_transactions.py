"""The transaction view: a two-phase-commit sink's external system as tables and drawn
beside the graph, checked against the store after scripted steps."""

from __future__ import annotations

import re
import shutil
from collections import Counter

import pandas as pd
import pytest

import absnb
from absnb.protocols.two_phase_commit import TwoPhaseCommitState
from absnb.sim.actions import Notify
from absnb.sinks import AtLeastOnceSink, MemorySink, TransactionStore
from absnb.views.graph import to_dot
from absnb.views.graph_text import short_txn, transaction_lines
from absnb.views.transactions import (
    TRANSACTION_COLUMNS,
    TXN_COLOURS,
    committed_table,
    output_copies,
    show_transactions,
    stores_of,
    transaction_table,
    transactions_dot,
    transactions_html,
)
from tests.views.test_graph import node_line
from tests.views.worlds import actions

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' not installed")

OPEN = ["emit source[0]", "deliver source[0]->count[0] x2", "deliver count[0]->sink[0] x2"]
"""sink[0] writes (to, 1) and (be, 1) into its first transaction, t1."""
PRE_COMMIT = [
    "trigger",
    "deliver source[0]->count[0]",  # barrier 1: count[0] blocks it
    "deliver source[1]->count[0]",  # barrier 1: count[0] aligned, forwards the barrier
    "deliver count[0]->sink[0]",  # barrier 1: sink[0] pre-commits t1 for checkpoint 1
]
AFTER_BARRIER = [
    "emit source[0]",  # be quick
    "deliver source[0]->count[0] x2",
    "deliver count[0]->sink[0] x2",  # (be, 2), (quick, 1) into a new transaction, t2
]
COMPLETE = [
    "deliver source[0]->count[1] x2",  # or, barrier 1
    "deliver source[1]->count[1]",  # barrier 1: count[1] aligned
    "deliver count[1]->sink[1] x2",  # (or, 1) into t3, barrier 1: pre-commit; complete
]


def stepper_after(script: list[str], sink: absnb.operators.base.Operator | None = None):
    """A stepper of word count into ``sink`` (a new MemorySink) after ``script``."""
    job = absnb.word_count(sink=sink if sink is not None else MemorySink())
    stepper = absnb.Stepper(absnb.World(job, "abs"))
    for step in script:
        for act in actions(stepper.world, step):
            stepper.step(act)
    return stepper


def store_of(stepper: absnb.Stepper) -> TransactionStore:
    (store,) = stores_of(stepper)
    return store


def statuses(stepper: absnb.Stepper) -> dict[str, str]:
    frame = transaction_table(stepper)
    return dict(zip(frame["transaction"], frame["status"], strict=True))


def notify(stepper: absnb.Stepper, task: str, n: int) -> None:
    stepper.step(Notify(stepper.world.graph.task(task), n))


# -- the table follows the store -----------------------------------------------------------
def test_the_table_shows_each_phase_of_two_phase_commit() -> None:
    stepper = stepper_after(OPEN)
    frame = transaction_table(stepper)
    assert list(frame.columns) == TRANSACTION_COLUMNS
    assert frame.drop(columns="checkpoint").to_dict("records") == [
        {
            "transaction": "sink[0]/t1",
            "task": "sink[0]",
            "status": "open",
            "rows": 2,
            "records": "(to, 1) (be, 1)",
        }
    ]
    assert frame["checkpoint"].tolist() == ["–"]  # not pre-committed yet: a dash, never <NA>
    for step in PRE_COMMIT:
        for act in actions(stepper.world, step):
            stepper.step(act)
    assert statuses(stepper) == {"sink[0]/t1": "pre-committed"}
    assert transaction_table(stepper)["checkpoint"].tolist() == [1]
    assert stepper.world.coordinator.pending  # count[1] and sink[1] have not acknowledged
    for step in AFTER_BARRIER + COMPLETE:
        for act in actions(stepper.world, step):
            stepper.step(act)
    assert [c.checkpoint_id for c in stepper.world.coordinator.completed] == [1]
    assert statuses(stepper) == {
        "sink[0]/t1": "pre-committed",
        "sink[0]/t2": "open",
        "sink[1]/t3": "pre-committed",
    }
    assert committed_table(stepper).empty  # complete, but nothing committed yet
    notify(stepper, "sink[0]", 1)
    assert statuses(stepper)["sink[0]/t1"] == "committed"
    assert statuses(stepper)["sink[1]/t3"] == "pre-committed"
    assert committed_table(stepper)["record"].tolist() == ["(to, 1)", "(be, 1)"]
    notify(stepper, "sink[1]", 1)
    assert statuses(stepper)["sink[1]/t3"] == "committed"


def test_the_table_matches_the_store_at_every_step_of_a_random_run() -> None:
    job = absnb.word_count(sink=MemorySink())
    scheduler = absnb.RandomScheduler(seed=4, crash_at=30, crash_task="sink[1]")
    stepper = absnb.Stepper(absnb.World(job, "abs", checkpoint_interval=5), scheduler)
    store = store_of(stepper)
    seen: set[str] = set()
    while stepper.step() is not None:
        frame = transaction_table(stepper)
        table = store.table()
        assert frame["transaction"].tolist() == [t.name for t in table]
        assert frame["status"].tolist() == [t.status for t in table]
        assert frame["rows"].tolist() == [len(t.rows) for t in table]
        seen.update(frame["status"])
        assert committed_table(stepper)["copies"].sum() == len(store.rows)
    assert seen == set(TXN_COLOURS)  # the run went through every status
    assert stepper.world.output() == absnb.reference_output(job)


def test_going_back_shows_the_earlier_transactions_again() -> None:
    stepper = stepper_after(OPEN + PRE_COMMIT + AFTER_BARRIER + COMPLETE)
    before = transaction_table(stepper)
    notify(stepper, "sink[0]", 1)
    assert not transaction_table(stepper).equals(before)
    stepper.back()
    pd.testing.assert_frame_equal(transaction_table(stepper), before)


def test_a_crash_before_the_commit_commits_on_restore_and_aborts_the_open_one() -> None:
    stepper = stepper_after(
        OPEN + PRE_COMMIT + AFTER_BARRIER + COMPLETE + ["crash sink[0]", "recover full"]
    )
    assert statuses(stepper) == {
        "sink[0]/t1": "committed",
        "sink[0]/t2": "aborted",
        "sink[1]/t3": "committed",
    }
    stepper.scheduler = absnb.RoundRobinScheduler()
    stepper.run()
    assert Counter(committed_table(stepper)["copies"]) == {1: 11}  # every record once
    assert stepper.world.output() == absnb.reference_output(stepper.world.job)


def test_several_stores_get_a_store_column() -> None:
    job = absnb.word_count(sink=MemorySink(TransactionStore("db")))
    stepper = absnb.Stepper(absnb.World(job, "abs"))
    assert transaction_table(stepper).empty
    assert list(transaction_table(stepper).columns) == TRANSACTION_COLUMNS
    stores = [TransactionStore("a"), TransactionStore("b")]
    stores[1].prepare(stores[1].begin("sink[0]"), 3)

    class Op:
        def __init__(self, store: TransactionStore) -> None:
            self.function = MemorySink(store)

    class Graph:
        """A stand-in graph with two sinks writing to two stores."""

        def __init__(self) -> None:
            self.operators = {"x": Op(stores[0]), "y": Op(stores[1])}

    frame = transaction_table(type("W", (), {"graph": Graph()})())
    assert frame.columns[0] == "store"
    assert frame.to_dict("records")[0]["store"] == "b"
    assert frame["checkpoint"].tolist() == [3]


def test_stores_of_refuses_what_has_no_external_system() -> None:
    with pytest.raises(TypeError, match="cannot find an external system"):
        stores_of(42)
    assert stores_of(absnb.word_count()) == []  # collect sinks keep their output inside
    sink = MemorySink()
    assert stores_of(sink) == [sink.store] == stores_of(sink.store)


def test_a_sink_that_lists_its_own_transactions_is_shown_too(tmp_path) -> None:
    """FileSink keeps no store object: its transactions are files, its output committed
    files. The views read them through the sink."""
    from absnb.sinks.files import FileSink

    sink = FileSink(tmp_path / "out")
    stepper = stepper_after(OPEN + PRE_COMMIT + AFTER_BARRIER + COMPLETE, sink)
    (store,) = stores_of(stepper)
    assert store.name == "FileSink"
    frame = transaction_table(stepper)
    files = sink.transactions()
    assert frame["transaction"].tolist() == [t.name for t in files]
    assert sorted(zip(frame["task"], frame["status"], strict=True)) == [
        ("sink[0]", "open"),
        ("sink[0]", "pre-committed"),
        ("sink[1]", "pre-committed"),
    ]
    assert (frame["rows"] == "–").all()  # a file transaction does not list its records
    notify(stepper, "sink[0]", 1)
    assert sorted(transaction_table(stepper)["status"]) == ["committed", "open", "pre-committed"]
    assert committed_table(stepper)["record"].tolist() == ["(to, 1)", "(be, 1)"]
    dot = transactions_dot(stepper.world)
    assert "committed output: 2 records" in dot
    assert sorted(_store_rows(dot).values()) == sorted(
        TXN_COLOURS[s] for s in ("committed", "open", "pre-committed")
    )


# -- outputs side by side ------------------------------------------------------------------------
def test_output_copies_counts_the_at_least_once_duplicates() -> None:
    crash = ["crash sink[0]", "recover full"]
    script = OPEN + PRE_COMMIT + AFTER_BARRIER + COMPLETE + crash
    runs = {
        "exactly-once": stepper_after(script),
        "at-least-once": stepper_after(script, AtLeastOnceSink()),
    }
    for stepper in runs.values():
        stepper.scheduler = absnb.RoundRobinScheduler()
        stepper.run()
    frame = output_copies({name: s.world.output() for name, s in runs.items()})
    assert list(frame.columns) == ["record", "exactly-once", "at-least-once"]
    reference = absnb.reference_output(runs["exactly-once"].world.job)
    assert frame["record"].tolist() == sorted(reference)
    assert (frame["exactly-once"] == 1).all()
    twice = frame[frame["at-least-once"] > 1]["record"].tolist()
    # written by sink[0] after barrier 1, before the crash: replayed, so written again
    assert twice == [("be", 2), ("quick", 1)]
    assert committed_table(runs["at-least-once"]).set_index("record")["copies"]["(be, 2)"] == 2


# -- the graph: sink labels and the external system beside it --------------------------------
def test_sink_labels_show_open_and_pre_committed_transactions() -> None:
    assert "no open transaction" in node_line(to_dot(stepper_after([]).world), "sink[0]")
    assert "open t1: 2 records" in node_line(to_dot(stepper_after(OPEN).world), "sink[0]")
    world = stepper_after(OPEN + PRE_COMMIT + AFTER_BARRIER).world
    line = node_line(to_dot(world), "sink[0]")
    assert "open t2: 2 records<BR/>t1 pre-committed for 1" in line
    assert "no open transaction" in node_line(to_dot(world), "sink[1]")


def test_transaction_lines_count_what_they_leave_out() -> None:
    state = TwoPhaseCommitState(
        task="sink[0]",
        current="sink[0]/t9",
        written=1,
        pending=tuple((n, f"sink[0]/t{n}") for n in range(1, 6)),
    )
    assert transaction_lines(state, max_pending=2) == [
        "open t9: 1 record",
        "t1 pre-committed for 1",
        "t2 pre-committed for 2",
        "+3 more pre-committed",
    ]
    assert short_txn("/data/out/_staging/sink-0-ckpt-3.part", "sink[0]") == "sink-0-ckpt-3.part"


def _store_rows(dot: str) -> dict[str, str]:
    """transaction -> colour of its status cell, from the external system's table."""
    return dict(re.findall(r'<TR><TD>([^<]+)</TD><TD BGCOLOR="(#[0-9a-f]{6})">', dot))


def test_the_external_system_is_drawn_beside_the_graph_with_status_colours() -> None:
    stepper = stepper_after(OPEN + PRE_COMMIT + AFTER_BARRIER + COMPLETE)
    notify(stepper, "sink[0]", 1)
    dot = transactions_dot(stepper.world)
    assert dot.startswith(to_dot(stepper.world)[: -len("}\n")])  # the graph is unchanged
    assert "subgraph cluster_external_0" in dot
    assert _store_rows(dot) == {
        name: TXN_COLOURS[status] for name, status in statuses(stepper).items()
    }
    assert _store_rows(dot)["sink[0]/t1"] == TXN_COLOURS["committed"]
    assert "committed output: 2 records<BR/>(to, 1) (be, 1)" in dot
    for sink in ("sink[0]", "sink[1]"):
        assert f'"{sink}" -> "external:0" [style=dashed' in dot
    assert dot.count("{") == dot.count("}")


def test_the_drawing_keeps_only_the_newest_transactions() -> None:
    job = absnb.word_count(sink=MemorySink())
    stepper = absnb.Stepper(absnb.World(job, "abs", checkpoint_interval=3))
    stepper.run()
    names = [t.name for t in store_of(stepper).table()]
    assert len(names) > 3
    dot = transactions_dot(stepper.world, max_transactions=3)
    assert list(_store_rows(dot)) == names[-3:]
    assert f"… {len(names) - 3} earlier" in dot


def test_without_an_external_system_the_drawing_is_the_graph() -> None:
    world = absnb.World(absnb.word_count(), "abs")
    assert transactions_dot(world) == to_dot(world)


@needs_dot
def test_show_transactions_renders_svg() -> None:
    stepper = stepper_after(OPEN + PRE_COMMIT)
    view = show_transactions(stepper)
    svg = view.svg()
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg
    assert "pre&#45;committed" in svg or "pre-committed" in svg
    assert repr(view) == "<TransactionsView word_count abs step=9>"
    assert view.svg() == svg  # deterministic


def test_transactions_html_colours_each_status() -> None:
    stepper = stepper_after(OPEN + PRE_COMMIT + AFTER_BARRIER)
    text = transactions_html(stepper)
    assert f"<td style='background:{TXN_COLOURS['pre-committed']}'>pre-committed</td>" in text
    assert f"<td style='background:{TXN_COLOURS['open']}'>open</td>" in text
    assert "committed: 0 records" in text


@needs_dot
def test_the_stepper_widget_has_a_transactions_pane_only_with_an_external_system() -> None:
    from absnb.views.widgets import StepperWidget, stepper_widget

    assert stepper_widget(absnb.word_count(), timeline=False).transactions is None
    job = absnb.word_count(sink=MemorySink())
    widget = StepperWidget(absnb.Stepper(absnb.World(job, "abs")), timeline=False)
    assert widget.transactions is not None
    assert "no transactions" in widget.transactions.value
    for step in OPEN:
        for act in actions(widget.world, step):
            widget.apply(act)
    assert "sink[0]/t1" in widget.transactions.value
    assert ">open<" in widget.transactions.value
    widget.controls.back.click()
    assert "1: (to, 1)" in widget.transactions.value  # back: one record written, not two
