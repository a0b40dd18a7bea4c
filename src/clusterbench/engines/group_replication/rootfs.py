"""The root file system MySQL Group Replication runs from.

Debian 12 ships no MySQL. Debian's unstable suite has MySQL 9.x with `group_replication.so`, but
its packages need a newer libc and libstdc++ than bookworm's, so they live in a root file system
of their own, made once by debootstrap, and `mysqld` runs chrooted into it (RECIPES §11).

Layout (the default place is fixed, independent of CLUSTERBENCH_HOME, so that test sessions with
a home of their own reuse the one build; CLUSTERBENCH_ROOTFS overrides it):

    /var/lib/clusterbench/rootfs/mysql/              the root file system
    /var/lib/clusterbench/rootfs/mysql/cb/           empty: each member bind-mounts its node directory here
    /var/lib/clusterbench/rootfs/mysql.json          what was built: MySQL version, mirror, when, how long
    /var/lib/clusterbench/rootfs/mysql.failed        one line: why the last build failed (removed on success)
    /var/lib/clusterbench/rootfs/mysql.partial/      a build in progress (never used as a rootfs)

The unstable suite changes daily: the MySQL version is recorded, never pinned.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ROOTFS = Path("/var/lib/clusterbench/rootfs/mysql")
SUITE = "sid"
PACKAGES = ("mysql-server-core", "mysql-client-core")
# Where a member's node directory appears inside the rootfs (one bind mount per mysqld, in a
# mount namespace of its own, so members never see each other's files).
NODE_MOUNT = Path("/cb")
MYSQLD = "/usr/sbin/mysqld"
GR_PLUGIN = "usr/lib/mysql/plugin/group_replication.so"
CLONE_PLUGIN = "usr/lib/mysql/plugin/mysql_clone.so"
FALLBACK_MIRROR = "http://deb.debian.org/debian"

_VERSION_RE = re.compile(r"Ver (\S+)")


def rootfs_dir() -> Path:
    return Path(os.environ.get("CLUSTERBENCH_ROOTFS", str(DEFAULT_ROOTFS)))


def _sibling(root: Path, suffix: str) -> Path:
    return root.with_name(root.name + suffix)


def info_path(root: Path) -> Path:
    return _sibling(root, ".json")


def failed_path(root: Path) -> Path:
    return _sibling(root, ".failed")


@dataclass(frozen=True)
class RootfsInfo:
    path: str
    mysql_version: str  # e.g. "9.7.4-2"
    suite: str
    mirror: str
    built_at: float
    build_seconds: float
    size_bytes: int

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)

    @staticmethod
    def from_json(d: dict[str, object]) -> RootfsInfo:
        return RootfsInfo(
            path=str(d["path"]),
            mysql_version=str(d["mysql_version"]),
            suite=str(d.get("suite", SUITE)),
            mirror=str(d.get("mirror", "")),
            built_at=float(d.get("built_at", 0.0)),  # type: ignore[arg-type]
            build_seconds=float(d.get("build_seconds", 0.0)),  # type: ignore[arg-type]
            size_bytes=int(d.get("size_bytes", 0)),  # type: ignore[call-overload]
        )


def parse_mysqld_version(text: str) -> str | None:
    """'/usr/sbin/mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))' -> '9.7.4-2'."""
    m = _VERSION_RE.search(text)
    return m.group(1) if m else None


def problem(root: Path) -> str | None:
    """None when `root` is a usable rootfs; else one line saying what is wrong and how to fix it."""
    how = "build it with `make setup` or `clusterbench rootfs build`"
    if not (root / MYSQLD.lstrip("/")).exists():
        why = ""
        failed = failed_path(root)
        if failed.exists():
            why = f" (the last build failed: {failed.read_text().strip()})"
        return f"the MySQL root file system for Group Replication is missing at {root}{why}; {how}"
    for rel, what in ((GR_PLUGIN, "group_replication.so"), (CLONE_PLUGIN, "mysql_clone.so")):
        if not (root / rel).exists():
            return f"{root} has mysqld but no {what}; remove it and {how}"
    if uid_gid(root) is None:
        return f"{root} has no mysql user; remove it and {how}"
    return None


def read_info(root: Path) -> RootfsInfo | None:
    try:
        return RootfsInfo.from_json(json.loads(info_path(root).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def rootfs_provenance(root: Path) -> dict[str, str]:
    """Where a member's mysqld came from, for a run's provenance: Debian's unstable suite changes
    daily, so the package version and the day the rootfs was built say which MySQL ran."""
    info = read_info(root)
    if info is None:
        return {"rootfs": str(root)}
    return rootfs_provenance_of(info)


def rootfs_provenance_of(info: RootfsInfo) -> dict[str, str]:
    built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(info.built_at)) if info.built_at else ""
    return {
        "rootfs": info.path,
        "rootfs_package": f"mysql-server-core {info.mysql_version}",
        "rootfs_suite": f"{info.suite} from {info.mirror}" if info.mirror else info.suite,
        "rootfs_built_at": built,
    }


def parse_passwd_entry(passwd: str, group: str, user: str = "mysql") -> tuple[int, int] | None:
    """The numeric uid and gid of `user` in passwd/group file texts (the rootfs's own)."""
    uid = gid = None
    for line in passwd.splitlines():
        f = line.split(":")
        if len(f) >= 4 and f[0] == user:
            uid, gid = int(f[2]), int(f[3])
    if uid is None or gid is None:
        return None
    return uid, gid


def uid_gid(root: Path) -> tuple[int, int] | None:
    """The mysql user of the rootfs: who the chrooted mysqld runs as and owns the node files."""
    try:
        return parse_passwd_entry((root / "etc/passwd").read_text(), (root / "etc/group").read_text())
    except OSError:
        return None


def apt_mirror(sources_list: str = "", deb822: list[str] | None = None) -> str | None:
    """The Debian mirror apt already uses: the first `deb` URI of a Debian suite that is not the
    security archive, from one-line sources.list text or deb822 `.sources` texts."""
    for text in deb822 or []:
        for stanza in re.split(r"\n\s*\n", text):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line:
                    continue
                k, v = line.split(":", 1)
                fields[k.strip().lower()] = v.strip()
            if "deb" not in fields.get("types", "").split() or "disabled" in fields.get("enabled", ""):
                continue
            for uri in fields.get("uris", "").split():
                if "security" not in uri and "/debian" in uri:
                    return uri.rstrip("/")
    for line in sources_list.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "deb":
            uri = next((p for p in parts[1:] if "://" in p), "")
            if uri and "security" not in uri and "/debian" in uri:
                return uri.rstrip("/")
    return None


def host_mirror() -> str:
    """The mirror this machine's apt uses (deb.debian.org when none can be read)."""
    etc = Path("/etc/apt")
    try:
        sources = (etc / "sources.list").read_text()
    except OSError:
        sources = ""
    deb822 = []
    d = etc / "sources.list.d"
    if d.is_dir():
        for p in sorted(d.glob("*.sources")):
            try:
                deb822.append(p.read_text())
            except OSError:
                continue
    return apt_mirror(sources, deb822) or FALLBACK_MIRROR


def mysqld_version(root: Path) -> str | None:
    try:
        cp = subprocess.run(
            ["chroot", str(root), MYSQLD, "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_mysqld_version(cp.stdout + cp.stderr)


def _du_bytes(root: Path) -> int:
    cp = subprocess.run(["du", "-sb", str(root)], capture_output=True, text=True, check=False)
    try:
        return int(cp.stdout.split()[0])
    except (IndexError, ValueError):
        return 0


def _add_mysql_user(root: Path) -> None:
    """mysql-server-core creates no user (mysql-server's maintainer scripts do). Give the rootfs a
    mysql user with the host's mysql uid/gid when the host has one, so files look the same from
    both sides; else a system id chosen inside the rootfs."""
    if uid_gid(root) is not None:
        return
    ids: tuple[int, int] | None = None
    try:
        ids = parse_passwd_entry(Path("/etc/passwd").read_text(), Path("/etc/group").read_text())
    except OSError:
        ids = None
    chroot = ["chroot", str(root)]
    if ids is not None:
        subprocess.run(
            [*chroot, "groupadd", "-r", "-g", str(ids[1]), "mysql"], check=True, capture_output=True
        )
        useradd = ["useradd", "-r", "-u", str(ids[0]), "-g", "mysql"]
    else:
        subprocess.run([*chroot, "groupadd", "-r", "mysql"], check=True, capture_output=True)
        useradd = ["useradd", "-r", "-g", "mysql"]
    subprocess.run(
        [*chroot, *useradd, "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", "mysql"],
        check=True,
        capture_output=True,
    )


class RootfsBuildError(Exception):
    """One line: why the rootfs could not be built."""


def build(root: Path | None = None, mirror: str | None = None, log: Path | None = None) -> RootfsInfo:
    """Build the rootfs with debootstrap unless a usable one is there (then reuse it). The build
    goes to `<root>.partial` and is renamed only when complete, so a killed build is never used."""
    root = root or rootfs_dir()
    if problem(root) is None:
        info = read_info(root)
        if info is not None:
            return info
        # Built by hand or by an older version: describe it once.
        version = mysqld_version(root) or "unknown"
        info = RootfsInfo(str(root), version, SUITE, "", root.stat().st_mtime, 0.0, _du_bytes(root))
        info_path(root).write_text(json.dumps(info.to_json(), indent=2) + "\n")
        return info
    if shutil.which("debootstrap", path="/usr/sbin:/usr/bin:/sbin:/bin") is None:
        raise _fail(root, "debootstrap is not installed (apt-get install debootstrap)")
    if root.exists():
        raise _fail(root, f"{root} exists but is not a usable rootfs ({problem(root)}); remove it first")
    source = mirror or host_mirror()
    partial = _sibling(root, ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    root.parent.mkdir(parents=True, exist_ok=True)
    log = log or _sibling(root, ".build.log")
    t0 = time.monotonic()
    argv = [
        "debootstrap",
        "--variant=minbase",
        f"--include={','.join(PACKAGES)}",
        SUITE,
        str(partial),
        source,
    ]
    with open(log, "w") as out:
        try:
            cp = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=1800, check=False)
        except subprocess.TimeoutExpired:
            raise _fail(root, f"debootstrap did not finish in 30 minutes; see {log}") from None
    if cp.returncode != 0:
        last = _last_line(log)
        raise _fail(
            root, f"debootstrap {SUITE} from {source} failed (exit {cp.returncode}): {last}; see {log}"
        )
    try:
        _add_mysql_user(partial)
    except subprocess.CalledProcessError as exc:
        raise _fail(root, f"could not add the mysql user to the rootfs: {exc.stderr!r}") from None
    (partial / NODE_MOUNT.relative_to("/")).mkdir(mode=0o755, exist_ok=True)
    bad = problem(partial)
    if bad is not None:
        raise _fail(root, bad)
    got = mysqld_version(partial)
    if got is None:
        raise _fail(root, f"mysqld in {partial} does not run (`chroot {partial} {MYSQLD} --version` failed)")
    partial.rename(root)
    info = RootfsInfo(
        path=str(root),
        mysql_version=got,
        suite=SUITE,
        mirror=source,
        built_at=time.time(),
        build_seconds=round(time.monotonic() - t0, 1),
        size_bytes=_du_bytes(root),
    )
    info_path(root).write_text(json.dumps(info.to_json(), indent=2) + "\n")
    failed_path(root).unlink(missing_ok=True)
    return info


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def _fail(root: Path, why: str) -> RootfsBuildError:
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        failed_path(root).write_text(time.strftime("%Y-%m-%d ") + why + "\n")
    except OSError:
        pass
    return RootfsBuildError(why)


def template_dir(root: Path, version: str) -> Path:
    """An initialized datadir for this rootfs's MySQL, made once: members of a local cluster start
    from copies of it instead of running `mysqld --initialize` (~5 s) at every `up`."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", version)
    return _sibling(root, f".datadir-{safe}")


TEMPLATE_CNF = """[mysqld]
user=mysql
datadir={mount}/data
log-error={mount}/error.log
secure_file_priv={mount}
mysqlx=OFF
"""


def ensure_template(root: Path, version: str) -> Path:
    """The initialized datadir template (built now if missing: `mysqld --initialize-insecure`,
    chrooted, no network, no accounts; the accounts come per cluster at the first start)."""
    tpl = template_dir(root, version)
    if (tpl / "mysql.ibd").exists():
        return tpl
    ids = uid_gid(root)
    if ids is None:
        raise RootfsBuildError(problem(root) or f"{root} has no mysql user")
    build = _sibling(tpl, f".partial-{os.getpid()}")
    shutil.rmtree(build, ignore_errors=True)
    (build / "data").mkdir(parents=True)
    (build / "my.cnf").write_text(TEMPLATE_CNF.format(mount=NODE_MOUNT))
    os.chown(build, *ids)
    os.chown(build / "data", *ids)
    script = (
        'mount --bind "$1" "$2{m}" && '
        'exec chroot "$2" {mysqld} --defaults-file={m}/my.cnf --initialize-insecure'
    )
    cp = subprocess.run(
        [
            "unshare", "--mount", "--propagation", "private", "sh", "-c",
            script.format(m=NODE_MOUNT, mysqld=MYSQLD), "sh", str(build), str(root),
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if cp.returncode != 0 or not (build / "data" / "mysql.ibd").exists():
        said = _last_line(build / "error.log") or (cp.stderr.strip().splitlines() or [""])[-1]
        shutil.rmtree(build, ignore_errors=True)
        raise RootfsBuildError(f"mysqld --initialize for the datadir template failed: {said}")
    (build / "data" / "auto.cnf").unlink(missing_ok=True)
    try:
        (build / "data").rename(tpl)
    except OSError:
        if not (tpl / "mysql.ibd").exists():  # another `up` won the race: use its template
            raise
    shutil.rmtree(build, ignore_errors=True)
    return tpl
