"""The ssh provider's up-front check, from host facts to one line per problem (pure), and
provision's decisions on a fake host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.engines.group_replication import rootfs
from clusterbench.hosts.ssh import SshHost, SshTarget, on_hosts
from clusterbench.providers import provision as prov
from clusterbench.providers.ssh_check import (
    HostFacts,
    busy_ports,
    files_for,
    packages_for,
    parse_probe,
    ports_for,
    problems,
)
from clusterbench.spec.topology import Topology, topology_from_data


def topo(**extra: Any) -> Topology:
    hosts = [
        {"name": "db1", "address": "10.0.0.11", "roles": ["db"]},
        {"name": "db2", "address": "10.0.0.12", "roles": ["db"]},
        {"name": "db3", "address": "10.0.0.13", "roles": ["db", "client"]},
        {"name": "lb", "address": "10.0.0.2", "roles": ["balancer"]},
    ]
    return topology_from_data({"provider": {"kind": "ssh"}, "hosts": hosts, **extra}, "t")


def good(machine: str, **kw: Any) -> HostFacts:
    return HostFacts(uid=0, os="debian", pretty="Debian GNU/Linux 12", machine=machine, complete=True, **kw)


def all_good(t: Topology) -> dict[str, HostFacts | Exception]:
    return {h.name: good(f"m-{h.name}") for h in t.hosts}


PROBE_OUTPUT = """uid=1000
sudo=no
os=ubuntu
os_like=debian
pretty=Ubuntu 24.04 LTS
machine=abc/net:[4026531840]
missing=galera-4
missing=rsync
listen=0.0.0.0:22
listen=[::]:22
listen=127.0.0.53%lo:53
listen=10.0.0.11:3306
end=1
"""


def test_parse_probe() -> None:
    f = parse_probe(PROBE_OUTPUT)
    assert (f.uid, f.sudo, f.os, f.os_like, f.machine) == (
        1000,
        False,
        "ubuntu",
        "debian",
        "abc/net:[4026531840]",
    )
    assert f.missing == ["galera-4", "rsync"] and f.complete
    assert f.listening == ["0.0.0.0:22", "[::]:22", "127.0.0.53%lo:53", "10.0.0.11:3306"]
    assert not parse_probe("uid=0\n").complete


def test_busy_ports_counts_wildcards_and_own_address_only() -> None:
    listening = ["0.0.0.0:4567", "127.0.0.1:3306", "10.0.0.99:4444", "10.0.0.11:9200", "[::]:4568", "*:22"]
    assert busy_ports(listening, "10.0.0.11", [3306, 4444, 4567, 4568, 9200]) == [
        "4567 (0.0.0.0:4567)",
        "4568 ([::]:4568)",
        "9200 (10.0.0.11:9200)",
    ]


def test_packages_and_ports_by_role() -> None:
    t = topo(balancer={"port": 6033})
    db3 = t.hosts[2]
    assert packages_for(t, db3) == sorted(
        {
            "mariadb-server",
            "mariadb-client",
            "galera-4",
            "rsync",
            "socat",
            "iproute2",
            "iptables",
            "sysbench",
            "gcc",
            "libc6-dev",
            "libmariadb-dev",
            "python3",
        }  # fmt: skip
    )
    assert packages_for(t, t.hosts[3]) == ["haproxy", "iproute2", "python3", "socat"]
    assert ports_for(t, db3) == [3306, 4444, 4567, 4568, 9200] and ports_for(t, t.hosts[3]) == [6033]
    t2 = topo(mariadb={"sst_method": "mariabackup"})
    assert "mariadb-backup" in packages_for(t2, t2.hosts[0])


def test_a_clean_inventory_has_no_problems() -> None:
    t = topo()
    assert problems(t, all_good(t)) == []


def test_every_problem_is_one_line_naming_the_host() -> None:
    t = topo()
    facts = all_good(t)
    facts["db1"] = HostFacts(
        uid=1000, sudo=False, os="centos", pretty="CentOS Stream 9", machine="m1", missing=["galera-4"],
        listening=["0.0.0.0:4567"], complete=True,
    )  # fmt: skip
    facts["db2"] = RuntimeError("host db2 (root@10.0.0.12:22): unreachable (Connection refused); check ...")
    lines = problems(t, facts)
    assert lines == [
        "host db1 (10.0.0.11): user root is not root and `sudo -n` needs a password; allow passwordless "
        "sudo for that user or log in as root (hosts.user)",
        "host db1 (10.0.0.11): CentOS Stream 9 is not Debian or Ubuntu; clusterbench uses Debian's packages "
        "and paths",
        "host db1 (10.0.0.11): missing packages galera-4; "
        "run `clusterbench provision -f FILE` to install them",
        "host db1 (10.0.0.11): port(s) already in use: 4567 (0.0.0.0:4567); stop what listens there or use "
        "another machine",
        "host db2 (root@10.0.0.12:22): unreachable (Connection refused); check ...",
    ]
    # provision is the cure for missing packages: it runs the same check without that line.
    assert not any("missing packages" in ln for ln in problems(t, facts, check_packages=False))


def test_roles_that_cannot_share_a_machine() -> None:
    t = topo()
    facts = all_good(t)
    facts["db3"] = good("m-db1")  # same machine as db1 under another name
    assert problems(t, facts) == [
        "hosts db1 and db3 are one machine: 2 db nodes there would share ports 3306, 4444, 4567, 4568 "
        "and 9200; give each db node its own machine"
    ]
    # A node and a balancer on one machine: fine on another port, refused on the node's 3306.
    t = topo()
    facts = all_good(t)
    facts["lb"] = good("m-db1")
    assert problems(t, facts) == [
        "hosts db1 and lb are one machine: a db node and a balancer there both need port 3306; "
        "set balancer.port to a free port such as 6033"
    ]
    t = topo(balancer={"port": 6033})
    facts = all_good(t)
    facts["lb"] = good("m-db1")
    assert problems(t, facts) == []


class RecordingSsh(SshHost):
    """An SshHost that never connects: records the command lines it would run."""

    def __init__(self, user: str = "root") -> None:
        super().__init__(SshTarget("h", "10.0.0.1", user=user))
        self.commands: list[str] = []
        self.rc = 0

    def _exec(self, command: str, input: bytes | None, timeout: float) -> tuple[int, bytes, bytes]:
        self.commands.append(command)
        return self.rc, b"", b"E: boom\n" if self.rc else b""


def test_command_lines_use_sudo_for_other_users_and_quote_everything() -> None:
    root, alice = RecordingSsh(), RecordingSsh("alice")
    assert root.command_line(["echo", "a b"]) == "echo 'a b'"
    assert alice.command_line(["echo", "a b"], {"X": "1 2"}) == "sudo -n -- env 'X=1 2' echo 'a b'"
    assert alice.command_line(["cat", "/proc/1/stat"], sudo=False) == "cat /proc/1/stat"
    alice.put_file(Path("/x/y"), "secret", mode=0o600, owner="mysql")
    assert alice.commands[0].startswith("sudo -n -- sh -c ") and alice.commands[0].endswith(
        "sh /x/y 600 mysql"
    )


def test_on_hosts_returns_each_result_or_exception_in_order() -> None:
    def f(x: int) -> int:
        if x == 2:
            raise ValueError("two")
        return x * 10

    out = on_hosts([1, 2, 3], f)
    assert [o[0] for o in out] == [1, 2, 3] and out[0][1] == 10 and out[2][1] == 30
    assert isinstance(out[1][1], ValueError)


def test_provision_installs_only_what_is_missing() -> None:
    t = topo()
    h = RecordingSsh()
    out = prov.provision_host(t, t.hosts[0], h, lambda _h, _p: good("m", missing=["galera-4", "rsync"]))
    assert out.line() == "host db1: installed galera-4, rsync"
    assert len(h.commands) == 1 and h.commands[0].endswith("sh galera-4 rsync")
    assert "policy-rc.d" in h.commands[0]
    h2 = RecordingSsh()
    assert (
        prov.provision_host(t, t.hosts[0], h2, lambda _h, _p: good("m")).line()
        == "host db1: nothing to install"
    )
    assert h2.commands == []
    h3 = RecordingSsh()
    h3.rc = 100
    out = prov.provision_host(t, t.hosts[0], h3, lambda _h, _p: good("m", missing=["x"]))
    assert out.error == "host db1 (10.0.0.11): apt-get failed (exit 100): E: boom; run it there by hand"
    nosudo = prov.provision_host(
        t, t.hosts[0], RecordingSsh("alice"), lambda _h, _p: HostFacts(uid=1000, sudo=False, complete=True)
    )
    assert nosudo.error is not None and "`sudo -n` needs a password" in nosudo.error


def test_leftovers_are_processes_naming_our_directory_and_their_descendants() -> None:
    from clusterbench.hosts.procs import parse_listing, strays

    def stat(pid: int, comm: str, state: str = "S") -> str:
        return f"{pid} ({comm}) {state} " + " ".join(["0"] * 18) + f" {pid * 10} 0"

    n2 = "/var/lib/clusterbench/remote/prod/n2"
    listing = "\n".join(
        [
            f"1\t0\t{stat(1, 'init')}\t/sbin/init ",
            f"100\t1\t{stat(100, 'mariadbd')}\tmariadbd --defaults-file={n2}/my.cnf ",
            f"101\t100\t{stat(101, 'sh')}\tsh /usr/bin/wsrep_sst_rsync --role joiner ",
            f"102\t101\t{stat(102, 'rsync')}\trsync --daemon ",
            f"103\t101\t{stat(103, 'rsync', 'Z')}\t",
            f"200\t1\t{stat(200, 'mariadbd')}\tmariadbd --defaults-file={n2}0/my.cnf ",
            f"300\t1\t{stat(300, 'sleep')}\tsleep 300 ",
            f"400\t1\t{stat(400, 'cb-faultfs')}\tcb-faultfs {n2}/data.faultfs {n2}/data ",
            "garbage",
        ]
    )
    entries = parse_listing(listing)
    found = strays(entries, "/var/lib/clusterbench/remote/prod/n2/")
    assert [(e.pid, e.start_ticks) for e in found] == [(100, 1000), (101, 1010), (102, 1020)]
    # The power-loss layer mounted at the datadir outlives the server's starts: not a stray.
    assert 400 not in [e.pid for e in found]
    # A process we still track (and its children) is not a stray.
    assert [e.pid for e in strays(entries, "/var/lib/clusterbench/remote/prod/n2/", keep=[101])] == [100]


def test_group_replication_hosts_need_the_rootfs_not_mariadb_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLUSTERBENCH_ROOTFS", str(tmp_path / "mysql"))
    t = topo(engine={"kind": "group_replication"}, balancer={"port": 6033})
    db3 = t.hosts[2]
    assert packages_for(t, db3) == sorted(
        {
            "mariadb-client",
            "util-linux",
            "mount",
            "rsync",
            "socat",
            "iproute2",
            "iptables",
            "python3",
            "sysbench",
            "gcc",
            "libc6-dev",
            "libmariadb-dev",
        }  # fmt: skip
    )
    assert ports_for(t, db3) == [3306, 9200, 33061]
    # Either the rootfs there (by default at this machine's path) or the host's own mysqld with
    # group_replication.so: the probe reads "a|b" as one of them.
    mysqld = str(tmp_path / "mysql" / rootfs.MYSQLD.lstrip("/"))
    either = f"{mysqld}|/usr/lib/mysql/plugin/group_replication.so"
    assert list(files_for(t, db3)) == [either] and files_for(t, t.hosts[3]) == {}
    facts = all_good(t)
    probed = parse_probe(f"uid=0\nos=debian\nabsent={either}\nend=1\n")
    probed.machine = "m-db2"
    facts["db2"] = probed
    assert problems(t, facts) == [
        f"host db2 (10.0.0.12): missing {mysqld} or /usr/lib/mysql/plugin/group_replication.so; run "
        "`clusterbench provision -f FILE` for MySQL with Group Replication on that host"
    ]
    # provider.rootfs names the path on the remote machines.
    t2 = topo(engine={"kind": "group_replication"}, provider={"kind": "ssh", "rootfs": "/srv/mysql-root"})
    assert list(files_for(t2, t2.hosts[0])) == [
        "/srv/mysql-root/usr/sbin/mysqld|/usr/lib/mysql/plugin/group_replication.so"
    ]
    facts = all_good(t)
    facts["db1"] = good("m-db1", listening=["0.0.0.0:33061"])
    assert problems(t, facts) == [
        "host db1 (10.0.0.11): port(s) already in use: 33061 (0.0.0.0:33061); stop what listens there "
        "or use another machine"
    ]
