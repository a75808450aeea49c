"""Bad input on every surface gets a clear error at the call that received it.

One table per surface: the simulator API, ``SparkRuntime.run`` (and ``Failure``) and the
command line. Every case asserts the exception type (the command line: exit code 2 and one
line on stderr, no traceback) and that the message names the value given. The Spark cases
use a stand-in session that has no Spark at all: a case that reached Spark would fail with
an AttributeError instead of its own error, so each is shown to raise before any Spark job.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import absnb
from absnb.cli import main
from absnb.core.errors import (
    AbsnbError,
    ActionNotEnabledError,
    CyclicGraphError,
    GraphError,
    InvalidTypeError,
    InvalidValueError,
    OperatorOutputError,
    ProtocolSettingError,
    TraceFormatError,
    TransferRefusedError,
    UnknownJobError,
    UnknownProtocolError,
)
from absnb.core.graph import Hash, JobGraph
from absnb.core.ids import ChannelId, TaskId
from absnb.core.job import Job
from absnb.harness import TaskHarness
from absnb.jobs.custom import build_custom
from absnb.labs import LabProtocol, MarkerLabProtocol
from absnb.operators import CollectSink, FlatMap, Operator, Source
from absnb.protocols.aligned import AlignedBarrierHandler, AlignedProtocol
from absnb.protocols.chandy_lamport import ChandyLamportHandler
from absnb.runtime import Failure
from absnb.runtime.spark.inputs import SparkInputError
from absnb.sim.actions import Crash, Deliver, Emit, Notify, Recover, Transfer, TriggerCheckpoint
from absnb.sim.explore import explore
from absnb.sim.schedulers import ManualScheduler, RandomScheduler, ScriptedScheduler
from absnb.sim.stepper import Stepper
from absnb.sim.trace import action_from_json, load_trace, parse_header, parse_time
from absnb.sinks import make_sink

Case = tuple[str, Callable[[], Any], type[BaseException], tuple[str, ...]]


def wc() -> Job:
    return absnb.word_count()


def world() -> absnb.World:
    return absnb.World(absnb.bank_transfer(), "chandy-lamport")


def task(name: str) -> Any:
    return wc().graph.task(name)


class Returns(Operator):
    """An operator whose process returns ``result`` as it is."""

    def __init__(self, result: Any) -> None:
        self.result = result

    def initial_state(self) -> Any:
        return 0

    def process(self, state: Any, value: Any) -> Any:
        return self.result


def run_operator(op: Operator) -> None:
    """A source feeding ``op`` one record, then a sink; run until done."""
    g = JobGraph("returns")
    g.add("src", "source", Source(), 1)
    g.add("op", "operator", op, 1)
    g.add("out", "sink", CollectSink(), 1)
    g.connect("src", "op")
    g.connect("op", "out")
    graph = g.compile()
    job = Job("returns", {}, graph, {graph.task("src"): ("r1",)})
    Stepper(absnb.World(job, "none"), history=False).run()


def run_source(split: Callable[[Any], Any]) -> None:
    g = JobGraph("split")
    g.add("src", "source", Source(split=split), 1)
    g.add("out", "sink", CollectSink(), 1)
    g.connect("src", "out")
    graph = g.compile()
    Stepper(absnb.World(Job("split", {}, graph, {graph.task("src"): ("one two",)}), "none")).run()


def graph_without_functions() -> Job:
    g = JobGraph("bare")
    g.add("numbers", "source", None, 1)
    g.add("sink_op", "sink", None, 1)
    g.connect("numbers", "sink_op")
    graph = g.compile()
    return Job("bare", {}, graph, {graph.task("numbers"): (1,)})


def add(*args: Any, **kwargs: Any) -> None:
    g = JobGraph("g")
    g.add("x", "source", Source())
    g.add(*args, **kwargs)


def step(actions: list[Any]) -> None:
    w = world()
    for a in actions:
        w.apply(a)


a, b = task("source[0]"), task("count[0]")
bank = absnb.bank_transfer()
A, B = bank.graph.task("A"), bank.graph.task("B")
AB = bank.graph.channel("A->B")
W = world()

HEADER = {"absnb": "trace", "version": 1, "job": "bank_transfer", "protocol": "chandy-lamport"}

SIM: list[Case] = [
    # World
    ("world-job-str", lambda: absnb.World("word_count"), InvalidTypeError, ("'word_count'",)),
    ("world-interval-str", lambda: absnb.World(wc(), checkpoint_interval="5"), InvalidTypeError, ("'5'",)),  # noqa: E501
    ("world-max-concurrent-0", lambda: absnb.World(wc(), "abs", max_concurrent=0), ProtocolSettingError, (">= 1", "not 0")),  # noqa: E501
    ("world-interval-0", lambda: absnb.World(wc(), checkpoint_interval=0), InvalidValueError, ("not 0",)),  # noqa: E501
    ("world-none-two-phase-commit", lambda: absnb.World(absnb.word_count(sink="two-phase-commit"), "none"), ProtocolSettingError, ("protocol 'none'", "sink[0]", "a snapshot protocol")),  # noqa: E501
    ("world-interval-neg", lambda: absnb.World(wc(), checkpoint_interval=-3), InvalidValueError, ("-3",)),  # noqa: E501
    ("world-interval-float", lambda: absnb.World(wc(), checkpoint_interval=2.5), InvalidTypeError, ("2.5",)),  # noqa: E501
    ("world-max-checkpoints", lambda: absnb.World(wc(), max_checkpoints=-1), InvalidValueError, ("-1",)),  # noqa: E501
    ("world-max-checkpoints-str", lambda: absnb.World(wc(), max_checkpoints="1"), InvalidTypeError, ("'1'",)),  # noqa: E501
    ("world-allow-deadlock", lambda: absnb.World(wc(), allow_deadlock="yes"), InvalidTypeError, ("'yes'",)),  # noqa: E501
    ("world-notify-steps", lambda: absnb.World(wc(), notify_steps="often"), InvalidTypeError, ("'often'",)),  # noqa: E501
    ("world-protocol", lambda: absnb.World(wc(), "paxos"), UnknownProtocolError, ("'paxos'",)),
    ("world-protocol-int", lambda: absnb.World(wc(), 42), UnknownProtocolError, ("42",)),
    ("world-abs-on-cycle", lambda: absnb.World(absnb.cyclic(), "abs"), CyclicGraphError, ("'cyclic'",)),  # noqa: E501
    ("world-no-functions", lambda: absnb.World(graph_without_functions()), GraphError, ("'numbers'", "None")),  # noqa: E501
    ("world-state-of", lambda: W.state_of("Q"), GraphError, ("'Q'",)),
    ("world-channel-values", lambda: W.channel_values("A->Q"), GraphError, ("A->Q",)),
    # word count
    ("wc-flat-lines", lambda: absnb.word_count(lines=["to be", "or not"]), InvalidTypeError, ("'to be'",)),  # noqa: E501
    ("wc-lines-str", lambda: absnb.word_count(lines="to be"), InvalidTypeError, ("'to be'",)),
    ("wc-lines-empty", lambda: absnb.word_count(lines=[]), InvalidTypeError, ("[]",)),
    ("wc-lines-int", lambda: absnb.word_count(lines=[[42]]), InvalidTypeError, ("42",)),
    ("wc-lines-none-part", lambda: absnb.word_count(lines=[None]), InvalidTypeError, ("None",)),
    ("wc-sources-0", lambda: absnb.word_count(sources=0), InvalidValueError, ("sources", "0")),
    ("wc-counters-neg", lambda: absnb.word_count(counters=-2), InvalidValueError, ("-2",)),
    ("wc-sinks-str", lambda: absnb.word_count(sinks="2"), InvalidTypeError, ("'2'",)),
    ("wc-sink-unknown", lambda: absnb.word_count(sink="kafka"), ValueError, ("'kafka'",)),
    ("wc-forward-mismatch", lambda: absnb.word_count(counters=2, sinks=3), GraphError, ("2 to 3",)),
    ("wc-lines-and-sources", lambda: absnb.word_count(lines=[["a"], ["b"]], sources=5), InvalidValueError, ("2 source(s)", "sources=5")),  # noqa: E501
    ("wc-sources-huge", lambda: absnb.word_count(sources=10**7), InvalidValueError, ("sources", "10,000,000")),  # noqa: E501
    ("wc-counters-huge", lambda: absnb.word_count(counters=10**7, sinks=10**7), InvalidValueError, ("counters", "10,000,000")),  # noqa: E501
    ("make-sink", lambda: make_sink("s3"), ValueError, ("'s3'",)),
    # bank
    ("bank-one-account", lambda: absnb.bank_transfer({"A": 10}), GraphError, ("{'A': 10}",)),
    ("bank-balance-str", lambda: absnb.bank_transfer({"A": "ten", "B": 5}), InvalidTypeError, ("'ten'",)),  # noqa: E501
    ("bank-balance-float", lambda: absnb.bank_transfer({"A": 1.5, "B": 5}), InvalidTypeError, ("1.5",)),  # noqa: E501
    ("bank-accounts-list", lambda: absnb.bank_transfer(["A", "B"]), InvalidTypeError, ("'A'",)),
    ("bank-account-name", lambda: absnb.bank_transfer({1: 5, "B": 5}), InvalidTypeError, ("1",)),
    ("bank-transfers-neg", lambda: absnb.bank_transfer(transfers=-1), InvalidValueError, ("-1",)),
    ("bank-transfers-str", lambda: absnb.bank_transfer(transfers="3"), InvalidTypeError, ("'3'",)),
    ("bank-transfer-no-link", lambda: absnb.bank_transfer(transfers=[("A", "C", 100)]), GraphError, ("'C'",)),  # noqa: E501
    ("bank-transfer-amount", lambda: absnb.bank_transfer(transfers=[("A", "B", -5)]), TransferRefusedError, ("-5",)),  # noqa: E501
    ("bank-seed", lambda: absnb.bank_transfer(seed="x"), InvalidTypeError, ("'x'",)),
    ("bank-max-amount", lambda: absnb.bank_transfer(max_amount=0), InvalidValueError, ("0",)),
    ("bank-link", lambda: absnb.bank_transfer(links=[("A", "Z")]), GraphError, ("'Z'",)),
    ("bank-link-single", lambda: absnb.bank_transfer(links=[("A",)]), InvalidTypeError, ("links[0]", "('A',)")),  # noqa: E501
    ("bank-link-str", lambda: absnb.bank_transfer(links=["AB"]), InvalidTypeError, ("'AB'",)),
    ("bank-link-triple", lambda: absnb.bank_transfer(links=[("A", "B", "C")]), InvalidTypeError, ("('A', 'B', 'C')",)),  # noqa: E501
    ("bank-links-str", lambda: absnb.bank_transfer(links="AB"), InvalidTypeError, ("'AB'",)),
    ("bank-transfer-pair", lambda: absnb.bank_transfer(transfers=[("A", "B")]), InvalidTypeError, ("transfers[0]", "('A', 'B')")),  # noqa: E501
    ("bank-transfer-four", lambda: absnb.bank_transfer(transfers=[("A", "B", 1, 2)]), InvalidTypeError, ("('A', 'B', 1, 2)",)),  # noqa: E501
    ("bank-transfer-str", lambda: absnb.bank_transfer(transfers=["A->B"]), InvalidTypeError, ("'A->B'",)),  # noqa: E501
    ("bank-transfers-huge", lambda: absnb.bank_transfer(transfers=10**9), InvalidValueError, ("1,000,000,000",)),  # noqa: E501
    # cyclic and build_job
    ("cyclic-zero", lambda: absnb.cyclic(numbers=[0]), GraphError, ("0",)),
    ("cyclic-float", lambda: absnb.cyclic(numbers=[2.5]), GraphError, ("2.5",)),
    ("cyclic-parallelism", lambda: absnb.cyclic(parallelism=0), GraphError, ("parallelism 0",)),
    ("cyclic-parallelism-huge", lambda: absnb.cyclic(parallelism=10**6), GraphError, ("1,000,000", "512")),  # noqa: E501
    ("paper-parallelism-huge", lambda: absnb.build_job("paper_topology", parallelism=10**6), GraphError, ("1,000,000",)),  # noqa: E501
    ("build-job", lambda: absnb.build_job("pizza"), UnknownJobError, ("'pizza'",)),
    ("build-job-param", lambda: absnb.build_job("word_count", colour="red"), TypeError, ("colour",)),  # noqa: E501
    # Job inputs
    ("job-inputs-name", lambda: Job("x", {}, wc().graph, {"src": ("a",)}), GraphError, ("'src'",)),
    ("job-inputs-sink", lambda: Job("x", {}, wc().graph, {task("sink[0]"): ("a",)}), GraphError, ("sink[0]",)),  # noqa: E501
    ("job-inputs-str-log", lambda: Job("x", {}, wc().graph, {a: "abc"}), InvalidTypeError, ("'abc'",)),  # noqa: E501
    # JobGraph
    ("graph-function", lambda: add("y", "sink", "CollectSink"), GraphError, ("'CollectSink'",)),
    ("graph-kind", lambda: add("y", "pump", CollectSink()), GraphError, ("'pump'",)),
    ("graph-parallelism", lambda: add("y", "sink", CollectSink(), 0), GraphError, ("parallelism 0",)),  # noqa: E501
    ("graph-parallelism-huge", lambda: add("y", "sink", CollectSink(), 10**6), GraphError, ("1,000,000",)),  # noqa: E501
    ("graph-duplicate", lambda: add("x", "sink", CollectSink()), GraphError, ("'x'",)),
    # operators' outputs
    ("op-returns-none", lambda: run_operator(Returns(None)), OperatorOutputError, ("None",)),
    ("op-outputs-str", lambda: run_operator(Returns((0, "abc"))), OperatorOutputError, ("'abc'",)),
    ("op-outputs-none", lambda: run_operator(Returns((0, None))), OperatorOutputError, ("None",)),
    ("op-outputs-dict", lambda: run_operator(Returns((0, {"k": 1}))), OperatorOutputError, ("{'k': 1}",)),  # noqa: E501
    ("op-outputs-int", lambda: run_operator(Returns((0, 7))), OperatorOutputError, ("7",)),
    ("op-triple", lambda: run_operator(Returns((0, [], 1))), OperatorOutputError, ("(0, [], 1)",)),
    ("flatmap-str", lambda: run_operator(FlatMap(lambda v: "xyz")), OperatorOutputError, ("'xyz'",)),  # noqa: E501
    ("flatmap-none", lambda: run_operator(FlatMap(lambda v: None)), OperatorOutputError, ("None",)),
    ("source-split-str", lambda: run_source(lambda line: line), OperatorOutputError, ("'one two'",)),  # noqa: E501
    # actions
    ("crash-name", lambda: Crash("B"), InvalidTypeError, ("'B'",)),
    ("deliver-name", lambda: Deliver("A->B"), InvalidTypeError, ("'A->B'",)),
    ("emit-name", lambda: Emit("source[0]"), InvalidTypeError, ("'source[0]'",)),
    ("trigger-name", lambda: TriggerCheckpoint(at="A"), InvalidTypeError, ("'A'",)),
    ("transfer-name", lambda: Transfer("A", B, 100), InvalidTypeError, ("'A'",)),
    ("notify-zero", lambda: Notify(A, 0), InvalidValueError, ("0",)),
    ("recover-mode", lambda: step([Crash(B), Recover("some")]), ActionNotEnabledError, ("'some'",)),
    ("transfer-amount", lambda: Transfer(A, B, -5), TransferRefusedError, ("-5", "account A")),
    ("transfer-amount-str", lambda: Transfer(A, B, "100"), TransferRefusedError, ("'100'", "not a str")),  # noqa: E501
    ("transfer-overdraft", lambda: step([Transfer(A, B, 10**9)]), ActionNotEnabledError, ("1,000,000,000",)),  # noqa: E501
    ("deliver-empty", lambda: step([Deliver(AB)]), ActionNotEnabledError, ("A->B",)),
    ("emit-account-empty", lambda: step([Emit(A)]), ActionNotEnabledError, ("A",)),
    ("trigger-unreached", lambda: W.clone().apply(TriggerCheckpoint(a)), ActionNotEnabledError, ("source[0]",)),  # noqa: E501
    # Stepper and schedulers
    ("stepper-world", lambda: Stepper("world"), InvalidTypeError, ("'world'",)),
    ("stepper-scheduler", lambda: Stepper(W, "random"), InvalidTypeError, ("'random'",)),
    ("stepper-history", lambda: Stepper(W, history="yes"), InvalidTypeError, ("'yes'",)),
    ("stepper-until", lambda: Stepper(W).run(until="end"), InvalidTypeError, ("'end'",)),
    ("stepper-max-steps", lambda: Stepper(W).run(max_steps=-1), InvalidValueError, ("-1",)),
    ("random-seed-neg", lambda: RandomScheduler(seed=-1), InvalidValueError, ("-1",)),
    ("random-seed-str", lambda: RandomScheduler(seed="1"), InvalidTypeError, ("'1'",)),
    ("random-crash-at", lambda: RandomScheduler(crash_at=-5), InvalidValueError, ("-5",)),
    ("random-recovery", lambda: RandomScheduler(recovery="half"), InvalidValueError, ("'half'",)),
    ("script-str", lambda: ScriptedScheduler("deliver"), InvalidTypeError, ("'deliver'",)),
    ("script-entry", lambda: ScriptedScheduler(["deliver A->B"]), InvalidTypeError, ("'deliver A->B'",)),  # noqa: E501
    ("script-start", lambda: ScriptedScheduler([], start=-1), InvalidValueError, ("-1",)),
    ("random-crash-task", lambda: Stepper(W, RandomScheduler(crash_at=10**4, crash_task="Q")), GraphError, ("crash_task='Q'", "A, B")),  # noqa: E501
    ("script-crash-task", lambda: Stepper(W, ScriptedScheduler([Emit(A), Crash(TaskId("Q", 0, 1))])), GraphError, ("script entry 1", "'Q'")),  # noqa: E501
    ("script-channel", lambda: Stepper(W, ScriptedScheduler([Deliver(ChannelId(B, A)), Deliver(ChannelId(A, A))])), GraphError, ("script entry 1", "A->A")),  # noqa: E501
    ("stepper-scheduler-set", lambda: setattr(Stepper(W), "scheduler", RandomScheduler(crash_at=3, crash_task="Q")), GraphError, ("'Q'",)),  # noqa: E501
    # traces
    ("trace-missing", lambda: load_trace("no/such/trace.jsonl"), TraceFormatError, ("no/such/trace.jsonl",)),  # noqa: E501
    ("trace-action", lambda: action_from_json({"action": "jump"}, bank.graph), TraceFormatError, ("'jump'",)),  # noqa: E501
    ("trace-channel", lambda: action_from_json({"action": "deliver", "channel": "A->Q"}, bank.graph), TraceFormatError, ("A->Q",)),  # noqa: E501
    ("trace-amount", lambda: action_from_json({"action": "transfer", "src": "A", "dst": "B", "amount": "5"}, bank.graph), TraceFormatError, ("'5'",)),  # noqa: E501
    ("trace-version", lambda: parse_header({"absnb": "trace", "version": 7, "job": "x", "protocol": "abs"}), TraceFormatError, ("7",)),  # noqa: E501
    ("trace-interval", lambda: parse_header({"absnb": "trace", "version": 1, "job": "x", "protocol": "abs", "checkpoint_interval": "5"}), TraceFormatError, ("'5'",)),  # noqa: E501
    ("trace-time-str", lambda: parse_time("soon"), TraceFormatError, ("'soon'",)),
    ("trace-time-neg", lambda: parse_time(-1), TraceFormatError, ("-1",)),
    ("trace-unknown-key", lambda: parse_header({**HEADER, "seed": "x"}), TraceFormatError, ("'seed'",)),  # noqa: E501
    ("trace-allow-deadlock-str", lambda: parse_header({**HEADER, "allow_deadlock": "no"}), TraceFormatError, ('"no"',)),  # noqa: E501
    # the one-task harness
    ("harness-inputs-huge", lambda: TaskHarness("abs", inputs=10**7), ProtocolSettingError, ("10,000,000",)),  # noqa: E501
    ("harness-barrier-str", lambda: TaskHarness("abs").barrier("in0", "1"), InvalidTypeError, ("'1'",)),  # noqa: E501
    ("harness-cancel-0", lambda: TaskHarness("abs").cancel("in0", 0), InvalidValueError, ("0",)),
    ("harness-trigger-float", lambda: TaskHarness("abs").trigger(1.5), InvalidTypeError, ("1.5",)),
    # exploration and custom jobs
    ("explore-world", lambda: explore(wc()), InvalidTypeError, ("Job(",)),
    ("explore-max-states", lambda: explore(W, max_states=0), InvalidValueError, ("max_states", "not 0")),  # noqa: E501
    ("explore-max-depth", lambda: explore(W, max_depth=-2), InvalidValueError, ("-2",)),
    ("explore-crashes", lambda: explore(W, crashes="all"), InvalidTypeError, ("'all'",)),
    ("manual-chooser", lambda: ManualScheduler("me"), InvalidTypeError, ("'me'",)),
    ("hash-key", lambda: Hash("word"), GraphError, ("'word'",)),
    ("explore-external", lambda: explore(absnb.World(absnb.word_count(sink="two-phase-commit"))), GraphError, ("'sink'",)),  # noqa: E501
    ("custom-module", lambda: build_custom("no_such_module_xyz:job"), UnknownJobError, ("'no_such_module_xyz'",)),  # noqa: E501
    ("custom-function", lambda: build_custom("json:no_such_job"), UnknownJobError, ("'no_such_job'",)),  # noqa: E501
    ("custom-not-a-job", lambda: build_custom("os:getcwd"), UnknownJobError, ("'os:getcwd'",)),
    ("custom-spec", lambda: build_custom("json:"), UnknownJobError, ("'json:'",)),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "names"), [c[1:] for c in SIM], ids=[c[0] for c in SIM])
def test_simulator_api(
    call: Callable[[], Any], error: type[BaseException], names: tuple[str, ...]
) -> None:
    with pytest.raises(error) as caught:
        call()
    for name in names:
        assert name in str(caught.value), (name, str(caught.value))


# -- SparkRuntime.run ------------------------------------------------------------------------
class NoSpark:
    """A stand-in session: the slots of local[8], and nothing else (no job can start)."""

    class sparkContext:
        defaultParallelism = 8


def F(*args: Any, **kwargs: Any) -> Callable[[], Failure]:
    return lambda: Failure(*args, **kwargs)


def run(**kwargs: Any) -> Callable[[], Any]:
    def call() -> Any:
        from absnb.runtime.spark import SparkRuntime

        job = kwargs.pop("job", None) or absnb.word_count()
        hosts = kwargs.pop("hosts", None)
        where = str(Path(TMP) / "checkpoints")
        runtime = SparkRuntime(NoSpark(), checkpoint_dir=where, hosts=hosts)
        return runtime.run(job, **kwargs)

    return call


def runtime_at(checkpoint_dir: Any) -> Any:
    from absnb.runtime.spark import SparkRuntime

    return SparkRuntime(NoSpark(), checkpoint_dir=checkpoint_dir)


class LockedProtocol(AlignedProtocol):
    """Holds a lock: it cannot be pickled to the executors."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def handler(self, graph: Any, task: TaskId) -> Any:
        with self.lock:
            return super().handler(graph, task)


TMP = Path(__file__).parent  # replaced by a tmp path in the fixture below
OK = Failure("count[1]", after_records=1)

SPARK: list[Case] = [
    ("failure-unknown-task", run(failures=[Failure("count[9]", after_records=1)]), InvalidValueError, ("'count[9]'",)),  # noqa: E501
    ("failure-no-condition", F("count[1]"), InvalidValueError, ("'count[1]'", "no condition")),
    ("failure-attempt-neg", F("count[1]", after_records=1, attempt=-1), InvalidValueError, ("-1",)),
    ("failure-attempt-str", F("count[1]", after_records=1, attempt="0"), InvalidTypeError, ("'0'",)),  # noqa: E501
    ("failure-kind", F("count[1]", after_records=1, kind="explode"), InvalidValueError, ("'explode'",)),  # noqa: E501
    ("failure-after-neg", F("count[1]", after_records=-3), InvalidValueError, ("-3",)),
    ("failure-after-str", F("count[1]", after_records="3"), InvalidTypeError, ("'3'",)),
    ("failure-during-0", F("count[1]", during_checkpoint=0), InvalidValueError, ("0",)),
    ("failure-notified-0", F("sink[0]", notified=0), InvalidValueError, ("0",)),
    ("failure-two-conditions", F("count[1]", after_records=1, during_checkpoint=2), InvalidValueError, ("after_records=1", "during_checkpoint=2")),  # noqa: E501
    ("failure-after-commit", F("sink[0]", after_records=1, after_commit=True), InvalidValueError, ("'sink[0]'", "after_commit")),  # noqa: E501
    ("failure-after-commit-str", F("sink[0]", notified=1, after_commit="yes"), InvalidTypeError, ("'yes'",)),  # noqa: E501
    ("failure-empty-task", F("", after_records=1), InvalidTypeError, ("''",)),
    ("failure-task-id", F(3, after_records=1), InvalidTypeError, ("3",)),
    ("run-job-str", run(job="word_count"), InvalidTypeError, ("'word_count'",)),
    ("run-protocol", run(protocol="paxos"), UnknownProtocolError, ("'paxos'",)),
    ("run-protocol-int", run(protocol=3), InvalidTypeError, ("3",)),
    ("run-none-two-phase-commit", run(job=absnb.word_count(sink="two-phase-commit"), protocol="none"), ProtocolSettingError, ("protocol 'none'", "sink[0]")),  # noqa: E501
    ("run-protocol-class", run(protocol=AlignedProtocol), InvalidTypeError, ("class AlignedProtocol", "AlignedProtocol()")),  # noqa: E501
    ("run-protocol-handler", run(protocol=AlignedBarrierHandler), InvalidTypeError, ("LabProtocol(AlignedBarrierHandler)",)),  # noqa: E501
    ("run-protocol-lab-class", run(protocol=LabProtocol), InvalidTypeError, ("LabProtocol(...)",)),
    ("run-protocol-unpicklable", run(protocol=LockedProtocol()), InvalidValueError, ("cannot be pickled", "lock")),  # noqa: E501
    ("run-protocol-object-timeout", run(protocol=AlignedProtocol(), alignment_timeout=1.0), ProtocolSettingError, ("alignment_timeout=1.0",)),  # noqa: E501
    ("run-protocol-object-on-cycle", run(job=absnb.cyclic(), protocol=LabProtocol(AlignedBarrierHandler)), CyclicGraphError, ("'cyclic'",)),  # noqa: E501
    ("run-decline-cl-object", run(protocol=MarkerLabProtocol(ChandyLamportHandler), failures=[Failure("count[1]", during_checkpoint=1, kind="decline")]), InvalidValueError, ("chandy-lamport-lab",)),  # noqa: E501
    ("run-abs-on-cycle", run(job=absnb.cyclic(), protocol="abs"), CyclicGraphError, ("'cyclic'",)),
    ("run-interval-str", run(checkpoint_interval="1s"), InvalidTypeError, ("'1s'",)),
    ("run-interval-0", run(checkpoint_interval=0), InvalidValueError, ("not 0",)),
    ("run-interval-neg", run(checkpoint_interval=-1.5), InvalidValueError, ("-1.5",)),
    ("run-interval-nan", run(checkpoint_interval=float("nan")), InvalidTypeError, ("nan",)),
    ("run-interval-inf", run(checkpoint_interval=float("inf")), InvalidValueError, ("inf",)),
    ("run-failures-one", run(failures=OK), InvalidTypeError, ("Failure(task='count[1]'",)),
    ("run-failures-str", run(failures=["count[1]@3"]), InvalidTypeError, ("'count[1]@3'",)),
    ("run-max-restarts-neg", run(max_restarts=-1), InvalidValueError, ("-1",)),
    ("run-max-restarts-str", run(max_restarts="3"), InvalidTypeError, ("'3'",)),
    ("run-max-restarts-float", run(max_restarts=2.5), InvalidTypeError, ("2.5",)),
    ("run-tolerable-neg", run(tolerable_failed_checkpoints=-1), InvalidValueError, ("tolerable_failed_checkpoints", "-1")),  # noqa: E501
    ("run-tolerable-str", run(tolerable_failed_checkpoints="2"), InvalidTypeError, ("tolerable_failed_checkpoints", "'2'")),  # noqa: E501
    ("run-allow-deadlock", run(allow_deadlock="no"), InvalidTypeError, ("'no'",)),
    ("run-source-rate-0", run(source_rate=0), InvalidValueError, ("not 0",)),
    ("run-source-rate-neg", run(source_rate=-5), InvalidValueError, ("-5",)),
    ("run-source-rate-str", run(source_rate="fast"), InvalidTypeError, ("'fast'",)),
    ("run-min-pause-neg", run(min_pause=-0.5), InvalidValueError, ("min_pause", "-0.5")),
    ("run-min-pause-str", run(min_pause="1s"), InvalidTypeError, ("min_pause", "'1s'")),
    ("run-no-functions", run(job=graph_without_functions()), GraphError, ("'numbers'",)),
    ("run-failure-twice", run(failures=[OK, Failure("count[1]", after_records=5)]), InvalidValueError, ("two failures of count[1]",)),  # noqa: E501
    ("run-failure-attempt-late", run(failures=[Failure("count[1]", after_records=1, attempt=4)]), InvalidValueError, ("attempt=4", "max_restarts=3")),  # noqa: E501
    ("run-failure-attempt-alone", run(failures=[Failure("count[1]", after_records=1, attempt=1)]), InvalidValueError, ("attempt=1", "attempt 0")),  # noqa: E501
    ("run-decline-cl", run(protocol="chandy-lamport", failures=[Failure("count[1]", during_checkpoint=1, kind="decline")]), InvalidValueError, ("'chandy-lamport'",)),  # noqa: E501
    ("run-after-checkpoint-none", run(protocol="none", failures=[Failure("count[1]", after_checkpoint=2)]), InvalidValueError, ("'none' takes no checkpoints", "after_records")),  # noqa: E501
    ("run-restore-older", run(restore_older="yes"), InvalidTypeError, ("'yes'",)),
    ("runtime-checkpoint-dir-empty", lambda: runtime_at(""), InvalidValueError, ("checkpoint_dir is empty",)),  # noqa: E501
    ("runtime-checkpoint-dir-int", lambda: runtime_at(3), InvalidTypeError, ("3",)),
    ("run-hosts-0", run(hosts=0), InvalidValueError, ("hosts", "not 0")),
    ("run-hosts-str", run(hosts="2"), InvalidTypeError, ("'2'",)),
    ("run-inputs-dict", run(inputs={"a": 1}), SparkInputError, ("dict",)),
    ("run-too-big", run(job=absnb.word_count(sources=9)), Exception, ("9 tasks",)),
]  # fmt: skip


@pytest.fixture
def tmp_checkpoints(tmp_path: Path) -> None:
    global TMP
    TMP = tmp_path


@pytest.mark.usefixtures("tmp_checkpoints")
@pytest.mark.parametrize(
    ("call", "error", "names"), [c[1:] for c in SPARK], ids=[c[0] for c in SPARK]
)
def test_spark_run(
    call: Callable[[], Any], error: type[BaseException], names: tuple[str, ...]
) -> None:
    with pytest.raises(error) as caught:
        call()
    assert not isinstance(caught.value, AttributeError), "reached the (absent) Spark session"
    for name in names:
        assert name in str(caught.value), (name, str(caught.value))


def test_ports_are_checked_when_the_runtime_is_made(tmp_path: Path) -> None:
    from absnb.runtime.spark import SparkRuntime

    with pytest.raises(ValueError, match=r"range\(5, 5\)"):
        SparkRuntime(NoSpark(), checkpoint_dir=str(tmp_path), ports=range(5, 5))


# -- the command line ------------------------------------------------------------------------
def trace_file(tmp: Path, *lines: str) -> str:
    header = (
        '{"absnb": "trace", "version": 1, "job": "bank_transfer", "params": {"transfers": 0}, '
        '"protocol": "chandy-lamport"}'
    )
    path = tmp / "t.jsonl"
    path.write_text("\n".join([header, *lines]) + "\n")
    return str(path)


CLI: list[tuple[str, list[str], str]] = [
    ("job", ["run", "--job", "pizza"], "'pizza'"),
    ("protocol", ["run", "--protocol", "paxos"], "'paxos'"),
    ("interval-neg", ["run", "--interval", "-1"], "'-1'"),
    ("interval-word", ["run", "--interval", "often"], "'often'"),
    ("interval-fraction", ["run", "--interval", "2.5"], "2.5"),
    ("seed-neg", ["run", "--seed", "-1"], "'-1'"),
    ("seed-word", ["run", "--seed", "x"], "'x'"),
    ("crash-no-step", ["run", "--crash", "B"], "'B'"),
    ("crash-word-step", ["run", "--crash", "B@soon"], "'B@soon'"),
    ("crash-unknown-task", ["run", "--crash", "C@3"], "'C'"),
    ("crash-twice", ["run", "--crash", "B@3", "--crash", "B@5"], "--crash given twice (B@3, then B@5)"),  # noqa: E501
    ("seed-twice", ["run", "--seed", "1", "--seed", "2"], "--seed given twice"),
    ("spark-crash-twice", ["run", "--runtime", "spark", "--job", "word_count", "--crash", "count[0]@3", "--crash", "count[1]@9"], "--crash given twice"),  # noqa: E501
    ("transfers-huge", ["run", "--transfers", "1000000000"], "1,000,000,000"),
    ("parallelism-huge", ["run", "--job", "word_count", "--parallelism", "100000"], "100,000"),
    ("save-trace-empty", ["run", "--save-trace", ""], "--save-trace"),
    ("explore-save-trace-empty", ["explore", "--save-trace", " "], "--save-trace"),
    ("spark-input-empty", ["run", "--runtime", "spark", "--job", "word_count", "--input", ""], "--input"),  # noqa: E501
    ("accounts-colon", ["run", "--accounts", "A:10"], "'A:10'"),
    ("accounts-twice", ["run", "--accounts", "A=10,A=5"], "'A'"),
    ("accounts-one", ["run", "--accounts", "A=10"], "{'A': 10}"),
    ("transfers-neg", ["run", "--transfers", "-3"], "'-3'"),
    ("transfers-word", ["run", "--transfers", "many"], "'many'"),
    ("recovery", ["run", "--recovery", "half"], "'half'"),
    ("sink", ["run", "--job", "word_count", "--sink", "kafka"], "'kafka'"),
    ("sink-bank", ["run", "--sink", "collect"], "--sink"),
    ("parallelism-0", ["run", "--job", "word_count", "--parallelism", "0"], "'0'"),
    ("parallelism-bank", ["run", "--parallelism", "2"], "--parallelism"),
    ("transfers-wc", ["run", "--job", "word_count", "--transfers", "3"], "--transfers"),
    ("runtime", ["run", "--runtime", "flink"], "'flink'"),
    ("input-sim", ["run", "--job", "word_count", "--input", "x.txt"], "--input"),
    ("master-sim", ["run", "--master", "yarn"], "--master"),
    ("abs-on-cycle", ["run", "--job", "cyclic", "--protocol", "abs"], "'cyclic'"),
    ("custom-module", ["run", "--job", "no_such_module_xyz:job"], "'no_such_module_xyz'"),
    ("custom-not-a-job", ["run", "--job", "os:getcwd"], "'os:getcwd'"),
    ("custom-options", ["run", "--job", "os:getcwd", "--transfers", "2"], "--transfers"),
    ("spark-task", ["run", "--runtime", "spark", "--job", "word_count", "--crash", "count[9]@3"], "'count[9]'"),  # noqa: E501
    ("spark-recovery", ["run", "--runtime", "spark", "--recovery", "partial"], "partial"),
    ("spark-save-trace", ["run", "--runtime", "spark", "--save-trace", "t.jsonl"], "--save-trace"),
    ("spark-max-restarts", ["run", "--runtime", "spark", "--max-restarts", "-1"], "'-1'"),
    ("spark-tolerable", ["run", "--runtime", "spark", "--tolerable-failed-checkpoints", "x"], "'x'"),  # noqa: E501
    ("sim-tolerable", ["run", "--tolerable-failed-checkpoints", "2"], "--tolerable-failed-checkpoints"),  # noqa: E501
    ("spark-crash-kind", ["run", "--runtime", "spark", "--crash-kind", "melt"], "'melt'"),
    ("spark-input-bank", ["run", "--runtime", "spark", "--input", "x.txt"], "--input"),
    ("spark-protocol", ["run", "--runtime", "spark", "--protocol", "raft"], "'raft'"),
    ("replay-missing", ["replay", "no/such/file.jsonl"], "no/such/file.jsonl"),
    ("explore-checkpoints", ["explore", "--checkpoints", "-1"], "'-1'"),
    ("explore-max-states", ["explore", "--max-states", "0"], "'0'"),
    ("explore-max-depth", ["explore", "--max-depth", "deep"], "'deep'"),
    ("explore-job", ["explore", "--job", "pizza"], "'pizza'"),
    ("bench-scale", ["bench", "--scale", "0"], "'0'"),
    ("bench-repeats", ["bench", "--repeats", "0"], "'0'"),
    ("bench-only", ["bench", "--only", "fig9"], "'fig9'"),
    ("bench-storage-latency", ["bench", "--storage-latency", "slow"], "'slow'"),
    ("bench-min-pause", ["bench", "--min-pause", "-1"], "'-1'"),
    ("bench-scale-huge", ["bench", "--scale", "100000000"], "'100000000'"),
    ("replay-empty-path", ["replay", ""], "file"),
    ("command", ["jump"], "'jump'"),
]  # fmt: skip

TRACES: list[tuple[str, list[str], str]] = [
    ("trace-json", ["{not json"], "line 2"),
    ("trace-action", ['{"action": "jump"}'], "'jump'"),
    ("trace-channel", ['{"action": "deliver", "channel": "A->Q"}'], "A->Q"),
    ("trace-task", ['{"action": "crash", "task": "Q"}'], "'Q'"),
    ("trace-time", ['{"action": "trigger", "time": "soon"}'], "'soon'"),
    ("trace-time-neg", ['{"action": "trigger", "time": -2}'], "-2"),
    ("trace-mode", ['{"action": "crash", "task": "A"}', '{"action": "recover", "mode": "half"}'], "'half'"),  # noqa: E501
    ("trace-not-enabled", ['{"action": "deliver", "channel": "A->B"}'], "A->B"),
    ("trace-amount", ['{"action": "transfer", "src": "A", "dst": "B", "amount": 0}'], "0"),
    ("trace-transfer-missing", ['{"action": "transfer", "src": "A", "dst": "B"}'], "amount"),
]  # fmt: skip


def exits_2(capsys: pytest.CaptureFixture[str], argv: list[str], names: str) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    assert names in lines[0], lines[0]


@pytest.mark.parametrize(("argv", "names"), [c[1:] for c in CLI], ids=[c[0] for c in CLI])
def test_command_line(capsys: pytest.CaptureFixture[str], argv: list[str], names: str) -> None:
    exits_2(capsys, argv, names)


@pytest.mark.parametrize(("lines", "names"), [c[1:] for c in TRACES], ids=[c[0] for c in TRACES])
def test_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: list[str], names: str
) -> None:
    exits_2(capsys, ["replay", trace_file(tmp_path, *lines)], names)


def test_at_least_100_cases() -> None:
    assert len(SIM) + len(SPARK) + len(CLI) + len(TRACES) >= 100


@pytest.mark.usefixtures("tmp_checkpoints")
@pytest.mark.parametrize(
    "job", [graph_without_functions(), "word_count"], ids=["no-function", "a-name"]
)
def test_the_simulator_and_spark_refuse_a_job_alike(job: Any) -> None:
    """One job check for both runtimes: the same exception and the same message, but for
    the name of the call."""
    with pytest.raises(AbsnbError) as in_sim:
        absnb.World(job)
    with pytest.raises(AbsnbError) as on_spark:
        run(job=job)()
    assert type(in_sim.value) is type(on_spark.value)
    sim_text = str(in_sim.value).replace("World", "<call>")
    assert sim_text == str(on_spark.value).replace("SparkRuntime.run", "<call>")
