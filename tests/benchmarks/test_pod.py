"""benchmarks/pod/run.py's parsing and accounting, on cgroup files written to a temporary
directory (no root, no cgroup, no notebook run)."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

_POD = Path(__file__).resolve().parents[2] / "benchmarks" / "pod"
sys.path.insert(0, str(_POD))  # run.py imports its sibling modules, as when run as a script
_spec = importlib.util.spec_from_file_location("pod_run", _POD / "run.py")
assert _spec is not None
assert _spec.loader is not None
pod: Any = importlib.util.module_from_spec(_spec)
sys.modules["pod_run"] = pod  # dataclasses look their module up by name
_spec.loader.exec_module(pod)
import cgroup_box as cg  # noqa: E402  (benchmarks/pod is on the path only from here)
import process_memory as pm  # noqa: E402

MIB = 1024 * 1024
V1_STAT = """cache 4096
rss 1048576
total_cache 73728000
total_rss 419430400
total_rss_huge 0
total_swap 2097152
hierarchical_memory_limit 2147483648
"""
V2_STAT = "anon 314572800\nfile 52428800\nkernel 1024\nanon_thp 0\n"
OWN = "4:memory:/jobs/me\n2:cpuacct:/\n1:cpu:/\n0::/\n"


def _v1_mounts(root: Path, cpu: str = "cpu") -> str:
    return (
        f"proc /proc proc rw 0 0\n"
        f"tmpfs {root} tmpfs rw,mode=755 0 0\n"
        f"cgroup {root}/memory cgroup rw,relatime,memory 0 0\n"
        f"cgroup {root}/cpu cgroup rw,relatime,{cpu} 0 0\n"
    )


def _files(d: Path, texts: dict[str, str]) -> Path:
    """The directory ``d`` with a file of each name and text: a fake cgroup."""
    d.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (d / name).write_text(text)
    return d


def test_keyed_files_parse_to_integers_and_skip_other_lines():
    got = cg.parse_keyed(V1_STAT + "garbage\nname value\n\nnegative -1\n")
    assert got["total_rss"] == 419430400
    assert got["total_swap"] == 2097152
    assert got["negative"] == -1
    assert "garbage" not in got
    assert "name" not in got


@given(st.dictionaries(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), st.integers(0, 2**63)))
def test_keyed_files_round_trip(values):
    text = "".join(f"{k} {v}\n" for k, v in values.items())
    assert cg.parse_keyed(text) == values


def test_mounts_find_each_v1_controller_and_the_v2_mount():
    text = (
        "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n"
        "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
        "cgroup /sys/fs/cgroup/pids cgroup rw,pids 0 0\n"
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate 0 0\n"
        "tmpfs /tmp tmpfs rw,memory 0 0\n"
    )
    assert cg.parse_mounts(text) == {
        "cpu": Path("/sys/fs/cgroup/cpu,cpuacct"),
        "cpuacct": Path("/sys/fs/cgroup/cpu,cpuacct"),
        "memory": Path("/sys/fs/cgroup/memory"),
        "unified": Path("/sys/fs/cgroup/unified"),
    }


def test_own_cgroups_read_v1_and_v2_lines():
    text = "9:name=systemd:/\n4:memory:/a/b\n2:cpu,cpuacct:/c\n0::/d\n"
    assert cg.parse_own_cgroups(text) == {
        "memory": "/a/b",
        "cpu": "/c",
        "cpuacct": "/c",
        "unified": "/d",
    }


def test_v1_boxes_nest_in_this_process_own_group(tmp_path):
    _files(tmp_path / "memory" / "jobs" / "me", {"memory.limit_in_bytes": "9223372036854771712\n"})
    (tmp_path / "cpu").mkdir()
    layout = cg.find_layout(_v1_mounts(tmp_path), OWN)
    assert layout.version == 1
    assert layout.parents == {
        "memory": tmp_path / "memory" / "jobs" / "me",
        "cpu": tmp_path / "cpu",
    }


def test_v2_is_used_when_no_v1_memory_hierarchy_is_mounted(tmp_path):
    _files(tmp_path / "d", {"cgroup.subtree_control": "cpu memory pids\n"})
    layout = cg.find_layout(f"cgroup2 {tmp_path} cgroup2 rw 0 0\n", "0::/d\n")
    assert (layout.version, layout.parents) == (2, {"unified": tmp_path / "d"})


def test_no_memory_controller_mounted_names_the_fix():
    with pytest.raises(cg.NoCgroupError, match="no cgroup memory controller is mounted"):
        cg.find_layout("proc /proc proc rw 0 0\ncgroup /c/cpu cgroup rw,cpu 0 0\n", OWN)


def test_a_directory_that_is_no_cgroup_is_refused(tmp_path):
    (tmp_path / "memory" / "jobs" / "me").mkdir(parents=True)  # no memory.limit_in_bytes
    with pytest.raises(cg.NoCgroupError, match=r"not a cgroup directory.*memory\.limit_in_bytes"):
        cg.find_layout(_v1_mounts(tmp_path), OWN)


def test_an_unwritable_cgroup_says_run_as_root(tmp_path, monkeypatch):
    _files(tmp_path / "memory" / "jobs" / "me", {"memory.limit_in_bytes": "1\n"})
    monkeypatch.setattr(cg.os, "access", lambda path, mode: False)  # root may write anyway
    with pytest.raises(cg.NoCgroupError, match=r"permission denied.*as root \(sudo\)"):
        cg.find_layout(_v1_mounts(tmp_path), OWN)


def test_v2_without_memory_for_children_names_subtree_control(tmp_path):
    _files(tmp_path, {"cgroup.subtree_control": "cpu pids\n"})
    with pytest.raises(cg.NoCgroupError, match=r"echo \+memory \+cpu > .*subtree_control"):
        cg.find_layout(f"cgroup2 {tmp_path} cgroup2 rw 0 0\n", "0::/\n")


def test_v1_anon_is_total_rss_plus_swap_and_the_account_reads_every_file(tmp_path):
    memory = _files(
        tmp_path / "m",
        {
            "memory.stat": V1_STAT,
            "memory.max_usage_in_bytes": f"{900 * MIB}\n",
            "memory.failcnt": "12\n",
            "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        },
    )
    cpu = _files(
        tmp_path / "c", {"cpu.stat": "nr_periods 10\nnr_throttled 3\nthrottled_time 2500000000\n"}
    )
    acct = _files(tmp_path / "a", {"cpuacct.usage": "46800000000\n"})
    box = cg.Box(1, {"memory": memory, "cpu": cpu, "cpuacct": acct})
    assert box.anon_bytes() == 419430400 + 2097152  # total_rss + total_swap; cache left out
    assert cg.account(box) == {
        "cpu": 46.8,
        "throttled": 2.5,
        "peak": 900 * MIB,
        "limit_hits": 12,
        "oom_kills": 2,
    }


def test_v2_anon_adds_swap_and_the_account_reads_cpu_stat_and_events(tmp_path):
    d = _files(
        tmp_path / "u",
        {
            "memory.stat": V2_STAT,
            "memory.swap.current": "1048576\n",
            "memory.peak": f"{700 * MIB}\n",
            "memory.events": "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n",
            "cpu.stat": "usage_usec 51800000\nthrottled_usec 1500000\n",
        },
    )
    box = cg.Box(2, {"unified": d})
    assert box.anon_bytes() == 314572800 + 1048576
    assert cg.account(box) == {
        "cpu": 51.8,
        "throttled": 1.5,
        "peak": 700 * MIB,
        "limit_hits": 5,
        "oom_kills": 1,
    }


def test_without_cpuacct_the_cpu_time_is_marked_missing(tmp_path):
    memory = _files(tmp_path / "m", {"memory.max_usage_in_bytes": "1\n"})
    got = cg.account(cg.Box(1, {"memory": memory}))
    assert got["cpu"] != got["cpu"]  # nan: run_in_box falls back to the children's rusage


def test_the_table_shows_mib_and_notes_processes_left_behind():
    results = [
        pod.Result("06_performance.ipynb", 0, 51.84, 46.8, 0.0, 1111 * MIB, 800 * MIB, 0, 0),
        pod.Result("x.ipynb", -9, 3.0, 2.0, 0.5, 1024 * MIB, 1023.6 * MIB, 7, 1, stray=3),
    ]
    lines = pod.format_table(results).splitlines()
    assert lines[0].startswith("| notebook | exit | wall s | CPU s | throttled s | peak MiB")
    assert lines[2] == "| 06_performance.ipynb | 0 | 51.8 | 46.8 | 0.0 | 1,111 | 800 | 0 | 0 |"
    assert lines[3] == "| x.ipynb | -9 | 3.0 | 2.0 | 0.5 | 1,024 | 1,024 | 7 | 1 |"
    assert lines[4] == "x.ipynb: 3 process(es) still in its group after nbconvert, killed"
    assert len(lines) == 5


def test_the_sampler_keeps_the_largest_reading_and_stops():
    values = iter([5, 9, 3])
    done = threading.Event()

    def read():
        try:
            return next(values)
        except StopIteration:
            done.set()
            raise OSError("the group is gone") from None  # a read that fails is skipped

    sampler = pod.Sampler(read, every=0.001)
    with sampler.running():
        assert done.wait(5)
    assert sampler.peak == 9


def test_a_box_half_made_is_removed(tmp_path):
    layout = cg.Layout(1, {"memory": tmp_path / "m", "cpu": tmp_path / "missing"})
    (tmp_path / "m").mkdir()
    with pytest.raises(FileNotFoundError):
        cg.make_box(layout, "absnb-pod-1-0", 2048, 1.0)
    assert list((tmp_path / "m").iterdir()) == []  # the memory group it made is gone


def test_the_sampler_looks_at_what_held_each_peak_one_percent_above_the_last():
    values = iter([100, 100, 101, 300, 302, 50])
    looks = []

    def look():
        looks.append(len(looks))
        return [pm.Process(1, len(looks), "x")]

    sampler = pod.Sampler(lambda: next(values), every=1.0, look=look)
    for _ in range(6):
        sampler.sample()
    assert sampler.peak == 302
    assert looks == [0, 1]  # at 100 and 300: 101 and 302 are within 1 % of what was looked at
    assert sampler.at_peak == [pm.Process(1, 2, "x")]


ROLLUP = """55d0c6a5e000-7ffd8e9f5000 ---p 00000000 00:00 0                          [rollup]
Rss:              102400 kB
Pss:               80000 kB
Pss_Anon:          56320 kB
Pss_File:          23680 kB
Anonymous:         63488 kB
"""


def test_pss_anon_is_read_in_bytes_and_falls_back_to_anonymous():
    assert pm.pss_anon(ROLLUP) == 56320 * 1024
    old_kernel = "\n".join(line for line in ROLLUP.splitlines() if "Pss_Anon" not in line)
    assert pm.pss_anon(old_kernel) == 63488 * 1024


def test_commands_are_short_without_class_paths_or_connection_files():
    java = b"/jvm/bin/java\0-cp\0/a.jar:/b.jar\0-Xmx512m\0org.apache.spark.deploy.SparkSubmit\0"
    assert pm.short_command(java) == "java -cp -Xmx512m org.apache.spark.deploy.SparkSubmit"
    kernel = b"/venv/bin/python\0-m\0ipykernel_launcher\0-f\0/tmp/tmpdwjdc1om.json\0"
    assert pm.short_command(kernel) == "python -m ipykernel_launcher -f"
    assert pm.short_command(b"python\0" + b"x" * 200, width=20) == "python xxxxxxxxxx..."
    assert pm.short_command(b"") == "?"


def test_processes_are_listed_most_memory_first_and_ended_ones_skipped(tmp_path):
    for pid, anon in ((11, 1000), (12, 5000)):
        _files(tmp_path / str(pid), {"smaps_rollup": f"x\nPss_Anon: {anon} kB\n"})
        (tmp_path / str(pid) / "cmdline").write_bytes(b"python\0-m\0absnb.runtime.spark.daemon\0")
    found = pm.processes([11, 12, 13], proc=tmp_path)  # 13 ended before it was read
    assert [(p.pid, p.anon) for p in found] == [(12, 5000 * 1024), (11, 1000 * 1024)]
    table = pm.format_processes("06_performance.ipynb", found).splitlines()
    assert table[3] == "| 12 | 5 | `python -m absnb.runtime.spark.daemon` |"
    assert table[-1] == "| all | 6 | |"


def test_this_process_is_found_in_the_real_proc():
    (me,) = pm.processes([os.getpid()])
    assert me.anon > 1024 * 1024  # a Python running pytest holds more than a MiB of its own
    assert me.command.startswith("python")
