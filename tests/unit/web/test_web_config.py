"""components/web/config.py: nginx.conf, php-fpm.conf and app.json rendered from the settings,
the pool sized from the node's CPUs, and both servers' own configuration tests when installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterbench.components.web.config import (
    APP_FILES,
    PAGES,
    WebDatabase,
    WebNodeConfig,
    app_source,
    render_app_config,
    render_fpm_conf,
    render_nginx_conf,
    spare_servers,
)
from clusterbench.spec.web import FpmSettings, WebSettings

DB = WebDatabase(host="198.18.0.3", port=3306, user="sbtest", password='p"w#1\\', schema="sbtest")
DIR = Path("/var/lib/clusterbench/clusters/lab/w2")


def cfg(
    dir: Path = DIR, cpus: float | None = None, machine: int = 2, address: str = "198.18.0.22", **web: object
) -> WebNodeConfig:
    settings = WebSettings.model_validate({"nodes": 2, **web})
    return WebNodeConfig("lab", 2, address, dir, settings, DB, cpus=cpus, machine_cpus=machine)


def lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines()]


def test_pool_size_follows_the_nodes_cpus_unless_fixed() -> None:
    assert cfg().children == 8  # 4 per CPU x the machine's 2
    assert cfg(cpus=0.5).children == 2
    assert cfg(cpus=0.25).children == 2  # never fewer than MIN_CHILDREN
    assert cfg(cpus=3).children == 12
    assert cfg(cpus=1, fpm={"children_per_cpu": 10}).children == 10
    assert cfg(cpus=1, fpm={"max_children": 5}).children == 5
    assert FpmSettings().children(None, 4) == 16
    assert cfg(cpus=0.5).nginx_workers == 1
    assert cfg().nginx_workers == 2
    assert cfg(nginx_workers=3).nginx_workers == 3


def test_dynamic_pools_keep_spares_between_a_quarter_and_a_half() -> None:
    assert spare_servers(8) == (2, 2, 4)
    assert spare_servers(2) == (1, 1, 2)
    assert spare_servers(1) == (1, 1, 1)


def test_fpm_conf_static_pool_with_its_own_paths() -> None:
    text = lines(render_fpm_conf(cfg()))
    for want in (
        f"pid = {DIR}/php-fpm.pid", f"error_log = {DIR}/php-fpm.log", "daemonize = no", "[web]",
        "user = www-data", f"listen = {DIR}/php-fpm.sock", "listen.owner = www-data", "listen.mode = 0660",
        "listen.backlog = 511", "pm = static", "pm.max_children = 8", "pm.max_requests = 0",
        "pm.status_path = /fpm-status", "ping.path = /fpm-ping", "request_terminate_timeout = 30s",
        "clear_env = yes", f"env[CB_WEB_CONFIG] = {DIR}/app.json",
        f"php_admin_value[error_log] = {DIR}/php-errors.log",
    ):  # fmt: skip
        assert want in text, want
    assert not any(ln.startswith("pm.start_servers") for ln in text)


def test_fpm_conf_dynamic_and_ondemand() -> None:
    dyn = lines(render_fpm_conf(cfg(fpm={"pm": "dynamic", "max_children": 8, "request_timeout": 2.5})))
    assert [
        ln for ln in dyn if "spare" in ln or "start_servers" in ln
    ] == ["pm.start_servers = 2", "pm.min_spare_servers = 2", "pm.max_spare_servers = 4"]
    assert "request_terminate_timeout = 3s" in dyn
    od = lines(render_fpm_conf(cfg(fpm={"pm": "ondemand"})))
    assert "pm.process_idle_timeout = 10s" in od


def test_fpm_conf_refuses_a_socket_path_that_does_not_fit() -> None:
    with pytest.raises(ValueError, match="at most 107 bytes"):
        render_fpm_conf(cfg(dir=Path("/" + "d" * 100)))


def test_nginx_conf_serves_the_pages_and_nothing_else() -> None:
    text = render_nginx_conf(cfg(port=8080))
    ls = lines(text)
    for want in (
        "user www-data;", "worker_processes 2;", "daemon off;", f"pid {DIR}/nginx.pid;",
        f"error_log {DIR}/nginx-error.log warn;", "access_log off;", f"client_body_temp_path {DIR}/tmp/body;",
        f"fastcgi_temp_path {DIR}/tmp/fastcgi;", "listen 198.18.0.22:8080 default_server backlog=511;",
        f"root {DIR}/app;", "fastcgi_read_timeout 35s;", "stub_status;", "allow 198.18.0.22;", "deny all;",
    ):  # fmt: skip
        assert want in ls, want
    for path, script in PAGES.items():
        block = text.split(f"location = {path} {{", 1)[1].split("}", 1)[0]
        assert f"fastcgi_param SCRIPT_FILENAME $document_root/{script};" in block
        # every location carries the whole parameter set (nginx inherits none into a level that sets one)
        assert "fastcgi_param REQUEST_METHOD $request_method;" in block
        assert "fastcgi_param QUERY_STRING $query_string;" in block
        assert f"fastcgi_pass unix:{DIR}/php-fpm.sock;" in block
    assert "location / {" in text and "return 404" in text.split("location / {", 1)[1]


def test_app_config_holds_the_database_and_nothing_of_the_request() -> None:
    app = {"db_connect_timeout": 3, "persistent": True, "mixed_reads": 2}
    data = json.loads(render_app_config(cfg(app=app)))
    assert data == {
        "node": "w2", "mixed_reads": 2,
        "db": {"host": "198.18.0.3", "port": 3306, "user": "sbtest", "password": 'p"w#1\\',
               "schema": "sbtest", "connect_timeout": 3, "timeout": 10, "persistent": True},
    }  # fmt: skip
    assert "p\"w" not in repr(DB)  # the password stays out of logs


def test_app_files_ship_with_the_package() -> None:
    assert APP_FILES == ("common.php", "read.php", "write.php", "mixed.php", "health.php")
    for name in APP_FILES:
        assert app_source(name).startswith("<?php")
    assert "getenv('CB_WEB_CONFIG')" in app_source("common.php")
    assert "commit()" in app_source("common.php")
    with pytest.raises(ValueError, match="not a file of the web application"):
        app_source("../config.py")


@pytest.mark.skipif(shutil.which("php8.2") is None, reason="php8.2-cli is not installed")
def test_php_files_parse(tmp_path: Path) -> None:
    for name in APP_FILES:
        f = tmp_path / name
        f.write_text(app_source(name))
        res = subprocess.run(["php8.2", "-l", str(f)], capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stdout + res.stderr


def _write(tmp_path: Path, c: WebNodeConfig) -> None:
    (c.dir / "app").mkdir(parents=True)
    (c.dir / "tmp").mkdir()
    c.nginx_conf.write_text(render_nginx_conf(c))
    c.fpm_conf.write_text(render_fpm_conf(c))


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed")
def test_nginx_accepts_the_rendered_conf(tmp_path: Path) -> None:
    # nginx -t binds its listening address: loopback here (a web node tests inside its namespace)
    c = cfg(dir=tmp_path / "w2", address="127.0.0.1", port=18099)
    _write(tmp_path, c)
    argv = ["nginx", "-t", "-q", "-c", str(c.nginx_conf), "-p", f"{c.dir}/", "-e", str(c.nginx_log)]
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr


@pytest.mark.skipif(shutil.which("php-fpm8.2") is None, reason="php8.2-fpm is not installed")
@pytest.mark.parametrize("pm", ["static", "dynamic", "ondemand"])
def test_php_fpm_accepts_the_rendered_conf(tmp_path: Path, pm: str) -> None:
    c = cfg(dir=tmp_path / "w2", fpm={"pm": pm})
    _write(tmp_path, c)
    res = subprocess.run(["php-fpm8.2", "--test", "--fpm-config", str(c.fpm_conf)], capture_output=True,
                         text=True, check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
