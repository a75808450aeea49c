"""Checkpoint storage away from local disk: a real S3-compatible server (moto's, on
localhost, through s3fs), and the write-latency model of a remote store."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import pytest

from absnb.core.errors import InvalidTypeError, InvalidValueError
from absnb.core.ids import TaskId
from absnb.core.snapshot import TaskSnapshot
from absnb.runtime.storage.checkpoints import CheckpointStorage
from tests.runtime.test_incremental_storage import JOB, Driver


def test_every_durable_write_waits_the_modelled_latency(tmp_path: Path) -> None:
    storage = CheckpointStorage(tmp_path, write_latency=0.2)
    task = TaskId("t")
    began = time.monotonic()
    storage.write_task(JOB, TaskSnapshot(task, 1, state={"a": 1}))
    written = time.monotonic()
    storage.complete(JOB, 1, [task], fingerprint="fp", protocol="abs")
    completed = time.monotonic()
    assert storage.latest(JOB) is not None
    read = time.monotonic()
    assert written - began >= 0.2  # the task's snapshot
    assert completed - written >= 0.2  # the manifest
    assert read - completed < 0.2  # reads are the backend's own
    copy = pickle.loads(pickle.dumps(storage))  # as shipped to the Spark hosts
    assert copy.write_latency == 0.2
    assert "write_latency=0.2" in repr(copy)


@pytest.mark.parametrize("latency", [-0.1, float("inf"), float("nan")])
def test_a_latency_that_is_no_duration_is_refused(tmp_path: Path, latency: float) -> None:
    with pytest.raises((InvalidValueError, InvalidTypeError), match="write_latency"):
        CheckpointStorage(tmp_path, write_latency=latency)


@pytest.fixture(scope="module")
def s3_bucket(tmp_path_factory: pytest.TempPathFactory):
    """A bucket on a local S3 server (moto), reached as s3:// through s3fs."""
    pytest.importorskip("s3fs")
    server_module = pytest.importorskip("moto.server")
    mp = pytest.MonkeyPatch()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        }.items():
            mp.setenv(name, value)
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()
        s3fs.S3FileSystem().mkdir("checkpoints")
        yield "s3://checkpoints"
    finally:
        mp.undo()
        server.stop()


def test_incremental_chains_on_a_local_s3_server(s3_bucket: str) -> None:
    driver = Driver(Path("unused"), retain=1)
    driver.storage = CheckpointStorage(f"{s3_bucket}/run", retain=1)
    driver.update([(k, 1) for k in range(200)])
    driver.checkpoint()
    for i in range(3):
        driver.update([(i, 1)])
        driver.checkpoint()
    assert driver.storage.checkpoints(JOB) == [1, 2, 3, 4]  # 4 builds on 3, 2 and 1
    assert driver.restored() == (4, driver.truth[4])
