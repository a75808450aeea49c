"""PyFlink's word count over the corpus in SQL (Table API), one line of JSON per mode.

    python pyflink_wc.py CORPUS_DIR CHECKPOINT_DIR MODE...   (MODE: none, verify, or an
    interval in seconds for aligned exactly-once checkpoints)

Streaming mode (checkpoints need it), parallelism 2, a filesystem source in ``raw`` format
(one row per line), ``SPLIT`` and ``UNNEST`` into words, a ``GROUP BY`` count per word into
a ``blackhole`` sink; checkpoints to the file system. ``verify`` counts the words and the
distinct words of the same query (in batch mode, untimed). A first run warms the JVM.
"""

from __future__ import annotations

import json
import sys
import time

from pyflink.table import EnvironmentSettings, TableEnvironment

WORDS = "SELECT word FROM lines CROSS JOIN UNNEST(SPLIT(line, ' ')) AS T(word) WHERE word <> ''"


def env(corpus: str, checkpoints: str, interval: float | None, batch: bool = False):  # type: ignore[no-untyped-def]
    settings = (
        EnvironmentSettings.in_batch_mode() if batch else EnvironmentSettings.in_streaming_mode()
    )
    t = TableEnvironment.create(settings)
    c = t.get_config()
    c.set("parallelism.default", "2")
    if interval is not None:
        c.set("execution.checkpointing.interval", f"{round(interval * 1000)} ms")
        c.set("execution.checkpointing.mode", "EXACTLY_ONCE")
        c.set("execution.checkpointing.storage", "filesystem")
        c.set("execution.checkpointing.dir", f"file://{checkpoints}")
    t.execute_sql(
        f"CREATE TABLE lines (line STRING) WITH ('connector' = 'filesystem', "
        f"'path' = '{corpus}', 'format' = 'raw')"
    )
    t.execute_sql(
        "CREATE TABLE counts (word STRING, cnt BIGINT, PRIMARY KEY (word) NOT ENFORCED) "
        "WITH ('connector' = 'blackhole')"
    )
    return t


def main(corpus: str, checkpoints: str, modes: list[str]) -> None:
    for mode in ["warm-up", *modes]:
        if mode == "verify":
            t = env(corpus, checkpoints, None, batch=True)
            rows = list(
                t.execute_sql(
                    f"SELECT SUM(c), COUNT(*) FROM (SELECT word, COUNT(*) AS c FROM ({WORDS}) "
                    "GROUP BY word)"
                ).collect()
            )
            print(json.dumps({"mode": mode, "words": rows[0][0], "distinct": rows[0][1]}))
            continue
        interval = None if mode in ("none", "warm-up") else float(mode)
        t = env(corpus, checkpoints, interval)
        began = time.monotonic()
        t.execute_sql(
            f"INSERT INTO counts SELECT word, COUNT(*) FROM ({WORDS}) GROUP BY word"
        ).wait()
        seconds = time.monotonic() - began
        if mode != "warm-up":
            print(json.dumps({"mode": mode, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
