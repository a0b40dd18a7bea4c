"""engines/group_replication/remote.py: which mysqld a db host reached over ssh runs, and how
`provision` gets it there. The decision is pure (fake host facts); the probe, copy and resolve
scripts run for real through a fake host that runs them on this machine, against directories
under tmp_path standing in for the remote paths."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import IO, Any

import pytest

from clusterbench.clock import SystemClock as Clock
from clusterbench.engines.base import Credentials, NodeSite
from clusterbench.engines.group_replication import remote, rootfs
from clusterbench.engines.group_replication.engine import GroupReplicationEngine
from clusterbench.errors import PreflightError
from clusterbench.hosts.base import CommandResult
from clusterbench.providers import provision as prov
from clusterbench.providers import ssh_check
from clusterbench.spec.topology import topology_from_data

WHERE = "host db1 (10.0.0.11)"
UBUNTU = "/usr/sbin/mysqld  Ver 8.0.40-0ubuntu0.24.04.1 for Linux on x86_64 ((Ubuntu))"
MARIADB = "/usr/sbin/mysqld  Ver 15.1 Distrib 10.11.6-MariaDB, for debian-linux-gnu (x86_64)"


class LocalShell:
    """A fake host: runs the commands on this machine (the remote paths are under tmp_path) and
    records them; `stream_in` feeds the stream to the command's stdin, like the ssh one."""

    remote = True

    def __init__(self, answers: dict[str, CommandResult] | None = None) -> None:
        self.commands: list[list[str]] = []
        self.streamed: list[list[str]] = []
        self.answers = answers or {}

    def run(
        self, argv: list[str], *, input: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> CommandResult:
        self.commands.append(argv)
        for key, res in self.answers.items():
            if key in " ".join(argv):
                return res
        cp = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout, check=False)
        res = CommandResult(tuple(argv), cp.returncode, cp.stdout, cp.stderr)
        assert res.ok or not check, res.stderr
        return res

    def stream_in(self, argv: list[str], source: IO[bytes], *, timeout: float) -> CommandResult:
        self.streamed.append(argv)
        cp = subprocess.run(argv, stdin=source, capture_output=True, timeout=timeout, check=False)
        return CommandResult(tuple(argv), cp.returncode, cp.stdout.decode(), cp.stderr.decode())

    def read_file(self, path: Path) -> str | None:
        return path.read_text() if path.exists() else None


def fake_rootfs(root: Path, built_at: float = 1795754542.25, version: str = "9.7.4-2") -> rootfs.RootfsInfo:
    """A small tree that `rootfs.problem` accepts, with its stamp beside it."""
    for rel in (rootfs.MYSQLD.lstrip("/"), rootfs.GR_PLUGIN, rootfs.CLONE_PLUGIN):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"fake {rel}\n")
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\nmysql:x:101:102::/nonexistent:/bin/false\n")
    (root / "etc/group").write_text("root:x:0:\nmysql:x:102:\n")
    (root / "cb").mkdir(exist_ok=True)
    info = rootfs.RootfsInfo(str(root), version, "sid", "http://deb.debian.org/debian", built_at, 29.7, 4096)
    rootfs.info_path(root).write_text(json.dumps(info.to_json()))
    assert rootfs.problem(root) is None
    return info


def facts(**kw: Any) -> remote.HostMysql:
    return remote.HostMysql(complete=True, **kw)


def never() -> bool:
    raise AssertionError("the mirror was asked although a choice was already made")


def test_own_mysqld_is_a_mysql_8_or_later_never_mariadb() -> None:
    assert facts(own=UBUNTU).own_usable() == "8.0.40-0ubuntu0.24.04.1"
    assert facts(own="mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))").own_usable() == "9.7.4-2"
    assert facts(own=MARIADB).own_usable() is None
    assert facts(own="mysqld  Ver 5.7.44 for Linux on x86_64").own_usable() is None
    assert facts().own_usable() is None


def test_parse_probe() -> None:
    stamp = json.dumps({"mysql_version": "9.7.4-2", "built_at": 1.5})
    f = remote.parse_probe(
        f"own={UBUNTU}\nrootfs=1\nstamp={stamp}\nmount=1\napparmor=enforce\nfree_kib=123\nend=1\n"
    )
    assert (f.own, f.rootfs, f.stamp, f.mount, f.apparmor, f.free_kib, f.complete) == (
        UBUNTU, True, {"mysql_version": "9.7.4-2", "built_at": 1.5}, True, True, 123, True,
    )  # fmt: skip
    assert remote.parse_probe("stamp={broken\n").stamp == {} and not remote.parse_probe("").complete


def test_choice_order_own_then_reuse_then_copy_then_debootstrap(tmp_path: Path) -> None:
    local = fake_rootfs(tmp_path / "here")
    r = Path("/srv/mysql")
    # The host's own mysqld wins, even over a rootfs already there.
    assert remote.choose(facts(own=UBUNTU, rootfs=True), local, None, never, WHERE, r) == remote.Choice(
        "own", "8.0.40-0ubuntu0.24.04.1"
    )
    # MariaDB's mysqld does not count; the same build there is reused as it is.
    same = facts(own=MARIADB, rootfs=True, stamp=local.to_json())
    assert remote.choose(same, local, None, never, WHERE, r) == remote.Choice("reuse")
    other = facts(rootfs=True, stamp={**local.to_json(), "mysql_version": "9.6.0-1", "built_at": 5.0})
    got = remote.choose(other, local, None, never, WHERE, r)
    assert got.kind == "reuse" and got.note == (
        "a different build (MySQL 9.6.0-1) than this machine's (9.7.4-2); "
        "remove /srv/mysql there to copy this one"
    )
    # None there: copy this machine's build; without one here, debootstrap there if a mirror answers.
    assert remote.choose(facts(free_kib=10**6), local, None, never, WHERE, r) == remote.Choice("copy")
    assert remote.choose(facts(), None, "missing", lambda: True, WHERE, r) == remote.Choice("debootstrap")


def test_bad_cases_are_one_line_naming_the_host_and_the_next_step(tmp_path: Path) -> None:
    local = fake_rootfs(tmp_path / "here")
    r = Path("/srv/mysql")

    def refused(f: remote.HostMysql, loc: rootfs.RootfsInfo | None, problem: str | None) -> str:
        with pytest.raises(PreflightError) as e:
            remote.choose(f, loc, problem, lambda: False, WHERE, r)
        assert "\n" not in str(e.value)
        return str(e.value)

    missing = f"the MySQL root file system for Group Replication is missing at {tmp_path / 'none'}"
    assert refused(facts(own=MARIADB), None, missing) == (
        f"{WHERE}: no MySQL with Group Replication there (no /usr/lib/mysql/plugin/group_replication.so, "
        f"no /srv/mysql) and none here to copy ({missing}), and it reaches no Debian mirror; run "
        "`clusterbench rootfs build` here (or install mysql-server there), then provision again"
    )
    assert refused(facts(own=UBUNTU, apparmor=True), local, None) == (
        f"{WHERE}: AppArmor confines /usr/sbin/mysqld (mysql-server 8.0.40-0ubuntu0.24.04.1) to its own "
        "paths; run `aa-complain /usr/sbin/mysqld` there (package apparmor-utils) and provision again"
    )
    assert refused(facts(occupied=True), local, None) == (
        f"{WHERE}: /srv/mysql exists there and is neither empty nor a MySQL root file system; "
        "remove it or set provider.rootfs to another path"
    )
    big = dataclasses.replace(local, size_bytes=650 * 2**20)
    assert refused(facts(free_kib=100 * 1024), big, None) == (
        f"{WHERE}: 100 MiB free under /srv, the MySQL root file system needs 650 MiB; "
        "free space or set provider.rootfs"
    )
    assert refused(remote.HostMysql(), local, None).endswith("is /bin/sh there a POSIX shell?")


def test_copy_then_reuse_through_the_real_scripts(tmp_path: Path) -> None:
    here = tmp_path / "here" / "mysql"
    local = fake_rootfs(here)
    there = tmp_path / "there" / "mysql"
    there.mkdir(parents=True)  # an empty directory is where the copy goes
    for rel in ("var/cache/apt/archives/mysql-server_9.7.4-2_amd64.deb", "var/lib/apt/lists/sid_Release"):
        (here / rel).parent.mkdir(parents=True, exist_ok=True)
        (here / rel).write_text("not needed by a member\n")
    (here / "var/lib/apt/lists/lock").write_text("")
    host = LocalShell()
    line = remote.prepare(host, WHERE, there, here, "controller-1")
    assert line.startswith(
        f"{WHERE}: copied the MySQL root file system (MySQL 9.7.4-2, 0 MiB) to {there} in "
    )
    assert len(host.streamed) == 1
    assert (there / rootfs.GR_PLUGIN).read_text() == f"fake {rootfs.GR_PLUGIN}\n"
    assert (there / "cb").is_dir() and not (tmp_path / "there" / "mysql.partial").exists()
    # apt's downloaded packages and lists stay behind; their directories, and the lock, come along
    assert list((there / "var/cache/apt/archives").iterdir()) == []
    assert [p.name for p in (there / "var/lib/apt/lists").iterdir()] == ["lock"]
    stamp = json.loads(rootfs.info_path(there).read_text())
    assert stamp["path"] == str(there) and stamp["copied_from"] == "controller-1"
    assert remote.same_build(stamp, local)
    # A second provision finds the same build: nothing is sent.
    again = LocalShell()
    assert remote.prepare(again, WHERE, there, here, "controller-1") == (
        f"{WHERE}: Group Replication runs from the MySQL root file system already at {there} (MySQL 9.7.4-2)"
    )
    assert again.streamed == []
    # Provenance of a member there names the copy.
    prov_ = remote.provenance(there, again.read_file)
    assert prov_["mysqld_source"] == "rootfs copied from controller-1"
    assert prov_["rootfs_package"] == "mysql-server-core 9.7.4-2" and prov_["rootfs"] == str(there)
    assert remote.provenance(Path("/"), again.read_file) == {
        "rootfs": "/", "mysqld_source": "the host's own /usr/sbin/mysqld",
    }  # fmt: skip


def test_a_directory_with_other_things_is_never_replaced(tmp_path: Path) -> None:
    here = tmp_path / "here" / "mysql"
    fake_rootfs(here)
    there = tmp_path / "there" / "mysql"
    there.mkdir(parents=True)
    (there / "precious").write_text("keep me\n")
    with pytest.raises(PreflightError, match="neither empty nor a MySQL root file system"):
        remote.prepare(LocalShell(), WHERE, there, here, "c")
    assert (there / "precious").read_text() == "keep me\n"
    # The extract script refuses on its own too (a race with the probe).
    tar = subprocess.Popen(["tar", "-c", "-C", str(here), "."], stdout=subprocess.PIPE)
    assert tar.stdout is not None
    res = LocalShell().stream_in(["sh", "-c", remote.EXTRACT, "sh", str(there), "{}"], tar.stdout, timeout=30)
    tar.wait()
    assert res.returncode == 4 and "is not empty" in res.stderr
    assert sorted(p.name for p in there.iterdir()) == ["precious"]


def test_nothing_here_nothing_there_no_mirror_is_one_line_and_nothing_is_copied(tmp_path: Path) -> None:
    there = tmp_path / "there" / "mysql"
    host = LocalShell({"urllib.request": CommandResult(("python3",), 1, "", "URLError")})
    with pytest.raises(PreflightError) as e:
        remote.prepare(host, WHERE, there, tmp_path / "none", "c")
    assert str(e.value).startswith(f"{WHERE}: no MySQL with Group Replication there") and "\n" not in str(
        e.value
    )
    assert host.streamed == [] and not there.exists()
    assert not any(remote.DEBOOTSTRAP in c for c in host.commands)


def test_provision_runs_the_engines_step_on_db_hosts_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "here" / "mysql"
    fake_rootfs(here)
    monkeypatch.setenv("CLUSTERBENCH_ROOTFS", str(here))
    there = tmp_path / "there" / "mysql"
    hosts = [
        {"name": "db1", "address": "10.0.0.11", "roles": ["db"]},
        {"name": "lb", "address": "10.0.0.2", "roles": ["balancer"]},
    ]
    t = topology_from_data(
        {
            "provider": {"kind": "ssh", "rootfs": str(there)},
            "engine": {"kind": "group_replication"},
            "hosts": hosts,
        },
        "t",
    )
    good = ssh_check.HostFacts(uid=0, os="debian", complete=True)
    db = prov.provision_host(t, t.hosts[0], LocalShell(), lambda _h, _p: good)  # type: ignore[arg-type]
    assert db.error is None and db.lines()[0] == "host db1: nothing to install"
    assert db.lines()[1].startswith("host db1 (10.0.0.11): copied the MySQL root file system")
    lb_host = LocalShell()
    lb = prov.provision_host(t, t.hosts[1], lb_host, lambda _h, _p: good)  # type: ignore[arg-type]
    assert lb.lines() == ["host lb: nothing to install"] and lb_host.commands == []
    # With nothing to copy and no mirror, the db host's outcome is the one-line error.
    monkeypatch.setenv("CLUSTERBENCH_ROOTFS", str(tmp_path / "none"))
    t2 = topology_from_data(
        {
            "provider": {"kind": "ssh", "rootfs": str(tmp_path / "empty")},
            "engine": {"kind": "group_replication"},
            "hosts": hosts,
        },
        "t",
    )
    no_mirror = LocalShell({"urllib.request": CommandResult(("python3",), 1, "", "")})
    bad = prov.provision_host(t2, t2.hosts[0], no_mirror, lambda _h, _p: good)  # type: ignore[arg-type]
    assert bad.error is not None and bad.error.startswith(
        "host db1 (10.0.0.11): no MySQL with Group Replication"
    )
    assert bad.lines() == [bad.error]


def test_members_resolve_their_hosts_root_once(tmp_path: Path) -> None:
    there = tmp_path / "there" / "mysql"
    fake_rootfs(there)
    t = topology_from_data(
        {
            "provider": {"kind": "ssh", "rootfs": str(there)},
            "engine": {"kind": "group_replication"},
            "balancer": {"kind": "none"},
            "hosts": [{"name": f"db{i}", "address": f"10.0.0.1{i}", "roles": ["db"]} for i in (1, 2, 3)],
        },
        "t",
    )
    eng = GroupReplicationEngine(t, root=tmp_path / "unused-here")
    host = LocalShell()
    creds = Credentials("a", "b", "c", "d", "e", "f")
    n1 = eng.make_node(NodeSite(1, host, tmp_path / "n1", creds, None, None, Clock()))  # type: ignore[arg-type]
    assert (n1.rootfs, n1.owner) == (there, (101, 102))
    eng.make_node(NodeSite(1, host, tmp_path / "n1", creds, None, None, Clock()))  # type: ignore[arg-type]
    assert len(host.commands) == 1  # asked once per host
    # The host's own mysqld: root "/", its own mysql user.
    own = remote.parse_resolve(
        "root=/\npasswd=mysql:x:112:118:MySQL Server,,,:/nonexistent:/bin/false\ngroup=mysql:x:118:\n"
    )
    assert own == remote.Resolved(Path("/"), (112, 118))
    # Neither: one line naming the node and the next step.
    empty = LocalShell({"sh -c": CommandResult(("sh",), 0, f"root={tmp_path / 'x'}\n", "")})
    with pytest.raises(PreflightError) as e:
        eng.make_node(NodeSite(2, empty, tmp_path / "n2", creds, None, None, Clock()))  # type: ignore[arg-type]
    assert str(e.value) == (
        f"node 2 (10.0.0.12): no MySQL with Group Replication there (neither "
        f"/usr/lib/mysql/plugin/group_replication.so nor {there}); run `clusterbench provision -f FILE`"
    )


def test_the_preflight_probe_reads_a_bar_as_either(tmp_path: Path) -> None:
    (tmp_path / "b").write_text("")
    cp = subprocess.run(
        ["sh", "-c", ssh_check._PROBE, "sh", f"{tmp_path}/a|{tmp_path}/b", f"{tmp_path}/a|{tmp_path}/c"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    got = ssh_check.parse_probe(cp.stdout)
    assert got.absent == [f"{tmp_path}/a|{tmp_path}/c"]


def test_provider_rootfs_must_be_an_absolute_path_below_root() -> None:
    from clusterbench.errors import InputError

    hosts = [{"name": "db1", "address": "10.0.0.11", "roles": ["db"]}]
    for bad in ("/", "relative/mysql", "/srv/../etc"):
        with pytest.raises(InputError) as e:
            topology_from_data({"provider": {"kind": "ssh", "rootfs": bad}, "hosts": hosts}, "t")
        want = f"provider.rootfs: '{bad}' must be an absolute path below / like {rootfs.DEFAULT_ROOTFS}"
        assert want in str(e.value)
    ok = topology_from_data(
        {"provider": {"kind": "ssh", "rootfs": "/srv/mysql/"}, "balancer": {"kind": "none"}, "hosts": hosts},
        "t",
    )
    assert ok.provider.rootfs == "/srv/mysql"
