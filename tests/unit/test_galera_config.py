"""engines/galera/config.py: golden my.cnf, clustercheck script and client option files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from clusterbench.engines.galera import config
from clusterbench.engines.galera.config import (
    NodeConfig,
    provider_options,
    render_clustercheck,
    render_my_cnf,
)
from clusterbench.engines.server import render_client_cnf
from clusterbench.spec.topology import MariaDBSettings

DIR = Path("/var/lib/clusterbench/clusters/lab/n2")
PEERS = ("198.18.0.11", "198.18.0.12", "198.18.0.13")


def node(settings: MariaDBSettings | None = None, d: Path = DIR) -> NodeConfig:
    return NodeConfig(
        cluster_name="lab",
        index=2,
        address="198.18.0.12",
        peers=PEERS,
        dir=d,
        settings=settings or MariaDBSettings(),
    )


GOLDEN_MY_CNF = """\
# Rendered by clusterbench for node n2 of cluster lab. Do not edit:
# `clusterbench up` rewrites it.
[mysqld]
# Never root: rsync SST drops to nobody and fails when mariadbd runs as root (RECIPES G1).
user=mysql
datadir=/var/lib/clusterbench/clusters/lab/n2/data
tmpdir=/var/lib/clusterbench/clusters/lab/n2/tmp
socket=/var/lib/clusterbench/clusters/lab/n2/mysqld.sock
pid-file=/var/lib/clusterbench/clusters/lab/n2/mysqld.pid
log-error=/var/lib/clusterbench/clusters/lab/n2/error.log
bind-address=198.18.0.12
port=3306
skip-name-resolve
default_storage_engine=InnoDB
innodb_buffer_pool_size=64M
innodb_log_file_size=32M
innodb_flush_log_at_trx_commit=2
innodb_autoinc_lock_mode=2
binlog_format=ROW
max_connections=300
performance_schema=OFF
wsrep_on=ON
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=lab
wsrep_cluster_address=gcomm://198.18.0.11:4567,198.18.0.12:4567,198.18.0.13:4567
wsrep_node_address=198.18.0.12
wsrep_node_name=n2
wsrep_provider_options="gmcast.listen_addr=tcp://198.18.0.12:4567;ist.recv_addr=198.18.0.12:4568;\
gcache.size=64M;evs.keepalive_period=PT1S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT5S;\
evs.inactive_timeout=PT15S"
wsrep_sst_receive_address=198.18.0.12:4444
wsrep_sst_method=rsync
wsrep_slave_threads=2

[client]
socket=/var/lib/clusterbench/clusters/lab/n2/mysqld.sock
"""


def test_my_cnf_golden_defaults() -> None:
    assert render_my_cnf(node()) == GOLDEN_MY_CNF


def test_my_cnf_never_root_and_no_sst_auth_for_rsync() -> None:
    text = render_my_cnf(node())
    assert "\nuser=mysql\n" in text
    assert "user=root" not in text
    assert "wsrep_sst_auth" not in text


def test_provider_options_fast_detection() -> None:
    s = MariaDBSettings(
        evs_suspect_timeout=1.5,
        evs_inactive_timeout=3,
        evs_keepalive_period=0.3,
        evs_inactive_check_period=0.25,
        gcache_size="256M",
    )
    assert provider_options(s, "10.0.0.11") == (
        "gmcast.listen_addr=tcp://10.0.0.11:4567;ist.recv_addr=10.0.0.11:4568;gcache.size=256M;"
        "evs.keepalive_period=PT0.3S;evs.inactive_check_period=PT0.25S;"
        "evs.suspect_timeout=PT1.5S;evs.inactive_timeout=PT3S"
    )


def test_my_cnf_mariabackup_and_extra_settings_sorted() -> None:
    s = MariaDBSettings(
        sst_method="mariabackup",
        innodb_buffer_pool_size="1G",
        innodb_flush_log_at_trx_commit=1,
        wsrep_slave_threads=8,
        max_connections=1000,
        extra={
            "wsrep_debug": True,
            "sync_binlog": 0,
            "log_warnings": False,
            "character_set_server": "utf8mb4",
            "long_query_time": 0.5,
        },
    )
    text = render_my_cnf(node(s, Path("/x")))
    tail = text[text.index("wsrep_sst_receive_address") :]
    assert tail == (
        "wsrep_sst_receive_address=198.18.0.12:4444\n"
        "wsrep_sst_method=mariabackup\n"
        "# mariadbd runs as mysql, so the donor's backup connects as mysql@localhost over unix_socket"
        " (RECIPES G5).\n"
        "wsrep_sst_auth=mysql:\n"
        "wsrep_slave_threads=8\n"
        "character_set_server=utf8mb4\n"
        "log_warnings=OFF\n"
        "long_query_time=0.5\n"
        "sync_binlog=0\n"
        "wsrep_debug=ON\n"
        "\n"
        "[client]\n"
        "socket=/x/mysqld.sock\n"
    )
    assert "\ninnodb_buffer_pool_size=1G\n" in text
    assert "\ninnodb_flush_log_at_trx_commit=1\n" in text
    assert "\nmax_connections=1000\n" in text


def test_server_tls_keeps_the_state_transfer_plain() -> None:
    # With the TLS files in [mysqld], wsrep_sst_rsync would otherwise demand stunnel (seen: the
    # joiner died with "ssl-mode is set to 'VERIFY_CA', but the 'stunnel' binary was not found").
    tls = {"ssl_ca": "/c/ca.pem", "ssl_cert": "/c/server-cert.pem", "ssl_key": "/c/server-key.pem"}
    text = render_my_cnf(node(MariaDBSettings(extra=tls), Path("/x")))
    sst = text[text.index("[sst]") : text.index("[client]")]
    assert sst.splitlines()[0] == "[sst]" and "ssl-mode=DISABLED" in sst.splitlines()
    assert text.index("ssl_key=/c/server-key.pem") < text.index("[sst]")
    assert "[sst]" not in render_my_cnf(node(MariaDBSettings(extra={"sync_binlog": 0}), Path("/x")))


def test_single_node_peer_list() -> None:
    cfg = NodeConfig("solo", 1, "198.18.3.11", ("198.18.3.11",), Path("/d"), MariaDBSettings())
    text = render_my_cnf(cfg)
    assert "\nwsrep_cluster_address=gcomm://198.18.3.11:4567\n" in text
    assert "\nwsrep_cluster_name=solo\n" in text
    assert "\nwsrep_node_name=n1\n" in text


def test_node_config_paths() -> None:
    cfg = node()
    assert cfg.node_name == "n2"
    assert cfg.cnf_path == DIR / "my.cnf"
    assert cfg.socket == DIR / "mysqld.sock"
    assert cfg.datadir == DIR / "data"
    assert cfg.error_log == DIR / "error.log"
    assert cfg.mon_cnf == DIR / "mon.cnf"
    assert cfg.health_script == DIR / "clustercheck.sh"


# ---------------------------------------------------------------- clustercheck


def test_clustercheck_checks_state_primary_and_ready() -> None:
    text = render_clustercheck(node())
    assert text.startswith("#!/bin/sh\n")
    assert (
        "out=$(/usr/bin/mariadb --defaults-extra-file=/var/lib/clusterbench/clusters/lab/n2/mon.cnf "
        "--skip-ssl --connect-timeout=1 -N -B -e \\\n"
    ) in text
    assert "SET SESSION wsrep_sync_wait=0; SHOW GLOBAL STATUS WHERE Variable_name IN " in text
    assert "('wsrep_local_state','wsrep_cluster_status','wsrep_ready')" in text
    assert 'if [ "$state" = "4" ] && [ "$status" = "Primary" ] && [ "$ready" = "ON" ]; then\n' in text
    assert '  code="200 OK"; body="synced"\n' in text
    assert '  code="503 Service Unavailable"; body="not ready: ' in text
    # Jinja must not have eaten the shell's string length.
    assert "$((${#body}+2))" in text
    assert text.endswith('  "$code" $((${#body}+2)) "$body"\n')
    assert "{{" not in text and "{%" not in text


FAKE_CLIENT = """#!/bin/sh
# Stands in for the mariadb client: prints canned `-N -B` rows, or fails like a dead server.
[ -n "$FAKE_FAIL" ] && exit 1
printf 'wsrep_cluster_status\\t%s\\nwsrep_local_state\\t%s\\nwsrep_ready\\t%s\\n' \
  "$FAKE_STATUS" "$FAKE_STATE" "$FAKE_READY"
"""


def _run_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> str:
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("no /bin/sh")
    client = tmp_path / "fake-mariadb"
    client.write_text(FAKE_CLIENT)
    client.chmod(0o755)
    monkeypatch.setattr(config, "MARIADB_CLIENT", str(client))
    script = tmp_path / "clustercheck.sh"
    script.write_text(render_clustercheck(node(d=tmp_path)))
    # bytes, not text: text mode would turn the protocol's CRLF into LF
    cp = subprocess.run([sh, str(script)], capture_output=True, env=env, timeout=10)
    assert cp.returncode == 0
    return cp.stdout.decode()


def test_clustercheck_script_answers_200_when_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run_check(tmp_path, monkeypatch, {"FAKE_STATE": "4", "FAKE_STATUS": "Primary", "FAKE_READY": "ON"})
    assert out == (
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
        "Content-Length: 8\r\n\r\nsynced\r\n"
    )


@pytest.mark.parametrize(
    ("state", "status", "ready"),
    [("2", "Primary", "ON"), ("4", "non-Primary", "ON"), ("4", "Primary", "OFF"), ("1", "Primary", "OFF")],
)
def test_clustercheck_script_answers_503_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str, status: str, ready: str
) -> None:
    out = _run_check(tmp_path, monkeypatch, {"FAKE_STATE": state, "FAKE_STATUS": status, "FAKE_READY": ready})
    body = f"not ready: state={state} status={status} ready={ready}"
    assert out == (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
        f"Content-Length: {len(body) + 2}\r\n\r\n{body}\r\n"
    )


def test_clustercheck_script_when_server_is_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run_check(tmp_path, monkeypatch, {"FAKE_FAIL": "1"})
    body = "not ready: state=down status=down ready=down"
    assert out.endswith(f"Content-Length: {len(body) + 2}\r\n\r\n{body}\r\n")
    assert out.startswith("HTTP/1.1 503 Service Unavailable\r\n")


# ---------------------------------------------------------------- client option files


def test_client_cnf() -> None:
    assert render_client_cnf("cbmon", "s3cr3t-_x", Path("/d/n1/mysqld.sock")) == (
        '[client]\nuser=cbmon\npassword="s3cr3t-_x"\nsocket=/d/n1/mysqld.sock\n'
    )


@pytest.mark.parametrize(
    ("password", "line"),
    [
        ("ab#cd", 'password="ab#cd"'),  # unquoted, MariaDB reads 'ab' ('#' starts a comment)
        ('a"b', 'password="a\\"b"'),
        ("a\\b", 'password="a\\\\b"'),
        (" pad ", 'password=" pad "'),  # unquoted, the spaces would be stripped
    ],
)
def test_client_cnf_quotes_password(password: str, line: str) -> None:
    # Checked against `my_print_defaults`: each quoted line reads back as the original password.
    assert render_client_cnf("u", password, Path("/s")) == f"[client]\nuser=u\n{line}\nsocket=/s\n"
