"""A node's datadir on a small file system of its own, which the provider mounts on the node's
host at `up` (topology `datadir_fs` / `[[node]] datadir_size`) and unmounts at `down` (also after
a failed `up`, a killed run or lost state: every mount under the cluster's directory is ours):

- tmpfs: memory; the disk-full fault can fill it without ever touching the machine's own disk.
- loop: ext4 on a loop device over a sparse image file beside the datadir, with direct I/O (the
  image's pages are not cached twice). A block device of the node's alone: telemetry reports its
  busy time and throughput, and the throttle-disk fault slows it with the block I/O controller
  (faults/diskthrottle.py). `down` detaches it (every loop device over an image under the
  cluster's directory is ours).

The mount is made in the host's root mount namespace (locally: this machine's, not inside
`ip netns exec`, whose private mount namespace ends with the command); servers started later in
the node's network namespace see it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterbench.hosts.base import Machine

MIB = 1 << 20


def source_name(cluster: str, role: str) -> str:
    """What `mount` shows as the file system's source: ours, by name."""
    return f"cbdata-{cluster}-{role}"


def mount_argv(path: Path, size: str, source: str) -> list[str]:
    return ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", source, str(path)]


def _unescape(field: str) -> str:
    """Mount points in mountinfo escape space, tab, newline and backslash as octal."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts_under(mountinfo: str, root: Path) -> list[Path]:
    """Mount points at or below `root` in a /proc/self/mountinfo text, deepest first (pure)."""
    found = []
    prefix = str(root).rstrip("/") + "/"
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        point = _unescape(fields[4])
        if point == str(root) or point.startswith(prefix):
            found.append(Path(point))
    return sorted(set(found), key=lambda p: (-len(p.parts), str(p)))


def image_path(path: Path) -> Path:
    """The loop device's image file of a datadir: beside it."""
    return path.with_name(path.name + ".img")


def make(host: Machine, path: Path, size: str, source: str, fs: str = "tmpfs") -> None:
    """A file system of `size` at `path` (created, owned by mysql: the server runs as mysql):
    a tmpfs, or (fs 'loop') ext4 on a loop device."""
    host.mkdir(path, owner="mysql", mode=0o755)
    if fs == "loop":
        image = image_path(path)
        host.run(["truncate", "-s", size, str(image)])
        dev = host.run(["losetup", "--direct-io=on", "--find", "--show", str(image)]).stdout.strip()
        # no reserved blocks, no lazy init running in the background under the first trial
        host.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-L", source[-16:],
                  "-E", "lazy_itable_init=0,lazy_journal_init=0", dev], timeout=120)  # fmt: skip
        host.run(["mount", "-o", "noatime", dev, str(path)])
    else:
        host.run(mount_argv(path, size, source))
    host.run(["chown", "mysql:mysql", str(path)])


def loop_devices(listing: str, root: Path) -> list[str]:
    """The loop devices whose image file is at or below `root`, from `losetup -l -n -O NAME,BACK-FILE`
    (pure)."""
    prefix = str(root).rstrip("/") + "/"
    out = []
    for line in listing.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip().removesuffix(" (deleted)").startswith(prefix):
            out.append(parts[0])
    return out


def release(host: Machine, root: Path) -> list[str]:
    """Unmount every file system mounted at or below `root` on `host` (lazily if still busy), then
    detach the loop devices over images there."""
    done = []
    for point in mounts_under(host.read_file(Path("/proc/self/mountinfo")) or "", root):
        if not host.run(["umount", str(point)], check=False).ok:
            host.run(["umount", "-l", str(point)], check=False)
        done.append(f"unmounted {point}")
    listed = host.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], check=False)
    for dev in loop_devices(listed.stdout if listed.ok else "", root):
        host.run(["losetup", "-d", dev], check=False)
        done.append(f"detached {dev}")
    return done


@dataclass(frozen=True)
class DiskSpace:
    """Space on the file system holding a path, from `df -P -k`."""

    path: str
    mount: str
    total: int  # bytes
    free: int  # bytes available to the server

    @property
    def free_share(self) -> float:
        return self.free / self.total if self.total else 0.0

    @property
    def nearly_full(self) -> bool:
        """Under 10 % or under 32 MiB free: a few minutes of writes from full (a redo log or a
        gcache page alone is 32-64 MiB)."""
        return self.free_share < 0.10 or self.free < 32 * MIB

    def text(self) -> str:
        return f"{human(self.free)} of {human(self.total)} ({self.free_share:.0%})"


def human(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def parse_df(text: str, path: str) -> DiskSpace | None:
    """`df -P -k PATH` output -> DiskSpace (pure)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        return None
    f = lines[-1].split()
    if len(f) < 6 or not f[1].isdigit() or not f[3].isdigit():
        return None
    return DiskSpace(path=path, mount=" ".join(f[5:]), total=int(f[1]) * 1024, free=int(f[3]) * 1024)


def disk_space(host: Machine, path: Path) -> DiskSpace | None:
    """Free space on the file system of `path` on `host`; None when it cannot be read."""
    try:
        res = host.run(["df", "-P", "-k", str(path)], check=False, timeout=10)
    except Exception:  # noqa: BLE001 - status must show the rest
        return None
    return parse_df(res.stdout, str(path)) if res.ok else None


def fs_of_its_own(host: Machine, path: Path, max_bytes: int) -> bool:
    """Is `path` the mount point of a tmpfs or ext4 file system no larger than `max_bytes` (what
    `make` mounts)? The disk-full fault fills nothing else."""
    res = host.run(["stat", "-f", "-c", "%T %b %S", str(path)], check=False)
    fields = res.stdout.split()
    if not res.ok or len(fields) != 3 or fields[0] not in ("tmpfs", "ext2/ext3"):
        return False
    size = int(fields[1]) * int(fields[2])
    df = disk_space(host, path)
    return size <= max_bytes + MIB and df is not None and df.mount == str(path)


def describe(spaces: Sequence[DiskSpace]) -> list[str]:
    return [f"{s.path}: {s.text()}" for s in spaces]
