"""absnb against the engines a user would pick instead, on the same word count.

    python3 benchmarks/peers/run.py [--words 10000000] [--rounds 3] [--engines ...]

Installs Bytewax and PyFlink each into its own virtual environment (under
``--venvs``, default ``~/.cache/absnb-peers``; pinned versions, PyPI), generates one corpus
(``--words`` words of a 12,086-word English sample, in 4 text files), then runs the word
count on every engine in rounds, interleaved (absnb, PyFlink, Bytewax, absnb, ...), each
engine without snapshots and with snapshots every 1 s and 0.1 s. Every engine has the same
output semantics: a running count per word, one update ``(word, count so far)`` for every
word read, none pre-aggregated (absnb's ``KeyedCount``, PyFlink's streaming ``GROUP BY``
without mini-batches, Bytewax's ``stateful_map``):

- absnb: ``SparkRuntime(master="local[2]").run(word_count(sources=2, counters=2,
  sinks=2, sink=FinalCountSink()), "abs", checkpoint_interval=..., inputs=DIR)``, after a
  warm-up run in the same session; the whole call is timed.
- PyFlink (Table API, SQL): parallelism 2, aligned exactly-once checkpoints to the file
  system; after a warm-up job in the same JVM; ``execute_sql(...).wait()`` is timed.
- Bytewax: two processes of one worker each (two cores), recovery on (``-r``, snapshot
  interval ``-s``); the whole command is timed (its start-up is well under a second).

Prints words/s per engine and mode (medians over rounds), the checkpoint overhead paired
per round (the run with snapshots over the run without, in the same round), and absnb's
throughput over each peer's. Every engine's counts are checked against the corpus.
Not run in CI: it downloads about 600 MB and takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PINS = {"bytewax": ["bytewax==0.21.1"], "pyflink": ["apache-flink==2.3.0"]}
MODES = ("none", "1.0", "0.1")


def venv(venvs: Path, name: str) -> Path:
    """The Python of engine ``name``'s virtual environment, created and installed once."""
    python = venvs / name / "bin" / "python"
    marker = venvs / name / "installed.txt"
    if not marker.exists() or marker.read_text() != " ".join(PINS[name]):
        print(f"installing {' '.join(PINS[name])} into {venvs / name} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venvs / name)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PINS[name]], check=True)
        marker.write_text(" ".join(PINS[name]))
    return python


def corpus(words: int, where: Path) -> tuple[int, int]:
    """``words`` words in 4 files under ``where``; returns (words, distinct words)."""
    sys.path.insert(0, str(ROOT))
    from absnb import datasets

    lines = [line for part in datasets.text_partitions("large") for line in part]
    where.mkdir(parents=True, exist_ok=True)
    files = [open(where / f"part-{i}.txt", "w") for i in range(4)]  # noqa: SIM115
    written, distinct, i = 0, set(), 0
    while written < words:
        line = lines[i % len(lines)].split()[: words - written]
        files[i % 4].write(" ".join(line) + "\n")
        written += len(line)
        distinct.update(line)
        i += 1
    for f in files:
        f.close()
    return written, len(distinct)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bytewax(python: Path, data: Path, mode: str, scratch: Path) -> dict:
    """One Bytewax run: two processes, recovery on unless ``mode`` is none."""
    out = scratch / f"bw-{time.monotonic_ns()}"
    recovery: list[str] = []
    if mode != "none":
        db = scratch / f"bw-recovery-{time.monotonic_ns()}"
        db.mkdir()
        subprocess.run([str(python), "-m", "bytewax.recovery", str(db), "1"], check=True)
        recovery = [str(db), mode]
    addresses = ";".join(f"127.0.0.1:{_port()}" for _ in range(2))
    began = time.monotonic()
    procs = [
        subprocess.Popen(
            [str(python), "bytewax_wc.py", str(data), str(out), str(i), addresses, *recovery],
            cwd=HERE,
        )
        for i in range(2)
    ]
    if any(p.wait() != 0 for p in procs):
        raise RuntimeError(f"bytewax failed in mode {mode}")
    seconds = time.monotonic() - began
    counts: dict[str, int] = {}
    for part in scratch.glob(f"{out.name}.*.json"):
        for word, n in json.loads(part.read_text()).items():
            counts[word] = max(n, counts.get(word, 0))
    return {
        "mode": mode,
        "seconds": seconds,
        "words": sum(counts.values()),
        "distinct": len(counts),
    }


def lines_of(cmd: list[str], **kw) -> list[dict]:  # type: ignore[no-untyped-def]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", default="absnb,pyflink,bytewax")
    parser.add_argument("--venvs", type=Path, default=Path.home() / ".cache" / "absnb-peers")
    a = parser.parse_args()
    engines = a.engines.split(",")
    pythons = {e: venv(a.venvs, e) for e in engines if e != "absnb"}
    scratch = Path(tempfile.mkdtemp(prefix="absnb-peers-"))
    try:
        data = scratch / "corpus"
        words, distinct = corpus(a.words, data)
        print(
            f"corpus: {words:,} words ({distinct:,} distinct) in 4 files, "
            f"{sum(f.stat().st_size for f in data.iterdir()) / 2**20:.0f} MiB",
            flush=True,
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if "pyflink" in engines:
            check = lines_of(
                [str(pythons["pyflink"]), "pyflink_wc.py", str(data), str(scratch), "verify"],
                cwd=HERE,
            )[0]
            assert (check["words"], check["distinct"]) == (words, distinct), check
        seconds: dict[str, dict[str, list[float]]] = {e: {m: [] for m in MODES} for e in engines}
        for r in range(a.rounds):
            for e in engines:
                if e == "absnb":
                    rows = lines_of(
                        [sys.executable, str(HERE / "absnb_wc.py"), str(data), *MODES], env=env
                    )
                elif e == "pyflink":
                    rows = lines_of(
                        [str(pythons[e]), "pyflink_wc.py", str(data), str(scratch), *MODES],
                        cwd=HERE,
                    )
                else:
                    rows = [bytewax(pythons[e], data, m, scratch) for m in MODES]
                for row in rows:
                    if "words" in row:
                        assert (row["words"], row["distinct"]) == (words, distinct), (e, row)
                    seconds[e][row["mode"]].append(row["seconds"])
                    print(f"round {r + 1} {e} {row['mode']}: {row['seconds']:.2f} s", flush=True)
        report(seconds, words, engines)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def report(seconds: dict[str, dict[str, list[float]]], words: int, engines: list[str]) -> None:
    load = os.getloadavg()[0]
    print(
        f"\n{words:,} words; medians of {len(seconds[engines[0]]['none'])} round(s); "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at the end"
    )
    print(
        f"{'engine':10} {'none':>12} {'every 1 s':>12} {'every 0.1 s':>12} "
        f"{'+1 s':>8} {'+0.1 s':>8}"
    )
    rate: dict[str, float] = {}
    for e in engines:
        s = seconds[e]
        per = [words / statistics.median(s[m]) / 1e6 for m in MODES]
        rate[e] = per[1]
        over = [
            statistics.median([b / n - 1 for b, n in zip(s[m], s["none"], strict=True)])
            for m in MODES[1:]
        ]
        print(
            f"{e:10} {per[0]:9.2f} M/s {per[1]:9.2f} M/s {per[2]:9.2f} M/s "
            f"{over[0]:+8.0%} {over[1]:+8.0%}"
        )
    if "absnb" in rate:
        for e in engines:
            if e != "absnb":
                print(f"absnb with snapshots every 1 s over {e}: {rate['absnb'] / rate[e]:.2f}x")


if __name__ == "__main__":
    main()
