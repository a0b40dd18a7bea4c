"""Where a Group Replication member's mysqld comes from on a machine reached over SSH.

Two sources, tried in this order, per db host:

- the host's own: a MySQL (not MariaDB) server at /usr/sbin/mysqld whose plugin directory has
  group_replication.so (Ubuntu's mysql-server, Oracle's packages). It runs with "/" as its root:
  the node directory is still bind-mounted at NODE_MOUNT (/cb) in the member's private mount
  namespace, so the same configuration works; `provision` creates the empty /cb mount point.
- the MySQL root file system (rootfs.py) at `provider.rootfs` on that host (default: the same
  path as on this machine). `provision` copies this machine's build there (a tar stream over the
  SSH connection, verified with the build's stamp file `<rootfs>.json`; a host that has the same
  build keeps it), or, when this machine has none, runs debootstrap on the host when the host
  reaches a Debian mirror.

`prepare()` is what `provision` runs on a db host; `resolve()` is what a member asks at run time
(the host's own mysqld when it has one, else the rootfs).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from clusterbench.engines.base import ProvisionHost as Host
from clusterbench.engines.group_replication import rootfs
from clusterbench.errors import PreflightError
from clusterbench.hosts.base import CommandResult, Machine, key_values

OWN_MYSQLD = "/usr/sbin/mysqld"
OWN_GR_PLUGIN = "/usr/lib/mysql/plugin/group_replication.so"
OWN_ROOT = Path("/")
COPY_TIMEOUT = 3600.0

# One round trip: what the host has. $1: the rootfs path there. Runs as root (sudo -n).
PROBE = r"""
r=$1
if [ -x /usr/sbin/mysqld ] && [ -e /usr/lib/mysql/plugin/group_replication.so ]; then
  echo "own=$(/usr/sbin/mysqld --version 2>&1 | head -n 1)"
fi
if [ -e "$r/usr/sbin/mysqld" ]; then echo rootfs=1
elif [ -d "$r" ] && [ -n "$(ls -A "$r")" ]; then echo occupied=1; fi
[ -r "$r.json" ] && echo "stamp=$(tr -d '\n' < "$r.json")"
[ -e /cb ] && echo mount=1
if grep -qs '^/usr/sbin/mysqld (enforce)' /sys/kernel/security/apparmor/profiles; then
  echo apparmor=enforce
fi
command -v debootstrap >/dev/null 2>&1 && echo debootstrap=1
d=$(dirname "$r"); while [ ! -d "$d" ]; do d=$(dirname "$d"); done
echo "free_kib=$(df -Pk "$d" | awk 'NR==2 {print $4}')"
echo end=1
"""

# Run time: which root a member uses there, and its mysql user. $1: the rootfs path there.
RESOLVE = r"""
if [ -x /usr/sbin/mysqld ] && [ -e /usr/lib/mysql/plugin/group_replication.so ]; then r=/; else r=$1; fi
echo "root=$r"
[ -e "$r/usr/sbin/mysqld" ] || exit 0
grep '^mysql:' "$r/etc/passwd" | head -n 1 | sed 's/^/passwd=/'
grep '^mysql:' "$r/etc/group" | head -n 1 | sed 's/^/group=/'
"""

# Unpacks a tar stream from stdin into $1.partial, then renames it to $1 and writes the stamp
# ($2: its JSON) only when the tree is complete: a killed copy is never used.
EXTRACT = r"""
set -e
r=$1; p="$r.partial"
if [ -d "$r" ] && [ ! -e "$r/usr/sbin/mysqld" ] && [ -n "$(ls -A "$r")" ]; then
  echo "$r is not empty" >&2; exit 4
fi
rm -rf "$p"
mkdir -p "$p"
tar -x -p --numeric-owner -C "$p"
[ -e "$p/usr/sbin/mysqld" ] || { echo "the copy has no usr/sbin/mysqld" >&2; exit 3; }
rm -rf "$r"
mv "$p" "$r"
printf '%s\n' "$2" > "$r.json"
rm -f "$r.failed"
"""

# debootstrap on the host itself: $1 root, $2 mirror, $3 suite, $4 packages (comma-separated).
DEBOOTSTRAP = r"""
set -e
r=$1; p="$r.partial"
if ! command -v debootstrap >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
fi
if [ -d "$r" ] && [ -n "$(ls -A "$r")" ]; then echo "$r is not empty" >&2; exit 4; fi
rm -rf "$p"; mkdir -p "$(dirname "$r")"
t0=$(date +%s)
debootstrap --variant=minbase --include="$4" "$3" "$p" "$2" > "$r.build.log" 2>&1 \
  || { echo "debootstrap failed: $(tail -n 1 "$r.build.log")" >&2; exit 3; }
if grep -q '^mysql:' /etc/passwd; then
  uid=$(grep '^mysql:' /etc/passwd | cut -d: -f3); gid=$(grep '^mysql:' /etc/group | cut -d: -f3)
  chroot "$p" groupadd -r -g "$gid" mysql
  chroot "$p" useradd -r -u "$uid" -g mysql -M -d /nonexistent -s /usr/sbin/nologin mysql
else
  chroot "$p" groupadd -r mysql
  chroot "$p" useradd -r -g mysql -M -d /nonexistent -s /usr/sbin/nologin mysql
fi
mkdir -p "$p/cb"
v=$(chroot "$p" /usr/sbin/mysqld --version 2>&1 | sed -n 's/.*Ver \([^ ]*\).*/\1/p')
[ -n "$v" ] || { echo "mysqld in $p does not run" >&2; exit 3; }
rm -rf "$r"; mv "$p" "$r"
echo "version=$v"
echo "seconds=$(( $(date +%s) - t0 ))"
echo "bytes=$(du -sb "$r" | cut -f1)"
"""

_MYSQL_VERSION = re.compile(r"Ver (\d+)\.(\d+)\.(\S+)")


@dataclass
class HostMysql:
    """What a db host has (parsed PROBE output)."""

    own: str = ""  # first line of `/usr/sbin/mysqld --version` when it has group_replication.so
    rootfs: bool = False  # the rootfs's mysqld exists at the configured path
    occupied: bool = False  # something else (not empty, no mysqld) is at that path
    stamp: dict[str, Any] = field(default_factory=dict)  # the rootfs's <path>.json there
    mount: bool = False  # /cb exists
    apparmor: bool = False  # an enforcing AppArmor profile confines /usr/sbin/mysqld
    debootstrap: bool = False
    free_kib: int = -1
    complete: bool = False

    def own_usable(self) -> str | None:
        """The own mysqld's version when it is a MySQL 8 or later (GR with clone), else None."""
        m = _MYSQL_VERSION.search(self.own)
        if not m or "mariadb" in self.own.lower() or int(m.group(1)) < 8:
            return None
        return f"{m.group(1)}.{m.group(2)}.{m.group(3)}"


# probe lines whose presence alone says yes: key -> the HostMysql flag they set
_PROBE_FLAGS = {
    "rootfs": "rootfs",
    "occupied": "occupied",
    "mount": "mount",
    "apparmor": "apparmor",
    "debootstrap": "debootstrap",
    "end": "complete",
}


def parse_probe(text: str) -> HostMysql:
    f = HostMysql()
    for key, value in key_values(text):
        if key == "own":
            f.own = value
        elif key == "stamp":
            try:
                got = json.loads(value)
            except ValueError:
                got = {}
            f.stamp = got if isinstance(got, dict) else {}
        elif key == "free_kib" and value.isdigit():
            f.free_kib = int(value)
        elif key in _PROBE_FLAGS:
            setattr(f, _PROBE_FLAGS[key], True)
    return f


def same_build(stamp: dict[str, Any], local: rootfs.RootfsInfo) -> bool:
    """The stamp there describes the build here (same MySQL package, built at the same moment)."""
    try:
        return (
            str(stamp["mysql_version"]) == local.mysql_version
            and abs(float(stamp["built_at"]) - local.built_at) < 1e-3
        )
    except (KeyError, TypeError, ValueError):
        return False


@dataclass(frozen=True)
class Choice:
    """What provisioning does on one db host: `own` (use its mysqld), `reuse` (its rootfs),
    `copy` (send this machine's rootfs) or `debootstrap` (build one there)."""

    kind: str
    note: str = ""


def choose(
    facts: HostMysql,
    local: rootfs.RootfsInfo | None,
    local_problem: str | None,
    mirror_ok: Callable[[], bool],
    where: str,
    remote_root: Path,
) -> Choice:
    """Pure decision; raises PreflightError (one line naming the host and the next step)."""
    if not facts.complete:
        raise PreflightError(
            f"{where}: the MySQL check script did not finish; is /bin/sh there a POSIX shell?"
        )
    own = facts.own_usable()
    if own is not None:
        if facts.apparmor:
            raise PreflightError(
                f"{where}: AppArmor confines {OWN_MYSQLD} (mysql-server {own}) to its own paths; "
                f"run `aa-complain {OWN_MYSQLD}` there (package apparmor-utils) and provision again"
            )
        return Choice("own", own)
    if facts.rootfs:
        if local is not None and facts.stamp and not same_build(facts.stamp, local):
            there = facts.stamp.get("mysql_version", "?")
            return Choice(
                "reuse",
                f"a different build (MySQL {there}) than this machine's ({local.mysql_version}); "
                f"remove {remote_root} there to copy this one",
            )
        return Choice("reuse")
    if facts.occupied:
        raise PreflightError(
            f"{where}: {remote_root} exists there and is neither empty nor a MySQL root file system; "
            "remove it or set provider.rootfs to another path"
        )
    if local_problem is None and local is not None:
        need = local.size_bytes // 1024
        if facts.free_kib >= 0 and need and facts.free_kib < need + need // 10:
            raise PreflightError(
                f"{where}: {facts.free_kib // 1024} MiB free under {remote_root.parent}, the MySQL "
                f"root file system needs {need // 1024} MiB; free space or set provider.rootfs"
            )
        return Choice("copy")
    if mirror_ok():
        return Choice("debootstrap")
    raise PreflightError(
        f"{where}: no MySQL with Group Replication there (no {OWN_GR_PLUGIN}, no {remote_root}) and none "
        f"here to copy ({local_problem or 'no build stamp'}), and it reaches no Debian mirror; "
        "run `clusterbench rootfs build` here (or install mysql-server there), then provision again"
    )


def stamp_for(local: rootfs.RootfsInfo, remote_root: Path, origin: str) -> str:
    d = local.to_json()
    d["path"] = str(remote_root)
    d["copied_from"] = origin
    d["copied_at"] = time.time()
    return json.dumps(d, sort_keys=True)


# What a member never reads: the packages debootstrap downloaded and apt's package lists (a
# quarter of the tree, 147 of 643 MiB here). The directories themselves are copied.
NOT_COPIED = ("./var/cache/apt/archives/*.deb", "./var/lib/apt/lists/*_*")


def copy_rootfs(host: Host, local_root: Path, remote_root: Path, stamp: str) -> CommandResult:
    """Stream `tar -c` of the local tree (less NOT_COPIED) into EXTRACT on the host."""
    tar = subprocess.Popen(
        ["tar", "-c", "--numeric-owner", *(f"--exclude={x}" for x in NOT_COPIED), "-C", str(local_root), "."],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tar.stdout is not None
    try:
        res = host.stream_in(
            ["sh", "-c", EXTRACT, "sh", str(remote_root), stamp], tar.stdout, timeout=COPY_TIMEOUT
        )
    finally:
        tar.stdout.close()
        rc = tar.wait()
    if rc != 0 and res.ok:
        err = (tar.stderr.read().decode(errors="replace") if tar.stderr else "").strip()
        return CommandResult(res.argv, rc, res.stdout, f"tar here failed: {err[-200:]}")
    return res


def mirror_reachable(host: Host, mirror: str) -> bool:
    """The host can fetch the mirror's sid Release file (python3 is a db host package)."""
    script = (
        "import sys, urllib.request\n"
        "req = urllib.request.Request(sys.argv[1] + '/dists/' + sys.argv[2] + '/Release', method='HEAD')\n"
        "urllib.request.urlopen(req, timeout=8)\n"
    )
    res = host.run(["python3", "-c", script, mirror, rootfs.SUITE], timeout=20, check=False)
    return res.ok


def prepare(
    host: Host,
    where: str,
    remote_root: Path,
    local_root: Path,
    origin: str,
    mirror: str | None = None,
) -> str:
    """Make one db host able to run a member; returns one line saying which mysqld it will run."""
    res = host.run(["sh", "-c", PROBE, "sh", str(remote_root)], timeout=60, check=False)
    facts = parse_probe(res.stdout)
    local = rootfs.read_info(local_root)
    mirror = mirror or rootfs.FALLBACK_MIRROR
    choice = choose(
        facts, local, rootfs.problem(local_root), lambda: mirror_reachable(host, mirror), where, remote_root
    )
    if choice.kind == "own":
        if not facts.mount:
            host.run(["mkdir", "-m", "755", "-p", str(rootfs.NODE_MOUNT)], timeout=30)
        return f"{where}: Group Replication runs the host's own mysqld (MySQL {choice.note}, no chroot)"
    if choice.kind == "reuse":
        what = f"MySQL {facts.stamp['mysql_version']}" if "mysql_version" in facts.stamp else "built by hand"
        extra = f"; {choice.note}" if choice.note else ""
        return (
            f"{where}: Group Replication runs from the MySQL root file system already at "
            f"{remote_root} ({what}){extra}"
        )
    if choice.kind == "copy":
        assert local is not None
        t0 = time.monotonic()
        got = copy_rootfs(host, local_root, remote_root, stamp_for(local, remote_root, origin))
        if not got.ok:
            raise PreflightError(
                f"{where}: copying the MySQL root file system to {remote_root} failed "
                f"(exit {got.returncode}): {got.tail(1)}; check the space there and provision again"
            )
        took = time.monotonic() - t0
        return (
            f"{where}: copied the MySQL root file system (MySQL {local.mysql_version}, "
            f"{local.size_bytes / 2**20:.0f} MiB) to {remote_root} in {took:.1f} s"
        )
    got = host.run(
        ["sh", "-c", DEBOOTSTRAP, "sh", str(remote_root), mirror, rootfs.SUITE, ",".join(rootfs.PACKAGES)],
        timeout=COPY_TIMEOUT,
        check=False,
    )
    if not got.ok:
        raise PreflightError(
            f"{where}: debootstrap of the MySQL root file system at {remote_root} failed: {got.tail(1)}; "
            f"see {remote_root}.build.log there, or run `clusterbench rootfs build` here and provision again"
        )
    built = dict(line.split("=", 1) for line in got.stdout.splitlines() if "=" in line)
    info = rootfs.RootfsInfo(
        str(remote_root), built.get("version", "unknown"), rootfs.SUITE, mirror, time.time(),
        float(built.get("seconds", 0) or 0), int(built.get("bytes", 0) or 0),
    )  # fmt: skip
    host.run(["sh", "-c", 'printf "%s\\n" "$2" > "$1.json"', "sh", str(remote_root),
              json.dumps(info.to_json(), sort_keys=True)], timeout=30)  # fmt: skip
    return (
        f"{where}: built the MySQL root file system there with debootstrap "
        f"(MySQL {info.mysql_version}) at {remote_root}"
    )


@dataclass(frozen=True)
class Resolved:
    root: Path
    owner: tuple[int, int] | None


def parse_resolve(text: str) -> Resolved:
    root = OWN_ROOT
    passwd = group = ""
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if key == "root" and sep:
            root = Path(value)
        elif key == "passwd" and sep:
            passwd = value
        elif key == "group" and sep:
            group = value
    return Resolved(root, rootfs.parse_passwd_entry(passwd, group))


def resolve(host: Machine, remote_root: Path) -> Resolved:
    res = host.run(["sh", "-c", RESOLVE, "sh", str(remote_root)], timeout=30, check=False)
    return parse_resolve(res.stdout)


def provenance(root: Path, read: Callable[[Path], str | None]) -> dict[str, str]:
    """A member's `rootfs*` provenance, read on its own host: the host's own mysqld, or the
    rootfs's stamp (and where a copy came from)."""
    if str(PurePosixPath(root)) == "/":
        return {"rootfs": "/", "mysqld_source": f"the host's own {OWN_MYSQLD}"}
    text = read(rootfs.info_path(root))
    try:
        d = json.loads(text) if text else None
    except ValueError:
        d = None
    if not isinstance(d, dict):
        return {"rootfs": str(root), "mysqld_source": "rootfs (no stamp)"}
    out = rootfs.rootfs_provenance_of(rootfs.RootfsInfo.from_json(d))
    out["rootfs"] = str(root)
    if d.get("copied_from"):
        out["mysqld_source"] = f"rootfs copied from {d['copied_from']}"
    else:
        out["mysqld_source"] = "rootfs built by debootstrap"
    return out
