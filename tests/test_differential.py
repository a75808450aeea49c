"""One protocol, three runtimes: the same arrival order at one task gives the same protocol
events in the simulator (:class:`absnb.World`), the one-task harness
(:class:`absnb.harness.TaskHarness`) and the Spark host (:class:`absnb.runtime.host.host.Host`,
driven without Spark or sockets through the entry its data plane uses).

The task under test is the harness's: inputs ``in0``, ``in1`` -> ``task`` -> ``out``, the
task the identity or a count that it sends when its input ends (the task kernel ends the
input, :meth:`~absnb.task.StreamTask.end_input`, in every runtime). A script pushes
records, barriers, cancellation markers and ends of input on the inputs, with the
coordinator's notifications and aborts, and time passing, between them; what arrives on a
blocked input waits; ``process`` consumes what can be consumed: a
priority event first (under unaligned checkpoints, a barrier: it overtakes the records
queued before it on its channel, FLIP-76; a cancellation marker never overtakes, as in
Flink), else the oldest arrival. On Spark the inputs' tasks live on a second host, whose
sends cross a stand-in for the data plane (:mod:`tests.differential.host`; priority
frames through :func:`absnb.runtime.data_plane.priority.received`) into the task's host, which takes
them as its loop does (:meth:`Host._receive`: its inbox, priority events between two
pieces, the announcements it keeps). Under an alignment timeout every runtime keeps its
own clock (steps, seconds, the harness's counter) and asks the one rule
(:mod:`absnb.protocols.alignment_timer`) when a checkpoint is overdue: a ``tick`` moves
every clock on by the timeout, after which the task switches and late barriers overtake.
Each runtime (:mod:`tests.differential.drivers`) carries the script out its own way and
reports what the task did, in order: blocks, unblocks, snapshots (with the in-flight
records they recorded, i.e. the records a barrier overtook), what it sent on (records,
barriers, markers, cancellation markers, its end) and what it declined.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from absnb.core.messages import (
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfInput,
    Marker,
    Record,
)
from tests.differential.drivers import INPUTS, OPERATORS, TIMEOUT, HarnessDriver, SimDriver
from tests.differential.host import HostDriver

MODES: dict[str, tuple[str, float | None]] = {
    "abs": ("abs", None),
    "abs-cyclic": ("abs-cyclic", None),
    "chandy-lamport": ("chandy-lamport", None),
    "synchronous": ("synchronous", None),
    "at-least-once": ("at-least-once", None),
    "unaligned": ("unaligned", None),
    "abs-timeout": ("abs", TIMEOUT),  # far more than the steps a script takes: only ticks
}

Step = tuple[Any, ...]
"""``("push", input, value)``, ``("barrier", input, n)``, ``("cancel", input, n)``,
``("end", input)``, ``("process",)``, ``("tick",)`` (time passes: the timeout),
``("complete", n)``, ``("abort", n)``."""


def _message(protocol_name: str, n: int) -> CheckpointBarrier | Marker:
    return Marker(n) if protocol_name == "chandy-lamport" else CheckpointBarrier(n)


# -- scripts ----------------------------------------------------------------------------------
def play(
    script: list[Step], mode: str, tmp: str, operator: str = "identity"
) -> dict[str, list[Any]]:
    """Run ``script`` through the three runtimes, ``operator`` (a name of
    :data:`~tests.differential.drivers.OPERATORS`) the task under test; what each showed
    after every step."""
    protocol, timeout = MODES[mode]
    drivers: dict[str, Any] = {
        "simulator": SimDriver(protocol, timeout, operator),
        "harness": HarnessDriver(protocol, timeout, operator),
        "host": HostDriver(protocol, timeout, tmp, operator),
    }
    shows: dict[str, list[Any]] = {name: [] for name in drivers}
    for step in script:
        for name, d in drivers.items():
            _step(d, step, protocol)
            shows[name].append((step, d.signature()))
    return shows


def _step(d: Any, step: Step, protocol: str) -> None:
    kind = step[0]
    if kind == "push":
        d.push(step[1], Record(step[2], 0))
    elif kind == "barrier":
        d.push(step[1], _message(protocol, step[2]))
    elif kind == "cancel":
        d.push(step[1], CancelCheckpointMarker(step[2]))
    elif kind == "end":
        d.push(step[1], EndOfInput())
    elif kind == "process":
        d.process()
    elif kind == "tick":
        d.tick()
    elif kind == "complete":
        d.run(lambda task, out: task.checkpoint_complete(step[1], out))
    elif kind == "abort":
        d.run(lambda task, out: task.checkpoint_aborted(step[1], out))


@st.composite
def scripts(draw: Any, mode: str) -> list[Step]:
    """A script: arrivals on the inputs (records; on each input the checkpoints' barriers in
    order, 1, 2, ..., some replaced by a cancellation marker; an end), with ``process``
    steps, the coordinator's aborts and (``abs-timeout``) time passing between."""
    script: list[Step] = []
    ended: set[str] = set()
    checkpoint = dict.fromkeys(INPUTS, 0)
    value = 0
    kinds = ["push", "push", "barrier", "process", "process", "end", "abort"]
    kinds += ["cancel"] if mode != "chandy-lamport" else []
    kinds += ["tick", "tick"] if mode == "abs-timeout" else []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(kinds))
        live = [n for n in INPUTS if n not in ended]
        if kind in ("push", "barrier", "cancel", "end") and live:
            name = draw(st.sampled_from(live))
            if kind == "push":
                value += 1
                script.append(("push", name, value))
            elif kind == "end":
                ended.add(name)
                script.append(("end", name))
            else:
                checkpoint[name] += 1
                script.append((kind, name, checkpoint[name]))
        elif kind == "abort":
            script.append(("abort", draw(st.integers(1, 3))))
        elif kind in ("process", "tick"):
            script.append((kind,))
    script.append(("process",))
    return script


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("operator", list(OPERATORS))
@pytest.mark.parametrize("mode", list(MODES))
@SETTINGS
@given(data=st.data())
def test_the_same_arrivals_give_the_same_protocol_events(mode, operator, data, tmp_path) -> None:
    script = data.draw(scripts(mode))
    shows = play(script, mode, str(tmp_path), operator)
    assert shows["host"] == shows["simulator"]
    assert shows["harness"] == shows["simulator"]


def test_a_late_barrier_of_an_overdue_checkpoint_overtakes_before_time_passes(tmp_path) -> None:
    # Checkpoint 2 is overdue after the first tick; in1's barrier 2 arrives after it (behind
    # the cancellation of 1), and in0's barrier 3 just before. When time passes again, what
    # was due first happens first, as a host delivers a barrier when it sees it due: barrier
    # 2 overtakes and completes checkpoint 2 (record 1 in flight on in0), then barrier 3,
    # overdue only after the tick, overtakes. (Hypothesis found the simulator and the
    # harness letting barrier 3 go first, declining 2, where the host did not.)
    script: list[Step] = [
        ("push", "in0", 1),
        ("barrier", "in0", 1),
        ("barrier", "in0", 2),
        ("tick",),
        ("cancel", "in1", 1),
        ("push", "in0", 2),
        ("barrier", "in0", 3),
        ("barrier", "in1", 2),
        ("tick",),
        ("process",),
    ]
    shows = play(script, "abs-timeout", str(tmp_path))
    sent, snapshots, declined, _ = shows["simulator"][-2][1]
    assert sent == (("sent", CheckpointBarrier(3)),)
    assert snapshots == (("snapshot", 2, (("in0", (1,)),)),)
    assert declined == ()
    assert shows["host"] == shows["simulator"] == shows["harness"]


@pytest.mark.parametrize("mode", list(MODES))
def test_a_task_whose_inputs_end_sends_what_its_end_of_input_emits(mode, tmp_path) -> None:
    # The task kernel ends the input when the end of its last input is consumed: the
    # operator's end_input runs once, in every runtime, and its count is the last thing
    # the task sends (a checkpoint before it, the records, in whatever order the mode
    # gives them, all before).
    script: list[Step] = [
        ("push", "in0", 1),
        ("barrier", "in0", 1),
        ("push", "in1", 2),
        ("barrier", "in1", 1),
        ("end", "in0"),
        ("process",),
        ("push", "in1", 3),
        ("end", "in1"),
        ("process",),
    ]
    shows = play(script, mode, str(tmp_path), "final-count")
    sent = [e for _, (s, *_) in shows["simulator"] for e in s]
    assert sent[-2:] == [("record", 3), ("record", ("count", 3))]
    assert sorted(v for k, v in sent[:-2] if k == "record") == [1, 2]
    assert [k for k, _ in sent].count("sent") == 1  # checkpoint 1's barrier or marker
    assert shows["simulator"][-1][1][1] == ()  # no snapshot after the end
    assert shows["host"] == shows["simulator"] == shows["harness"]


@pytest.mark.parametrize("mode", [m for m in MODES if m != "chandy-lamport"])
def test_a_cancellation_marker_never_overtakes_records(mode, tmp_path) -> None:
    # Flink broadcasts a CancelCheckpointMarker as a non-priority event, in every mode: the
    # task forwards it after the records queued before it, in all three runtimes. Under
    # unaligned checkpoints a barrier queued behind it overtakes it with the records, and
    # the marker of the checkpoint the barrier's newer one replaced is ignored after.
    script: list[Step] = [("push", "in0", 1), ("cancel", "in0", 1), ("process",)]
    shows = play(script, mode, str(tmp_path))
    sent = (("record", 1), ("sent", CancelCheckpointMarker(1)))
    assert shows["simulator"][-1][1][0] == sent
    assert shows["host"] == shows["simulator"] == shows["harness"]
    script = [("push", "in0", 1), ("cancel", "in0", 1), ("push", "in0", 2)]
    script += [("barrier", "in0", 2), ("process",)]
    shows = play(script, "unaligned", str(tmp_path))
    sent = (("sent", CheckpointBarrier(2)), ("record", 1), ("record", 2))
    assert shows["simulator"][-1][1][0] == sent
    assert shows["host"] == shows["simulator"] == shows["harness"]


def test_a_barrier_overtakes_older_arrivals_on_other_inputs(tmp_path) -> None:
    # A priority event is taken as it arrives (the host's priority lane), ahead of what
    # came before it on any input.
    script: list[Step] = [("push", "in1", 1), ("push", "in0", 2), ("barrier", "in0", 1)]
    shows = play([*script, ("process",)], "unaligned", str(tmp_path))
    sent = (("sent", CheckpointBarrier(1)), ("record", 1), ("record", 2))
    assert shows["simulator"][-1][1][0] == sent
    assert shows["host"] == shows["simulator"] == shows["harness"]


def test_a_barrier_that_arrives_between_two_pieces_of_a_batch_overtakes_the_rest(
    tmp_path,
) -> None:
    # On Spark in0's 100 records come as one frame; the host delivers a piece of 64 and
    # looks at its priority lane (runtime/host/inbox.py), where checkpoint 1's barrier has come
    # meanwhile: it overtakes the 36 records the host still holds. The simulator, given
    # the same arrival order (64 records consumed, then the barrier behind 36 more), agrees.
    host = HostDriver("unaligned", None, str(tmp_path))
    host.push_batch("in0", list(range(1, 101)))
    host.plane.arriving.append(lambda: host.push("in0", CheckpointBarrier(1)))
    host.process()
    sim = SimDriver("unaligned", None)
    for v in range(1, 101):
        sim.push("in0", Record(v, 0))
        if v == 64:
            sim.process()
    sim.push("in0", CheckpointBarrier(1))
    sim.process()
    for d in (host, sim):
        d.push("in1", CheckpointBarrier(1))
        d.process()
    shows = host.signature()
    assert shows == sim.signature()
    records = [("record", v) for v in range(1, 101)]
    assert shows[0] == (*records[:64], ("sent", CheckpointBarrier(1)), *records[64:])
    assert shows[1] == (("snapshot", 1, (("in0", tuple(range(65, 101))),)),)


def test_a_script_shows_blocks_snapshots_forwarded_barriers_and_overtaken_records(
    tmp_path,
) -> None:
    # The comparison has something to compare: an aligned checkpoint blocks and forwards,
    # an unaligned one records the records its barrier overtook.
    script: list[Step] = [
        ("push", "in0", 1),
        ("barrier", "in0", 1),
        ("push", "in0", 2),
        ("process",),
        ("push", "in1", 3),
        ("barrier", "in1", 1),
        ("process",),
    ]
    shows = play(script, "abs", str(tmp_path))
    assert shows["simulator"][3][1] == ((("record", 1),), (), (), ("in0",))
    assert shows["simulator"][6][1] == (
        (("record", 3), ("sent", CheckpointBarrier(1)), ("record", 2)),
        (("snapshot", 1, ()),),
        (),
        (),
    )
    assert shows["host"] == shows["simulator"] == shows["harness"]
    script = [("push", "in0", 1), ("push", "in0", 2), ("barrier", "in0", 1), ("process",)]
    shows = play(script, "unaligned", str(tmp_path))
    assert shows["simulator"][-1][1][:2] == (
        (("sent", CheckpointBarrier(1)), ("record", 1), ("record", 2)),
        (),  # acknowledged once in1's barrier has come too
    )
    script += [("barrier", "in1", 1), ("process",)]
    shows = play(script, "unaligned", str(tmp_path))
    assert shows["simulator"][-1][1][1] == (("snapshot", 1, (("in0", (1, 2)),)),)
    assert shows["host"] == shows["simulator"] == shows["harness"]


def test_a_tick_makes_a_late_barrier_overtake_and_the_task_switch_in_every_runtime(
    tmp_path,
) -> None:
    # The one rule of protocols/alignment_timer.py, on three clocks: before the tick the
    # barrier waits behind the records; once its checkpoint is overdue it overtakes them
    # and the task switches to unaligned, recording them as in0's channel state.
    script: list[Step] = [
        ("push", "in0", 1),
        ("push", "in0", 2),
        ("barrier", "in0", 1),
        ("tick",),
        ("barrier", "in1", 1),
        ("process",),
    ]
    shows = play(script, "abs-timeout", str(tmp_path))
    assert shows["simulator"][3][1] == ((("sent", CheckpointBarrier(1)),), (), (), ())
    assert shows["simulator"][5][1][1] == (("snapshot", 1, (("in0", (1, 2)),)),)
    assert shows["host"] == shows["simulator"] == shows["harness"]
    before = play([*script[:3], ("process",)], "abs-timeout", str(tmp_path))
    assert before["simulator"][3][1] == ((("record", 1), ("record", 2)), (), (), ("in0",))


def test_a_barrier_announced_after_its_alignment_timed_out_overtakes_a_queued_cancellation(
    tmp_path,
) -> None:
    # Checkpoint 1 times out at the task with in1 aligned (a cancellation of 2 queued behind
    # its barrier); then in0's barrier 1 comes. Its announcement reaches the host before
    # the cancellation is taken, so it overtakes it, as the simulator serves it at once: the
    # snapshot of 1 is taken, then 2's cancellation forwarded. (The host used to take the
    # cancellation first, aborting 1.)
    script: list[Step] = [
        ("barrier", "in1", 1),
        ("cancel", "in1", 2),
        ("process",),
        ("tick",),
        ("barrier", "in0", 1),
        ("process",),
    ]
    for operator in OPERATORS:
        shows = play(script, "abs-timeout", str(tmp_path), operator)
        last = shows["simulator"][-1][1]
        assert last[:2] == ((("sent", CancelCheckpointMarker(2)),), (("snapshot", 1, ()),))
        assert shows["host"] == shows["simulator"] == shows["harness"]
