"""The power-loss and disk-fault layer (cb-faultfs) on a real FUSE mount, with no database: a layer
over a directory under /tmp/faultfs-*, written by a victim process that is then killed, with and
without the drop; latency and EIO faults on fsync; sysbench's fileio (fsync after every write) on
the mount; the Go tests of tools/faultfs. Needs root and /dev/fuse (skipped otherwise); every
layer is unmounted and its daemon gone at the end, also when a test fails."""

from __future__ import annotations

import errno
import mmap
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterbench.hosts.local import LocalHost
from clusterbench.providers.faultfs import FaultFS, binary_path, layer_mounts, release_all
from clusterbench.providers.faultfs_proto import DiskFaults

pytestmark = pytest.mark.integration

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "faultfs"


def _go() -> str | None:
    usual = "/usr/local/go/bin/go"
    return shutil.which("go") or (usual if os.access(usual, os.X_OK) else None)


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "the power-loss layer needs root to mount"
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse: this kernel has no FUSE"
    if not binary_path().exists() and _go() is None:
        return f"{binary_path()} is not built and there is no Go to build it; run `make setup`"
    return None


@pytest.fixture()
def root() -> Iterator[Path]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    # A built binary is a setup step that must have worked where Go exists: fail, not skip.
    assert binary_path().exists(), f"{binary_path()} missing: scripts/build-tools.sh did not build it"
    d = Path(f"/tmp/faultfs-it-{os.getpid()}")
    d.mkdir(mode=0o755, exist_ok=True)
    yield d
    left = release_all(LocalHost(), d)
    shutil.rmtree(d, ignore_errors=True)
    assert not left, f"layers left mounted: {left}"


@pytest.fixture()
def layer(root: Path) -> Iterator[FaultFS]:
    fs = FaultFS(LocalHost(), root / "src", root / "mnt")
    fs.start()
    try:
        yield fs
    finally:
        fs.stop()
        assert not fs.mounted()


# The victim: runs the given Python statements with `mnt` bound, says "ready", then waits to die.
VICTIM = """
import os, sys, time
mnt = sys.argv[1]
def put(name, data, off=0, sync=False, flags=os.O_CREAT):
    fd = os.open(os.path.join(mnt, name), os.O_WRONLY | flags, 0o644)
    os.pwrite(fd, data, off)
    if sync:
        os.fsync(fd)
    return fd
exec(sys.argv[2])
print("ready", flush=True)
time.sleep(600)
"""


def victim(mnt: Path, body: str) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", VICTIM, str(mnt), body], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready", "the victim did not get ready"
    return p


def reap(p: subprocess.Popen[str]) -> None:
    p.wait(timeout=10)
    if p.stdout is not None:
        p.stdout.close()


WRITES = """
a = put("A", b"a" * 20000, sync=True)       # durable
put("A", b"X" * 3000, off=7000, flags=0)    # not: an overwrite inside A
put("A", b"Y" * 5000, off=20000, flags=0)   # not: an extension of A
put("B", b"b" * 5000)                       # not: a new file, never synced
"""


def test_power_loss_keeps_what_was_synced_and_loses_the_rest(layer: FaultFS) -> None:
    mnt = layer.mount
    p = victim(mnt, WRITES)
    assert layer.status().unsynced_files == 2
    dropped = layer.power_loss(lambda: os.kill(p.pid, signal.SIGKILL))
    reap(p)
    assert p.returncode == -signal.SIGKILL
    assert (mnt / "A").read_bytes() == b"a" * 20000, "A is not as of its fsync"
    assert (mnt / "B").read_bytes() == b"", "B kept data that was never synced"
    by_path = {f.path: f for f in dropped.files}
    assert set(by_path) == {"A", "B"} and dropped.unsynced_bytes == 13000
    a = by_path["A"]
    assert (a.size_before, a.size_after, a.reverted_bytes) == (25000, 20000, 2 * 4096)  # pages 1 and 2
    status = layer.status()
    assert status.drops == 1 and status.unsynced_files == 0 and not status.frozen


def test_power_loss_can_remove_new_files_whose_creation_was_not_durable(layer: FaultFS) -> None:
    mnt = layer.mount
    body = WRITES + 'os.mkdir(os.path.join(mnt, "d"))\nput("d/C", b"c" * 10)\n'
    p = victim(mnt, body)
    dropped = layer.power_loss(lambda: os.kill(p.pid, signal.SIGKILL), new_files="remove")
    reap(p)
    assert sorted(os.listdir(mnt)) == ["A", "d"], "a never-synced new file survived"
    assert os.listdir(mnt / "d") == [], "mkdir is durable once done, the file in it was not"
    assert dropped.removed == 2 and (mnt / "A").read_bytes() == b"a" * 20000


def test_a_kill_without_the_drop_loses_nothing(layer: FaultFS) -> None:
    """Negative control: the page cache (here: the source directory) survives a process kill."""
    mnt = layer.mount
    p = victim(mnt, WRITES)
    os.kill(p.pid, signal.SIGKILL)
    reap(p)
    a = (mnt / "A").read_bytes()
    assert a[:7000] == b"a" * 7000 and a[7000:10000] == b"X" * 3000 and a[20000:] == b"Y" * 5000
    assert (mnt / "B").read_bytes() == b"b" * 5000
    assert layer.status().unsynced_bytes == 13000


def test_a_victim_writing_at_the_cut_dies_and_its_held_write_never_lands(layer: FaultFS) -> None:
    mnt = layer.mount
    loop = 'fd = put("L", b"s" * 4096, sync=True)\nprint("ready", flush=True)\n'
    loop += "i = 0\nwhile True:\n    os.pwrite(fd, b'w' * 4096, (i % 64) * 4096); i += 1\n"
    p = victim(mnt, loop)
    time.sleep(0.2)  # writing at full speed now
    layer.freeze()
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=5)  # a killed caller held in the layer is interrupted: it dies while frozen
    dropped = layer.drop()
    layer.thaw()
    assert (mnt / "L").read_bytes() == b"s" * 4096
    assert dropped.files and dropped.files[0].unsynced_bytes > 4096
    if p.stdout is not None:
        p.stdout.close()


def test_o_direct_is_not_durable_without_fsync_and_o_dsync_is(layer: FaultFS) -> None:
    """O_DIRECT skips the page cache, not a disk's volatile cache; an O_DSYNC write is durable."""
    buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
    buf.write(b"d" * 4096)
    direct = os.open(layer.mount / "direct", os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o644)
    dsync = os.open(layer.mount / "dsync", os.O_CREAT | os.O_WRONLY | os.O_DSYNC, 0o644)
    try:
        assert os.pwritev(direct, [buf], 0) == 4096
        os.fsync(direct)
        buf.seek(0)
        buf.write(b"e" * 4096)
        assert os.pwritev(direct, [buf], 4096) == 4096  # not synced
        os.write(dsync, b"s" * 100)
    finally:
        os.close(direct)
        os.close(dsync)
    layer.freeze()
    dropped = layer.drop()
    layer.thaw()
    assert (layer.mount / "direct").read_bytes() == b"d" * 4096
    assert (layer.mount / "dsync").read_bytes() == b"s" * 100
    assert [f.path for f in dropped.files] == ["direct"]


def test_latency_fault_slows_fsync_by_at_least_the_delay(layer: FaultFS) -> None:
    path = layer.mount / "lat"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        layer.set_faults(DiskFaults(delay_ms=200, delay_ops=("fsync",), seconds=60))
        assert layer.status().faults is not None
        t0 = time.monotonic()
        os.write(fd, b"x" * 4096)
        t1 = time.monotonic()
        os.fsync(fd)
        t2 = time.monotonic()
        assert t2 - t1 >= 0.2, f"fsync took {t2 - t1:.3f} s with a 200 ms delay"
        assert t1 - t0 < 0.1, f"a write took {t1 - t0:.3f} s: it was delayed too"
        layer.clear_faults()
        t3 = time.monotonic()
        os.fsync(fd)
        assert time.monotonic() - t3 < 0.2
        assert layer.status().delayed == 1
    finally:
        os.close(fd)


def test_eio_on_fsync_fails_it_and_clearing_restores_success(layer: FaultFS) -> None:
    fd = os.open(layer.mount / "eio", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        layer.set_faults(DiskFaults(error="EIO", error_ops=("fsync",)))
        os.write(fd, b"still written")
        with pytest.raises(OSError) as info:
            os.fsync(fd)
        assert info.value.errno == errno.EIO
        assert layer.status().unsynced_files == 1, "a failed fsync made the data durable"
        layer.clear_faults()
        os.fsync(fd)
        assert layer.status().unsynced_files == 0
        layer.set_faults(DiskFaults(error="ENOSPC", error_ops=("write",)))
        with pytest.raises(OSError) as info:
            os.write(fd, b"more")
        assert info.value.errno == errno.ENOSPC
        assert layer.status().errors_injected == 2
    finally:
        layer.clear_faults()
        os.close(fd)


def test_the_mysql_user_can_use_the_mount(layer: FaultFS) -> None:
    if shutil.which("runuser") is None:
        pytest.skip("no runuser")
    try:
        mysql = pwd.getpwnam("mysql")
    except KeyError:
        pytest.skip("no mysql user")
    os.chown(layer.mount, mysql.pw_uid, mysql.pw_gid)
    res = subprocess.run(
        ["runuser", "-u", "mysql", "--", "sh", "-c", f"echo ok > {layer.mount}/m && cat {layer.mount}/m"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr
    st = os.stat(layer.source / "m")
    assert st.st_uid == mysql.pw_uid, "a file made by mysql is not owned by mysql"
    nobody = ["runuser", "-u", "nobody", "--", "sh", "-c", f"echo x > {layer.mount}/m"]
    other = subprocess.run(nobody, capture_output=True, check=False)
    assert other.returncode != 0, "the kernel did not check permissions (default_permissions)"


def test_sysbench_fileio_with_fsync_after_every_write_runs_on_the_mount(layer: FaultFS) -> None:
    if shutil.which("sysbench") is None:
        pytest.skip("no sysbench")
    common = ["sysbench", "fileio", "--file-num=4", "--file-total-size=16M", "--file-block-size=16384"]
    run = [*common, "--file-test-mode=rndwr", "--file-fsync-freq=1", "--time=3", "--threads=2", "run"]
    for argv in ([*common, "prepare"], run):
        res = subprocess.run(argv, cwd=layer.mount, capture_output=True, text=True, check=False, timeout=120)
        assert res.returncode == 0, res.stdout[-500:] + res.stderr[-500:]
    writes = re.search(r"writes/s:\s+([\d.]+)", res.stdout)
    fsyncs = re.search(r"fsyncs/s:\s+([\d.]+)", res.stdout)
    assert writes and fsyncs and float(writes.group(1)) > 0 and float(fsyncs.group(1)) > 0, res.stdout
    status = layer.status()
    assert status.ops["fsync"] > 0 and status.unsynced_files == 0, status.text()


def test_go_tests_of_the_layer() -> None:
    """tools/faultfs's own tests (the undo log, the gate, the protocol, a real mount)."""
    reason = _skip_reason()
    go = _go()
    if reason or go is None:
        pytest.skip(reason or "no Go")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
    res = subprocess.run(
        [go, "test", "-count=1", "./..."], cwd=TOOLS, capture_output=True, text=True, env=env, timeout=600
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert not layer_mounts(Path("/proc/self/mountinfo").read_text(), Path("/tmp")), "go test left a mount"
