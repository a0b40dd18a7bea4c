"""providers/cgroups.py: cgroup v1 CPU limits on a fake /sys/fs/cgroup tree under tmp_path."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from clusterbench.errors import PreflightError
from clusterbench.providers import cgroups
from clusterbench.providers.cgroups import CgroupV1, enter_cgroup_argv

NAME = "clusterbench/lab-n1"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A v1 hierarchy as the kernel shows it: cpu and cpuset controllers with their top files."""
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "cpuset").mkdir()
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-3\n")
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0\n")
    return tmp_path


def test_default_root() -> None:
    assert CgroupV1().root == Path("/sys/fs/cgroup")


def test_available(root: Path, tmp_path: Path) -> None:
    assert CgroupV1(root).available() is True
    assert CgroupV1(tmp_path / "nowhere").available() is False


def test_writes_cpu_quota(root: Path) -> None:
    d = root / "cpu" / "clusterbench" / "lab-n1"
    assert CgroupV1(root).writes(NAME, 0.5, None) == [
        (d / "cpu.cfs_period_us", "100000"),
        (d / "cpu.cfs_quota_us", "50000"),
    ]


@pytest.mark.parametrize(("quota", "us"), [(1.0, "100000"), (1.5, "150000"), (2, "200000"), (0.25, "25000")])
def test_writes_quota_values(root: Path, quota: float, us: str) -> None:
    assert CgroupV1(root).writes(NAME, quota, None)[1][1] == us


def test_writes_cpuset_sets_parent_first(root: Path) -> None:
    parent = root / "cpuset" / "clusterbench"
    leaf = parent / "lab-n1"
    assert CgroupV1(root).writes(NAME, None, "1-2") == [
        (parent / "cpuset.cpus", "0-3"),
        (parent / "cpuset.mems", "0"),
        (leaf / "cpuset.cpus", "1-2"),
        (leaf / "cpuset.mems", "0"),
    ]


def test_writes_both(root: Path) -> None:
    w = CgroupV1(root).writes(NAME, 1.0, "0")
    assert [str(p.relative_to(root)) for p, _ in w] == [
        "cpu/clusterbench/lab-n1/cpu.cfs_period_us",
        "cpu/clusterbench/lab-n1/cpu.cfs_quota_us",
        "cpuset/clusterbench/cpuset.cpus",
        "cpuset/clusterbench/cpuset.mems",
        "cpuset/clusterbench/lab-n1/cpuset.cpus",
        "cpuset/clusterbench/lab-n1/cpuset.mems",
    ]


def test_writes_nothing(root: Path) -> None:
    assert CgroupV1(root).writes(NAME, None, None) == []


def test_writes_cpuset_without_top_files_falls_back_to_zero(tmp_path: Path) -> None:
    w = CgroupV1(tmp_path).writes(NAME, None, "1")
    assert [v for _, v in w] == ["0", "0", "1", "0"]


def test_create_makes_groups_and_writes_limits(root: Path) -> None:
    made = CgroupV1(root).create(NAME, 0.5, "1")
    assert made == [root / "cpu" / "clusterbench" / "lab-n1", root / "cpuset" / "clusterbench" / "lab-n1"]
    assert (root / "cpu/clusterbench/lab-n1/cpu.cfs_quota_us").read_text() == "50000"
    assert (root / "cpu/clusterbench/lab-n1/cpu.cfs_period_us").read_text() == "100000"
    assert (root / "cpuset/clusterbench/cpuset.cpus").read_text() == "0-3"
    assert (root / "cpuset/clusterbench/cpuset.mems").read_text() == "0"
    assert (root / "cpuset/clusterbench/lab-n1/cpuset.cpus").read_text() == "1"
    assert (root / "cpuset/clusterbench/lab-n1/cpuset.mems").read_text() == "0"


def test_create_cpu_only(root: Path) -> None:
    assert CgroupV1(root).create(NAME, 2.0, None) == [root / "cpu" / "clusterbench" / "lab-n1"]
    assert not (root / "cpuset" / "clusterbench").exists()


def test_create_is_idempotent(root: Path) -> None:
    cg = CgroupV1(root)
    cg.create(NAME, 0.5, None)
    assert cg.create(NAME, 1.0, None) == [root / "cpu" / "clusterbench" / "lab-n1"]
    assert (root / "cpu/clusterbench/lab-n1/cpu.cfs_quota_us").read_text() == "100000"


def test_create_without_limits_needs_no_cgroups(tmp_path: Path) -> None:
    assert CgroupV1(tmp_path / "nowhere").create(NAME, None, None) == []


def test_create_without_cpu_controller(tmp_path: Path) -> None:
    cg = CgroupV1(tmp_path / "nowhere")
    with pytest.raises(PreflightError) as info:
        cg.create(NAME, 0.5, None)
    assert str(info.value) == (
        f"cgroup v1 cpu controller not found under {tmp_path / 'nowhere'}; "
        "remove cpu_quota/cpuset from the topology"
    )


def test_create_reports_a_failed_write(root: Path) -> None:
    quota = root / "cpu" / "clusterbench" / "lab-n1" / "cpu.cfs_quota_us"
    quota.mkdir(parents=True)  # a directory where the file should be: the write fails
    with pytest.raises(PreflightError) as info:
        CgroupV1(root).create(NAME, 0.5, None)
    assert str(info.value) == f"cannot write '50000' to {quota}: Is a directory"


def test_attach_writes_pid_to_each_existing_group(root: Path) -> None:
    cg = CgroupV1(root)
    cg.create(NAME, 0.5, "1")
    for c in ("cpu", "cpuset"):
        (root / c / "clusterbench" / "lab-n1" / "cgroup.procs").write_text("")  # the kernel makes these
    cg.attach(NAME, 4321)
    assert (root / "cpu/clusterbench/lab-n1/cgroup.procs").read_text() == "4321"
    assert (root / "cpuset/clusterbench/lab-n1/cgroup.procs").read_text() == "4321"


def test_attach_only_where_the_group_exists(root: Path) -> None:
    cg = CgroupV1(root)
    cg.create(NAME, 0.5, None)
    (root / "cpu/clusterbench/lab-n1/cgroup.procs").write_text("")
    cg.attach(NAME, 99)
    assert (root / "cpu/clusterbench/lab-n1/cgroup.procs").read_text() == "99"
    assert not (root / "cpuset/clusterbench/lab-n1").exists()


def test_existing_finds_our_groups_by_prefix(root: Path) -> None:
    for c in ("cpu", "cpuset"):
        for leaf in ("lab-n2", "lab-n1", "lab2-n1", "other-n1"):
            (root / c / "clusterbench" / leaf).mkdir(parents=True)
    (root / "cpu" / "clusterbench" / "lab-file").write_text("not a group")
    assert CgroupV1(root).existing("lab-") == [
        root / "cpu/clusterbench/lab-n1",
        root / "cpu/clusterbench/lab-n2",
        root / "cpuset/clusterbench/lab-n1",
        root / "cpuset/clusterbench/lab-n2",
    ]


def test_existing_none(root: Path, tmp_path: Path) -> None:
    assert CgroupV1(root).existing("lab-") == []
    assert CgroupV1(tmp_path / "nowhere").existing("lab-") == []


def test_remove(root: Path) -> None:
    cg = CgroupV1(root)
    (d,) = cg.create(NAME, 0.5, None)
    # a real cgroup directory can be removed while it holds its control files; here they are plain
    # files, so remove them first to let rmdir work
    for f in d.iterdir():
        f.unlink()
    cg.remove(d)
    assert not d.exists()
    cg.remove(d)  # gone already: no error


def test_remove_busy_group(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def busy(path: object) -> None:
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(path))

    monkeypatch.setattr(cgroups.os, "rmdir", busy)
    with pytest.raises(PreflightError) as info:
        CgroupV1(tmp_path).remove(tmp_path / "cpu/clusterbench/lab-n1", wait=0.2)
    assert (
        str(info.value)
        == f"cgroup {tmp_path / 'cpu/clusterbench/lab-n1'} still has processes; stop them first"
    )


def test_remove_waits_for_killed_processes_to_leave(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # SIGKILLed, the server is still exiting when down removes its group: busy twice, then empty
    calls: list[object] = []

    def rmdir(path: object) -> None:
        calls.append(path)
        if len(calls) < 3:
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(path))

    monkeypatch.setattr(cgroups.os, "rmdir", rmdir)
    CgroupV1(tmp_path).remove(tmp_path / "cpu/clusterbench/lab-n1")
    assert len(calls) == 3


def test_remove_other_errors_propagate(tmp_path: Path) -> None:
    d = tmp_path / "full"
    d.mkdir()
    (d / "x").write_text("")
    with pytest.raises(OSError) as info:
        CgroupV1(tmp_path).remove(d)
    assert info.value.errno == errno.ENOTEMPTY


def test_enter_cgroup_argv_writes_its_pid_then_execs(tmp_path: Path) -> None:
    procs = [tmp_path / "cpu.procs", tmp_path / "cpuset.procs"]
    argv = enter_cgroup_argv(procs, ["sh", "-c", "echo $$"])
    assert argv[:2] == ["sh", "-c"] and argv[-4:] == ["--", "sh", "-c", "echo $$"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()
    # the command kept the PID that entered the groups (exec), so what it forks starts there too
    assert [p.read_text().strip() for p in procs] == [out, out]
    assert enter_cgroup_argv([], ["nginx"]) == ["nginx"]


def test_enter_cgroup_argv_stops_when_it_cannot_enter(tmp_path: Path) -> None:
    argv = enter_cgroup_argv([tmp_path / "missing" / "cgroup.procs"], ["touch", str(tmp_path / "ran")])
    assert subprocess.run(argv, capture_output=True, check=False).returncode != 0
    assert not (tmp_path / "ran").exists()


def test_procs_files_lists_the_controllers_a_group_has(tmp_path: Path) -> None:
    cg = CgroupV1(root=tmp_path)
    (tmp_path / "cpu" / "clusterbench" / "lab-w1").mkdir(parents=True)
    (tmp_path / "cpu" / "clusterbench" / "lab-w1" / "cgroup.procs").write_text("")
    group = tmp_path / "cpu" / "clusterbench" / "lab-w1"
    assert cg.procs_files("clusterbench/lab-w1") == [group / "cgroup.procs"]
