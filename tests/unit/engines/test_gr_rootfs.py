"""engines/group_replication/rootfs.py: the pure parts (mirror, version, users, what is missing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterbench.engines.group_replication import rootfs

DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
"""


def test_mirror_from_deb822_skips_security() -> None:
    assert rootfs.apt_mirror("", [DEB822]) == "http://deb.debian.org/debian"
    security_only = DEB822.split("\n\n")[1]
    assert rootfs.apt_mirror("", [security_only]) is None


def test_mirror_from_one_line_sources() -> None:
    text = (
        "# comment\n"
        "deb http://security.debian.org/debian-security bookworm-security main\n"
        "deb [arch=amd64] http://mirror.example/debian/ bookworm main\n"
    )
    assert rootfs.apt_mirror(text) == "http://mirror.example/debian"
    assert rootfs.apt_mirror("deb-src http://x/debian bookworm main\n") is None


def test_mysqld_version_line() -> None:
    assert (
        rootfs.parse_mysqld_version("/usr/sbin/mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))\n")
        == "9.7.4-2"
    )
    assert rootfs.parse_mysqld_version("mysqld: error while loading shared libraries") is None


def test_mysql_user_of_a_passwd_file() -> None:
    passwd = "root:x:0:0:root:/root:/bin/bash\nmysql:x:102:105::/nonexistent:/usr/sbin/nologin\n"
    assert rootfs.parse_passwd_entry(passwd, "") == (102, 105)
    assert rootfs.parse_passwd_entry("root:x:0:0::/:/bin/sh\n", "") is None


def make_fake_rootfs(root: Path, *, plugins: bool = True, user: bool = True) -> None:
    (root / "usr/sbin").mkdir(parents=True)
    (root / "usr/sbin/mysqld").write_text("")
    (root / "etc").mkdir()
    (root / "etc/passwd").write_text("mysql:x:102:105::/nonexistent:/usr/sbin/nologin\n" if user else "")
    (root / "etc/group").write_text("mysql:x:105:\n")
    if plugins:
        (root / "usr/lib/mysql/plugin").mkdir(parents=True)
        (root / rootfs.GR_PLUGIN).write_text("")
        (root / rootfs.CLONE_PLUGIN).write_text("")


def test_problem_names_what_is_missing_and_how_to_build_it(tmp_path: Path) -> None:
    root = tmp_path / "mysql"
    msg = rootfs.problem(root)
    assert msg == (
        f"the MySQL root file system for Group Replication is missing at {root}; "
        "build it with `make setup` or `clusterbench rootfs build`"
    )
    rootfs.failed_path(root).write_text(
        "2026-01-01 debootstrap sid from http://m/debian failed (exit 1): E: no\n"
    )
    assert (
        "(the last build failed: 2026-01-01 debootstrap sid from http://m/debian failed (exit 1): E: no)"
        in (rootfs.problem(root) or "")
    )
    make_fake_rootfs(root)
    assert rootfs.problem(root) is None
    assert rootfs.uid_gid(root) == (102, 105)


@pytest.mark.parametrize(
    ("plugins", "user", "what"), [(False, True, "group_replication.so"), (True, False, "mysql user")]
)
def test_problem_with_an_incomplete_rootfs(tmp_path: Path, plugins: bool, user: bool, what: str) -> None:
    root = tmp_path / "mysql"
    make_fake_rootfs(root, plugins=plugins, user=user)
    assert what in (rootfs.problem(root) or "")


def test_build_reuses_a_usable_rootfs_and_reads_its_record(tmp_path: Path) -> None:
    root = tmp_path / "mysql"
    make_fake_rootfs(root)
    info = rootfs.RootfsInfo(str(root), "9.7.4-2", "sid", "http://m/debian", 1.0, 40.0, 650 << 20)
    rootfs.info_path(root).write_text(json.dumps(info.to_json()))
    assert rootfs.build(root) == info  # nothing is downloaded


def test_rootfs_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CLUSTERBENCH_ROOTFS", raising=False)
    assert rootfs.rootfs_dir() == Path("/var/lib/clusterbench/rootfs/mysql")
    monkeypatch.setenv("CLUSTERBENCH_ROOTFS", str(tmp_path / "r"))
    assert rootfs.rootfs_dir() == tmp_path / "r"


def test_provenance_names_the_package_suite_and_build_day(tmp_path: Path) -> None:
    root = tmp_path / "mysql"
    assert rootfs.rootfs_provenance(root) == {"rootfs": str(root)}
    info = rootfs.RootfsInfo(
        str(root), "9.7.4-2", "sid", "http://deb.debian.org/debian", 1767225600.0, 29.7, 1
    )
    rootfs.info_path(root).write_text(json.dumps(info.to_json()))
    assert rootfs.rootfs_provenance(root) == {
        "rootfs": str(root),
        "rootfs_package": "mysql-server-core 9.7.4-2",
        "rootfs_suite": "sid from http://deb.debian.org/debian",
        "rootfs_built_at": "2026-01-01T00:00:00Z",
    }
