"""Where checkpoint storage keeps a job's files: keys, checkpoint directories, completeness."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from absnb.core.ids import TaskId
from absnb.runtime.storage.format import task_label
from absnb.runtime.storage.fs import LocalFS, decode_name
from absnb.runtime.storage.layout import MANIFEST, SUFFIX, StorageLayout

NAMES = st.text(min_size=1, max_size=20)


@given(job=NAMES, operator=NAMES, checkpoint=st.integers(0, 10**6))
def test_a_key_names_the_job_the_checkpoint_and_the_task(
    job: str, operator: str, checkpoint: int
) -> None:
    task = TaskId(operator, 1, 2)
    key = StorageLayout(LocalFS(), "/root").key(job, checkpoint, task)
    job_dir, checkpoint_dir, file = key.split("/")  # no name adds a separator
    assert decode_name(job_dir) == job
    assert checkpoint_dir == f"chk-{checkpoint}"
    assert file.endswith(SUFFIX)
    assert decode_name(file[: -len(SUFFIX)]) == task_label(task)


@pytest.mark.parametrize("bad", ["", 3, None])
def test_a_job_id_must_be_a_non_empty_string(bad: object) -> None:
    with pytest.raises(ValueError, match="job id must be a non-empty string"):
        StorageLayout(LocalFS(), "/root").job_path(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, True, 1.0])
def test_a_checkpoint_id_must_be_a_non_negative_int(bad: object) -> None:
    with pytest.raises(ValueError, match="checkpoint id must"):
        StorageLayout(LocalFS(), "/root").checkpoint_path("job", bad)  # type: ignore[arg-type]


def test_only_checkpoint_directories_count_and_only_a_manifest_completes_one(tmp_path) -> None:
    layout = StorageLayout(LocalFS(), str(tmp_path))
    for name in ("chk-10", "chk-2", "chk-x", "chk-3.tmp", "other"):
        os.makedirs(os.path.join(layout.job_path("job"), name))
    assert layout.checkpoint_ids("job") == [2, 10]
    assert not layout.is_complete("job", 10)
    with open(os.path.join(layout.checkpoint_path("job", 10), MANIFEST), "w") as f:
        f.write("{}")
    assert layout.is_complete("job", 10)
    assert layout.manifest_path("job", 10) == os.path.join(tmp_path, "job", "chk-10", MANIFEST)
