"""Job graphs: compiling the teaching jobs, partitioning, back-edges, and every error a
user can cause with a malformed graph (each names the problem and the fix)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import absnb
from absnb import (
    Broadcast,
    CyclicGraphError,
    Forward,
    GraphError,
    Hash,
    JobGraph,
    Rebalance,
    UnknownProtocolError,
    bank_transfer,
    cyclic,
    get_protocol,
    word_count,
)
from absnb.core.graph import Edge, find_back_edges, stable_hash


def labels(items) -> list[str]:
    return [str(x) for x in items]


def is_dag(graph) -> bool:
    """True when the graph without its back-edges has no cycle (Kahn's algorithm)."""
    edges = [c for c in graph.channels if c not in graph.back_edges]
    indegree = dict.fromkeys(graph.tasks, 0)
    for c in edges:
        indegree[c.dst] += 1
    ready = [t for t, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        t = ready.pop()
        seen += 1
        for c in edges:
            if c.src == t:
                indegree[c.dst] -= 1
                if indegree[c.dst] == 0:
                    ready.append(c.dst)
    return seen == len(graph.tasks)


# -- compiling the teaching jobs -------------------------------------------------------------


def test_word_count_default() -> None:
    g = word_count().graph
    assert labels(g.tasks) == [
        "source[0]",
        "source[1]",
        "count[0]",
        "count[1]",
        "sink[0]",
        "sink[1]",
    ]
    # source -> count is hashed (2 x 2 channels), count -> sink is forward (2 channels).
    assert sorted(labels(g.channels)) == sorted(
        [
            "source[0]->count[0]",
            "source[0]->count[1]",
            "source[1]->count[0]",
            "source[1]->count[1]",
            "count[0]->sink[0]",
            "count[1]->sink[1]",
        ]
    )
    assert g.back_edges == frozenset()
    assert not g.is_cyclic
    assert g.roots == ("source",)
    assert labels(g.initiators()) == ["source[0]", "source[1]"]
    assert labels(g.inputs[g.task("count[1]")]) == ["source[0]->count[1]", "source[1]->count[1]"]
    assert labels(g.outputs[g.task("count[0]")]) == ["count[0]->sink[0]"]
    assert g.inputs[g.task("source[0]")] == ()


@pytest.mark.parametrize(
    ("sources", "counters", "tasks", "channels"),
    [(1, 1, 3, 2), (3, 2, 3 + 2 + 2, 3 * 2 + 2), (2, 4, 2 + 4 + 4, 2 * 4 + 4)],
)
def test_word_count_sizes(sources: int, counters: int, tasks: int, channels: int) -> None:
    g = word_count(sources=sources, counters=counters, sinks=counters).graph
    assert (len(g.tasks), len(g.channels)) == (tasks, channels)


def test_cyclic_default() -> None:
    g = cyclic().graph
    assert labels(g.tasks) == ["source", "head", "step", "sink"]
    assert labels(g.channels) == ["source->head", "head->step", "step->head", "step->sink"]
    # DFS from the source: source, head, step; step->head reaches head on the stack.
    assert labels(g.back_edges) == ["step->head"]
    assert g.back_edge_operators == {("step", "head")}
    assert g.is_cyclic
    assert is_dag(g)


def test_cyclic_parallel_marks_every_channel_of_the_back_edge() -> None:
    g = cyclic(parallelism=2).graph
    # 1 source + 2 head + 2 step + 2 sink; channels: source->head hash 1x2, head->step
    # forward 2, step->head hash 2x2, step->sink forward 2.
    assert (len(g.tasks), len(g.channels)) == (7, 10)
    assert sorted(labels(g.back_edges)) == [
        "step[0]->head[0]",
        "step[0]->head[1]",
        "step[1]->head[0]",
        "step[1]->head[1]",
    ]
    assert is_dag(g)


def test_bank_default_two_accounts() -> None:
    g = bank_transfer().graph
    assert labels(g.tasks) == ["A", "B"]
    assert labels(g.channels) == ["A->B", "B->A"]
    assert g.roots == ("A",)  # no sources: the first process is the root
    assert labels(g.back_edges) == ["B->A"]


def test_bank_three_accounts_fully_connected() -> None:
    g = bank_transfer({"A": 1, "B": 2, "C": 3}).graph
    # Links in declaration order: A->B, A->C, B->A, B->C, C->A, C->B.
    assert labels(g.channels) == ["A->B", "A->C", "B->A", "B->C", "C->A", "C->B"]
    # DFS from A (the root), edges in declaration order:
    #   A: stack [A]; first edge A->B, B unvisited: stack [A, B]
    #   B: B->A, A on the stack: back-edge B->A; B->C, C unvisited: stack [A, B, C]
    #   C: C->A, A on the stack: back-edge; C->B, B on the stack: back-edge. Pop C, pop B.
    #   A: A->C, C visited and off the stack: not a back-edge. Pop A.
    # What remains, A->B, A->C, B->C, is the DAG A < B < C.
    assert sorted(labels(g.back_edges)) == ["B->A", "C->A", "C->B"]
    assert is_dag(g)


def test_back_edges_depend_on_dfs_order() -> None:
    links = [("A", "C"), ("C", "B"), ("B", "A"), ("A", "B"), ("B", "C"), ("C", "A")]
    g = bank_transfer({"A": 1, "B": 2, "C": 3}, links=links).graph
    # DFS from A: A->C (push C); C->B (push B); B->A: A on the stack, back; B->C: C on
    # the stack, back; pop B; C->A: back; pop C; A->B: B visited, off the stack.
    # Remaining A->C, C->B, A->B: the DAG A < C < B.
    assert sorted(labels(g.back_edges)) == ["B->A", "B->C", "C->A"]
    assert is_dag(g)


def test_find_back_edges_self_loop_and_unrooted_part() -> None:
    edges = [Edge("s", "x", Forward()), Edge("x", "x", Forward()), Edge("y", "z", Forward())]
    edges.append(Edge("z", "y", Forward()))
    # x->x: x is on the stack when its own edge is seen. y is searched as a second root.
    assert find_back_edges(["s", "y"], edges) == {("x", "x"), ("z", "y")}
    assert find_back_edges(["s"], edges) == {("x", "x")}


# -- partitioning ----------------------------------------------------------------------------


def test_forward_keeps_the_subtask() -> None:
    for sender in range(3):
        assert tuple(Forward().targets("v", sender, 3, 0)) == (sender,)


def test_broadcast_goes_everywhere() -> None:
    assert list(Broadcast().targets("v", 1, 4, 7)) == [0, 1, 2, 3]


def test_rebalance_is_round_robin_from_the_sender() -> None:
    got = [Rebalance().targets("v", 1, 3, sent) for sent in range(6)]
    assert [t for (t,) in got] == [1, 2, 0, 1, 2, 0]
    got = [Rebalance().targets("v", 0, 2, sent) for sent in range(4)]
    assert [t for (t,) in got] == [0, 1, 0, 1]


def test_hash_uses_the_key_and_stable_hash() -> None:
    part = Hash(lambda v: v[0])
    for value in [("to", 1), ("be", 2), (7, 3)]:
        (t,) = part.targets(value, 0, 3, 0)
        assert t == stable_hash(value[0]) % 3
        # Same key, other payload, other sender: same target.
        assert part.targets((value[0], 99), 2, 3, 5) == (t,)


def test_stable_hash_of_ints_is_the_int_itself() -> None:
    assert [stable_hash(i) for i in (0, 1, 5, 2**31 - 1)] == [0, 1, 5, 2**31 - 1]
    assert stable_hash(-1) == 2**31 - 1  # masked to 31 bits
    assert all(stable_hash(i) >= 0 for i in (-(2**40), -5, 2**40))


WORDS = ["to", "be", "or", "not", "quick", "still", ("k", 1), 3.5]
PROBE = (
    "import json, sys\n"
    "from absnb.core.graph import Hash, stable_hash\n"
    "words = json.loads(sys.argv[1])\n"
    "words = [tuple(w) if isinstance(w, list) else w for w in words]\n"
    "print(json.dumps({\n"
    "    'stable': [stable_hash(w) for w in words],\n"
    "    'targets': [Hash(lambda v: v).targets(w, 0, 4, 0)[0] for w in words],\n"
    "    'builtin': [hash(w) for w in words if isinstance(w, str)],\n"
    "}))\n"
)


def run_probe(seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(WORDS)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(out.stdout)


def test_hash_partitioning_is_the_same_in_every_process() -> None:
    one, two = run_probe("1"), run_probe("2")
    # Control: the two processes really do salt str hashes differently.
    assert one["builtin"] != two["builtin"]
    assert one["stable"] == two["stable"] == [stable_hash(w) for w in WORDS]
    here = [Hash(lambda v: v).targets(w, 0, 4, 0)[0] for w in WORDS]
    assert one["targets"] == two["targets"] == here
    assert len(set(here)) > 1  # the words do spread over more than one target


# -- errors a user can cause -----------------------------------------------------------------


def simple() -> JobGraph:
    g = JobGraph("demo")
    g.add("src", "source", None)
    g.add("op", "operator", None)
    g.add("out", "sink", None)
    g.connect("src", "op")
    g.connect("op", "out")
    return g


def test_the_simple_graph_compiles() -> None:
    g = simple().compile()
    assert labels(g.channels) == ["src->op", "op->out"]


def test_dangling_edge() -> None:
    g = simple()
    g.connect("op", "ghost")
    with pytest.raises(GraphError, match=r"'ghost'.*not an operator.*add the operator"):
        g.compile()


def test_source_with_an_input() -> None:
    g = simple()
    g.add("src2", "source", None)
    g.connect("op", "src2")
    with pytest.raises(GraphError, match=r"source 'src2' has an input.*make it an operator"):
        g.compile()


def test_sink_with_an_output() -> None:
    g = simple()
    g.add("after", "sink", None)
    g.connect("out", "after")
    with pytest.raises(GraphError, match=r"sink 'out' has an output.*make it an operator"):
        g.compile()


def test_duplicate_operator_name() -> None:
    g = simple()
    with pytest.raises(GraphError, match=r"duplicate operator name 'op'.*its own name"):
        g.add("op", "operator", None)


def test_duplicate_edge() -> None:
    g = simple()
    g.connect("src", "op")
    with pytest.raises(GraphError, match=r"src->op is given twice.*once"):
        g.compile()


@pytest.mark.parametrize("parallelism", [0, -1, 1.5])
def test_bad_parallelism(parallelism) -> None:
    g = JobGraph("demo")
    with pytest.raises(GraphError, match=r"parallelism .* must be a whole number of at least 1"):
        g.add("src", "source", None, parallelism=parallelism)
    assert "src" not in g.operators


def test_unknown_kind() -> None:
    with pytest.raises(GraphError, match=r"kind 'spout'.*use source, operator, sink or process"):
        JobGraph("demo").add("src", "spout", None)  # type: ignore[arg-type]


def test_forward_between_different_parallelisms() -> None:
    g = JobGraph("demo")
    g.add("src", "source", None, parallelism=2)
    g.add("out", "sink", None, parallelism=3)
    g.connect("src", "out")
    with pytest.raises(
        GraphError, match=r"forward edge src->out joins parallelism 2 to 3: use Hash.*Rebalance"
    ):
        g.compile()
    # The fix the message names works.
    g.edges[0] = Edge("src", "out", Rebalance())
    assert len(g.compile().channels) == 2 * 3


def test_unreachable_operator() -> None:
    g = simple()
    g.add("island", "operator", None)
    g.add("lagoon", "sink", None)
    g.connect("island", "lagoon")
    with pytest.raises(
        GraphError, match=r"operators island, lagoon .*cannot be reached.*connect them or remove"
    ):
        g.compile()


def test_no_source() -> None:
    g = JobGraph("demo")
    g.add("op", "operator", None)
    g.add("out", "sink", None)
    g.connect("op", "out")
    with pytest.raises(GraphError, match=r"no source.*add a source"):
        g.compile()


def test_no_operators_at_all() -> None:
    with pytest.raises(GraphError, match=r"no operators.*add a source"):
        JobGraph("empty").compile()


def test_unknown_task_and_channel_names_list_the_known_ones() -> None:
    g = simple().compile()
    with pytest.raises(GraphError, match=r"no task 'nope'.*src, op, out"):
        g.task("nope")
    with pytest.raises(GraphError, match=r"no channel 'op->src'.*src->op, op->out"):
        g.channel("op->src")


def test_graph_errors_are_absnb_errors_and_value_errors() -> None:
    assert issubclass(GraphError, absnb.AbsnbError)
    assert issubclass(GraphError, ValueError)


# -- protocols checked against graphs --------------------------------------------------------


def test_unknown_protocol_names_the_choices() -> None:
    with pytest.raises(UnknownProtocolError) as info:
        get_protocol("nope")
    message = str(info.value)
    assert "'nope'" in message
    for name in ("chandy-lamport", "abs", "abs-cyclic", "synchronous", "none"):
        assert name in message


def test_algorithm_1_on_a_cyclic_graph_is_refused() -> None:
    graph = cyclic().graph
    with pytest.raises(CyclicGraphError) as info:
        get_protocol("abs", graph)
    message = str(info.value)
    assert "abs-cyclic" in message
    assert "allow_deadlock" in message
    assert "step->head" in message  # names the back-edge


def test_algorithm_1_on_a_cyclic_graph_when_forced() -> None:
    graph = cyclic().graph
    protocol = get_protocol("abs", graph, allow_deadlock=True)
    assert protocol.name == "abs"
    assert protocol.allow_deadlock
    assert protocol.handler(graph, graph.task("head")).inputs == graph.inputs[graph.task("head")]


@pytest.mark.parametrize("name", ["abs-cyclic", "chandy-lamport", "synchronous", "none"])
def test_other_protocols_accept_cyclic_graphs(name: str) -> None:
    assert get_protocol(name, cyclic().graph).name == name


def test_algorithm_1_accepts_acyclic_graphs() -> None:
    assert get_protocol("abs", word_count().graph).name == "abs"
