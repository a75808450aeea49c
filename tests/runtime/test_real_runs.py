"""The ready-made real runs of the notebooks show, in every run, what their cells claim."""

from __future__ import annotations

import pytest

from absnb.experiments import real_runs
from absnb.runtime.spark import SparkRuntime


@pytest.fixture(scope="module")
def rt(spark, tmp_path_factory):
    return SparkRuntime(spark, checkpoint_dir=str(tmp_path_factory.mktemp("checkpoints")))


def test_an_aligned_run_blocks_a_channel_and_its_cuts_are_consistent(rt) -> None:
    r = real_runs.aligned_run(rt=rt)
    assert r.facts["blocked"]
    assert r.facts["completed"]
    assert r.facts["cut_problems"] == []
    began, ended = r.facts["window"]
    svg = r.show(window=(began, ended)).svg
    assert f"checkpoint {r.facts['shown']}" in svg
    assert 'stroke-dasharray="3 2"' in svg  # an alignment band, drawn


def test_a_crash_after_checkpoint_2_restores_checkpoint_2(rt) -> None:
    r = real_runs.crash_run(after_checkpoint=2, rt=rt)
    assert r.facts["failed_task"] == "count[1]"
    assert 2 in r.facts["completed_before"]
    assert r.facts["restored"] >= 2
    assert r.facts["cut_problems"] == []


def test_two_phase_commit_phases_on_the_real_timeline(rt, tmp_path) -> None:
    r = real_runs.two_phase_commit_run(str(tmp_path / "out"), rt=rt)
    f = r.facts
    assert f["pre_commits"]
    for n, at in f["pre_commits"].items():
        assert at == pytest.approx(f["snapshots"][n], abs=0.01)  # pre-commit at the snapshot
        if n in f["commits"]:
            assert f["completed"][n] <= f["commits"][n]  # commit once notified
    assert f["aborted"]
    assert f["committed_on_restore"]
    assert f["exactly_once"]


def test_unaligned_barriers_overtake_where_aligned_ones_block(rt) -> None:
    unaligned, aligned = real_runs.unaligned_beside_aligned(rt=rt)
    assert unaligned.facts["overtaken"] > 0
    assert unaligned.facts["blocks"] == 0
    assert aligned.facts["blocks"] > 0
    # Paced, both sources were still reading when the first checkpoint reached them.
    df = aligned.run.events
    first = df[df.kind == "triggered"].time.min()
    ended = df[(df.kind == "end_of_input") & df.channel.str.startswith("source")]
    assert (ended.time > first).all()
    assert unaligned.facts["cut_problems"] == aligned.facts["cut_problems"] == []
