"""Beyond one machine: word count with executors in separate JVMs, on ``local-cluster``
and on a Spark standalone master with two workers started on loopback.

The cluster needs its own SparkSession, and a JVM holds one SparkContext, which the
shared test session already is; so the job runs in a child process (this file run with
``python -m``), in a process group of its own that is killed at the end, JVMs included. The
child runs on both masters, one after the other (a context stopped, the next started in the
same driver JVM), so that one Python and one driver JVM start for the two. The standalone
master and workers run in process groups of their own too. The oracle is computed by the
shared session on the same text file.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.jvm import FAST_JVM  # every JVM here: master, workers, driver, executors

MASTER = "local-cluster[2,1,1024]"
"""Two workers of one core and 1 GB each: two executor JVMs, two task slots."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def standalone_cluster(directory: Path, workers: int = 2) -> Iterator[str]:
    """A Spark standalone master and ``workers`` workers of one core and 1 GB on loopback,
    from the pip pyspark's ``spark-class``; yields the master URL, kills them all after."""
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    env = dict(os.environ, SPARK_HOME=home, JAVA_TOOL_OPTIONS=FAST_JVM)
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    java = [os.path.join(home, "bin", "spark-class")]
    commands = [
        [
            *java,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(free_port()),
        ],
    ]
    for i in range(workers):
        work = directory / f"worker-{i}"
        work.mkdir()
        commands.append(
            [
                *java,
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(work),
                url,
            ]
        )
    procs = []
    try:
        for i, command in enumerate(commands):
            with open(directory / f"daemon-{i}.log", "wb") as log:
                procs.append(
                    subprocess.Popen(
                        command,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
                )
            if i == 0:  # the workers register with a master that is up
                deadline = time.monotonic() + 60
                while not _listening(port):
                    assert time.monotonic() < deadline, "the standalone master did not start"
                    assert procs[0].poll() is None, (directory / "daemon-0.log").read_text()
                    time.sleep(0.2)
        yield url
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


MASTERS = ("local-cluster", "standalone")


@pytest.fixture(scope="module")
def cluster_runs(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The child's run on each of :data:`MASTERS` (a cluster with two executor JVMs of one
    core each), by name, with the master URL it was given and the oracle's answer."""
    from absnb import datasets
    from absnb.runtime.spark import word_count_answer_from

    tmp = tmp_path_factory.mktemp("cluster")
    lines = [line for part in datasets.text_partitions("large") for line in part]
    text = tmp / "lines.txt"
    text.write_text("\n".join(lines * 5) + "\n", encoding="utf-8")
    checkpoints, written = tmp / "checkpoints", tmp / "result.json"
    with standalone_cluster(tmp_path_factory.mktemp("standalone")) as url:
        urls = dict(zip(MASTERS, (MASTER, url), strict=True))
        with cluster_run(list(urls.values()), text, checkpoints, written) as result:
            # the oracle, while the child's JVMs start
            answer = word_count_answer_from(spark, text)
    return {name: {"url": urls[name], "answer": answer, **result[urls[name]]} for name in MASTERS}


@pytest.mark.parametrize("master", MASTERS)
def test_exactly_once_with_executors_in_separate_jvms(cluster_runs, master) -> None:
    result = cluster_runs[master]
    assert "error" not in result, result["error"]
    answer = result["answer"]
    assert result["master"] == result["url"]
    assert result["executors"] == 2
    # the hosts ran in two Python workers of two JVMs, neither of them the driver's
    assert len(set(result["worker_jvms"])) == 2
    assert result["driver_jvm"] not in result["worker_jvms"]
    assert result["restarts"] == 2, result["errors"]
    assert result["restored"][:2] == [0, 1]
    output = sorted((w, n) for w, n in result["output"])
    assert output == sorted((w, i) for w, n in answer.items() for i in range(1, n + 1))


RUN_LIMIT = 170.0
"""Seconds the child may take a master before its process group is killed (the child runs
in a module's fixture, which the conftest's hung-test guard does not time)."""


@contextlib.contextmanager
def cluster_run(masters: list[str], text: Path, checkpoints: Path, result: Path) -> Iterator[dict]:
    """Run this file (``python -m``) in a new process group while the block runs; on leaving
    the block, wait for it, kill the group (so that no driver or executor JVM outlives the
    test, even on a timeout) and fill the dict yielded with the script's result: each
    master's, by its URL."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env["JAVA_TOOL_OPTIONS"] = FAST_JVM
    module = "tests.runtime.test_cluster"  # run from the repository's root, as pytest is
    args = [sys.executable, "-m", module, str(text), str(checkpoints), str(result), *masters]
    log = result.with_suffix(".log")
    outcome: dict[str, Any] = {}
    deadline = time.monotonic() + RUN_LIMIT * len(masters)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            cwd=Path(__file__).parents[2],
        )
        code = None
        try:
            yield outcome
            code = proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            pass
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    tail = log.read_text(errors="replace")[-3000:]
    assert code == 0, f"the cluster run {'timed out' if code is None else 'failed'}:\n{tail}"
    outcome.update(json.loads(result.read_text()))


def main(text: str, checkpoints: str, result: str, *masters: str) -> None:
    """The child process: :func:`run_on` each of ``masters`` in turn, the results (or the
    error) written to ``result`` as JSON, by master URL."""
    import traceback

    results: dict[str, Any] = {}
    for i, master in enumerate(masters):
        try:
            results[master] = run_on(master, text, os.path.join(checkpoints, str(i)))
        except Exception:
            results[master] = {"error": traceback.format_exc()}
    Path(result).write_text(json.dumps(results))


def run_on(master: str, text: str, checkpoints: str) -> dict[str, Any]:
    """A session on ``master``, then word count on ``text`` with a raise during checkpoint 2
    and then a SIGKILL; the session is stopped after (the next master's starts in this JVM)."""
    import absnb
    from absnb.runtime import Failure
    from absnb.runtime.spark import SparkRuntime, default_session

    started = time.monotonic()
    phases: dict[str, float] = {}
    spark = default_session(master)
    sc = spark.sparkContext
    phases["session"] = time.monotonic() - started
    try:
        deadline = time.monotonic() + 120
        while sc._jsc.sc().getExecutorIds().size() < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        phases["executors"] = time.monotonic() - started

        def jvm_of_worker(_rows: Any) -> Any:
            with open(f"/proc/{os.getppid()}/stat") as f:  # the worker's daemon
                yield int(f.read().rsplit(")", 1)[1].split()[1])  # the daemon's parent

        jvms = sc.parallelize(range(2), 2).barrier().mapPartitions(jvm_of_worker).collect()
        phases["probe"] = time.monotonic() - started
        failures = [
            Failure("count[0]", during_checkpoint=2, kind="raise"),
            Failure("source[1]", after_records=1_500, kind="kill", attempt=1),
        ]
        run = SparkRuntime(spark, checkpoint_dir=checkpoints).run(
            absnb.word_count(sources=2),
            "abs",
            checkpoint_interval=0.05,
            failures=failures,
            inputs=text,
            source_rate=10_000,  # 5,000 lines a source: checkpoints happen during the run
        )
        phases["run"] = time.monotonic() - started
        return {
            "master": sc.master,
            "executors": sc._jsc.sc().getExecutorIds().size(),
            "worker_jvms": jvms,
            "driver_jvm": sc._gateway.proc.pid,
            "restarts": run.restarts,
            "restored": run.restored,
            "errors": run.errors,
            "output": run.output,
            "seconds": run.seconds,
            "phases": phases,
        }
    finally:
        spark.stop()
        print(f"{master}: phases (s since start): {phases}, stopped at", end=" ")
        print(f"{time.monotonic() - started:.1f}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
